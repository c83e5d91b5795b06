package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/registry"
)

// FractionalAvgPool (docs/spec/fractional_avg_pool.md): average pooling over a
// random grid of cells, with the family's attrs, sequence drawing and
// checks of fractional_pool_seq.go. Its gradient op FractionalAvgPoolGrad
// is registered in package backward.

// fpAvgName is the op name of FractionalAvgPool.
const fpAvgName = "FractionalAvgPool"

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: fpAvgName,
		Doc: "average pooling over a random grid of cells (NHWC); also returns the int64 row and column pooling sequences " +
			"(cell boundaries), drawn with TensorFlow's Philox sequence for the same seeds",
		Inputs: args("value"), Outputs: args("output", "row_pooling_sequence", "col_pooling_sequence"),
		Attrs:   FractionalPoolAttrs{},
		Kernels: fpKernels(fpAvgKernel[float32], fpAvgKernel[float64], fpAvgKernel[int32], fpAvgKernel[int64]),
		Samples: fpAvgSamples,
	})
}

// fpAvgKernel is the kernel of FractionalAvgPool.
func fpAvgKernel[T fracpool.Num](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return fpForwardKernel[T](kc, fpAvgName, "average", false, attrs, in)
}
