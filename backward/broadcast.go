package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// sumToShape reduces g, the gradient of a broadcasting op's output, to the
// shape of an input that was broadcast to it (TensorFlow's
// reshape(reduce_sum(grad, rx), sx) with rx from BroadcastGradientArgs):
// it sums over the leading axes the input lacks and over the axes where the
// input has size 1 and g does not, then reshapes to shape. It applies only
// registered ops (Sum with keep_dims false, Reshape), so the result can be
// differentiated again. g is returned unchanged if it already has the
// shape; nil stays nil.
func sumToShape(e registry.Emitter, g registry.Value, shape []int) registry.Value {
	if g == nil {
		return nil
	}
	gs := g.Shape()
	if bcSameShape(gs, shape) {
		return g
	}
	lead := len(gs) - len(shape)
	var axes, kept []int
	for i, d := range gs {
		switch {
		case i < lead:
			axes = append(axes, i)
		case lead >= 0 && shape[i-lead] == 1 && d != 1:
			axes = append(axes, i)
		default:
			kept = append(kept, d)
		}
	}
	s := g
	if len(axes) > 0 {
		// sumAttrs: Sum's defaults (keep_dims false).
		s = forward.Sum(e, sumAttrs, g, e.Ints(axes...))
		if bcSameShape(kept, shape) {
			return s
		}
	}
	return forward.Reshape(e, s, e.Ints(shape...))
}

// bcSameShape reports whether two shapes are equal.
func bcSameShape[A, B ~[]int](a A, b B) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
