package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"

	"github.com/tapegrad/tapegrad/registry"
)

// grad is the common signature shorthand.
type grad = registry.GradFunc

// op1 applies op and returns its first output.
func op1(e registry.Emitter, op string, attrs any, in ...registry.Value) registry.Value {
	return e.Apply(op, attrs, vals(e, in...)...)[0]
}

// keepDims is Sum's and Mean's attrs with keep_dims, boxed once (a struct
// literal passed as attrs costs an allocation per call).
var keepDims any = forward.SumAttrs{KeepDims: true}

// vals returns xs in a slice of the emitter's (Emitter.Values): for a
// gradient function's result, or an op's argument list. Handing the
// caller's own variadic list to the Emitter interface would move it to
// the heap; copying it lets it stay on the caller's stack.
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
