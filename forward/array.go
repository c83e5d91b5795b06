package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Array ops the tape itself relies on: Identity, StopGradient, ZerosLike,
// OnesLike, AddN.

func init() {
	all := func(k registry.Kernel) map[tensor.Dtype]registry.Kernel {
		return map[tensor.Dtype]registry.Kernel{tensor.Float32: k, tensor.Float64: k, tensor.Int32: k, tensor.Int64: k, tensor.Bool: k}
	}
	registry.MustRegister(&registry.OpDef{Name: "Identity", Doc: "y = x (a copy)",
		Inputs: args("input"), Outputs: args("output"), Kernels: all(copyKernel), Samples: identitySamples})
	registry.MustRegister(&registry.OpDef{Name: "StopGradient", Doc: "y = x, and no gradient flows back through it",
		Inputs: args("input"), Outputs: args("output"), Kernels: all(copyKernel)})
	registry.MustRegister(&registry.OpDef{Name: "ZerosLike", Doc: "zeros of x's shape and dtype",
		Inputs: args("x"), Outputs: args("y"), Kernels: all(fillLike(0))})
	registry.MustRegister(&registry.OpDef{Name: "OnesLike", Doc: "ones of x's shape and dtype",
		Inputs: args("x"), Outputs: args("y"), Kernels: all(fillLike(1))})
	registry.MustRegister(&registry.OpDef{Name: "AddN", Doc: "elementwise sum of one or more tensors of equal shape and dtype",
		Inputs: []registry.Arg{{Name: "inputs", Variadic: true}}, Outputs: args("sum"),
		Kernels: floatKernels(addN[float32], addN[float64]), Samples: addNSamples})
}

func identitySamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "scalar", Inputs: []*tensor.Dense{SampleNormal(r)}},
		{Name: "2x3", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3)}},
		{Name: "empty", Inputs: []*tensor.Dense{SampleNormal(r, 0, 3)}},
	}
}

func addNSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "one", Inputs: []*tensor.Dense{SampleNormal(r, 3)}},
		{Name: "three-2x2", Inputs: []*tensor.Dense{SampleNormal(r, 2, 2), SampleNormal(r, 2, 2), SampleNormal(r, 2, 2)}},
		{Name: "scalars", Inputs: []*tensor.Dense{SampleNormal(r), SampleNormal(r)}},
	}
}

func copyKernel(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	out, err := like(kc, in[0])
	if err != nil {
		return nil, err
	}
	tensorx.CopyData(out, in[0])
	return kc.Results(out), nil
}

func fillLike(v int) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		if v == 0 {
			out, err := kc.Zeros(in[0].Dtype(), in[0].Shape()...)
			if err != nil {
				return nil, err
			}
			return kc.Results(out), nil
		}
		out, err := like(kc, in[0])
		if err != nil {
			return nil, err
		}
		switch out.Dtype() {
		case tensor.Float32:
			fill(out.Float32s(), 1)
		case tensor.Float64:
			fill(out.Float64s(), 1)
		case tensor.Int32:
			fill(out.Int32s(), 1)
		case tensor.Int64:
			fill(out.Int64s(), 1)
		case tensor.Bool:
			fill(out.Bools(), true)
		}
		return kc.Results(out), nil
	}
}

func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}

func addN[T tensorx.Float](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	if err := sameDtype("AddN", in[0].Dtype(), in); err != nil {
		return nil, err
	}
	for i, t := range in[1:] {
		if !tensorx.SameShape(t.Shape(), in[0].Shape()) {
			return nil, registry.InputErrorf(registry.ErrShape, i+1, "AddN: input %d has shape %v, expected %v like input 0 (AddN does not broadcast)", i+1, t.Shape(), in[0].Shape())
		}
	}
	out, err := like(kc, in[0])
	if err != nil {
		return nil, err
	}
	dst := data[T](out)
	copy(dst, data[T](in[0]))
	for _, t := range in[1:] {
		for i, v := range data[T](t) {
			dst[i] += v
		}
	}
	return kc.Results(out), nil
}
