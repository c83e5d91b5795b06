package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/registry"
)

// FractionalMaxPool (docs/spec/fractional_avg_pool.md): max pooling over a
// random grid of cells, with the family's attrs, sequence drawing and
// checks of fractional_pool_seq.go. Its gradient op FractionalMaxPoolGrad
// is registered in package backward.

// fpMaxName is the op name of FractionalMaxPool.
const fpMaxName = "FractionalMaxPool"

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: fpMaxName,
		Doc: "max pooling over a random grid of cells (NHWC); also returns the int64 row and column pooling sequences, " +
			"drawn with TensorFlow's Philox sequence for the same seeds",
		Inputs: args("value"), Outputs: args("output", "row_pooling_sequence", "col_pooling_sequence"),
		Attrs:   FractionalPoolAttrs{},
		Kernels: fpKernels(fpMaxKernel[float32], fpMaxKernel[float64], fpMaxKernel[int32], fpMaxKernel[int64]),
		Samples: fpMaxSamples,
	})
}

// fpMaxKernel is the kernel of FractionalMaxPool.
func fpMaxKernel[T fracpool.Num](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fpForwardKernel[T](kc, fpMaxName, "max", true, attrs, in)
}
