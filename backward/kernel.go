package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Helpers of the gradient ops' kernels registered in this package (the
// same as package forward's).

// floatKernels returns the kernel map of an op implemented for float32 and
// float64 by one generic kernel.
func floatKernels(k32, k64 registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64}
}

// args builds an []registry.Arg from names.
func args(names ...string) []registry.Arg {
	out := make([]registry.Arg, len(names))
	for i, n := range names {
		out[i] = registry.Arg{Name: n}
	}
	return out
}

// like allocates an uninitialised output of x's dtype and shape.
func like(kc *registry.KernelCtx, x *tensor.Dense) (*tensor.Dense, error) {
	return kc.Output(x.Dtype(), x.Shape()...)
}

// data returns the backing slice of a tensor whose dtype was checked by
// kernel dispatch (it panics on a mismatch, which Run reports as an
// internal error).
func data[T tensorx.Elem](d *tensor.Dense) []T { return tensorx.MustSlice[T](d) }
