package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// grad is the common signature shorthand.
type grad = registry.GradFunc

// op1 applies op and returns its first output.
func op1(e registry.Emitter, op string, attrs any, in ...registry.Value) registry.Value {
	return e.Apply(op, attrs, in...)[0]
}

// shapeOf returns a value's shape as []int (a copy).
func shapeOf(v registry.Value) []int {
	return append([]int(nil), v.Shape()...)
}

// isFloat reports whether dt is a floating dtype (the only ones with
// gradients).
func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// only returns a gradient slice of length n with g at index i.
func only(n, i int, g registry.Value) []registry.Value {
	out := make([]registry.Value, n)
	out[i] = g
	return out
}
