package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// grad is the common signature shorthand.
type grad = registry.GradFunc

// vals returns xs in a slice of the emitter's (Emitter.Values), for a
// gradient function's result: returning the caller's own variadic list
// would move it to the heap; copying it lets it stay on the caller's
// stack.
func vals(e registry.Emitter, xs ...registry.Value) []registry.Value {
	out := e.Values(len(xs))
	copy(out, xs)
	return out
}

// isFloat reports whether dt is a floating dtype (the only ones with
// gradients).
func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// only returns a gradient slice of length n with g at index i.
func only(e registry.Emitter, n, i int, g registry.Value) []registry.Value {
	out := e.Values(n)
	out[i] = g
	return out
}
