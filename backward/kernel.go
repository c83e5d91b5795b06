package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Helpers of the gradient kernels registered in this package (the same as
// package forward's for its kernels).

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

// sameDtype checks that every input has dtype dt.
func sameDtype(op string, dt tensor.Dtype, in []*tensor.Dense) error {
	for i, t := range in {
		if t.Dtype() != dt {
			return registry.InputErrorf(registry.ErrDtype, i, "%s: input %d has dtype %v, expected %v like input 0", op, i, t.Dtype(), dt)
		}
	}
	return nil
}

// data returns the backing slice of a tensor whose dtype was checked by
// kernel dispatch (it panics on a mismatch, which Run reports as an
// internal error).
func data[T tensorx.Elem](d *tensor.Dense) []T { return tensorx.MustSlice[T](d) }

// serial reports whether parallel.For(threads, n, grain, fn) would run fn
// on the caller's goroutine alone (one thread, or a single chunk). Hot
// kernels test it and call their loop directly: a closure handed to
// parallel.For escapes to the heap, an allocation per op even when the
// loop then runs serially.
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }
