package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of Sum and Mean, as TensorFlow's math_grad.py: the upstream
// gradient is reshaped to the keep-dims shape of the output (the reduced
// dimensions as 1s) and broadcast back to the input's shape; Mean's is
// divided by the number of elements averaged. The axes are data, so the
// keep-dims shape is computed by the tapegrad.ReducedShape op (TensorFlow's
// Python reduced_shape) unless the shapes alone determine it.

func init() {
	registry.MustSetGradient(forward.OpSum, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(0) {
			return e.Values(2), nil
		}
		return only(e, 2, 0, redBroadcastBack(e, n, dy[0])), nil
	})
	registry.MustSetGradient(forward.OpMean, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(0) {
			return e.Values(2), nil
		}
		x, y := n.Inputs()[0], n.Outputs()[0]
		// factor = |x| / max(|y|, 1), TensorFlow's _safe_shape_div. It is
		// 0 only when x is empty; the gradient is empty then, and dividing
		// by 0 would only put NaN into gradients of the gradient.
		factor := redNumel(x.Shape()) / max(redNumel(y.Shape()), 1)
		g := dy[0]
		if factor > 1 {
			// Dividing before broadcasting gives the same values as
			// TensorFlow's division after it, on fewer elements.
			g = forward.RealDiv(e, g, e.Scalar(g.Dtype(), float64(factor)))
		}
		return only(e, 2, 0, redBroadcastBack(e, n, g)), nil
	})
	registry.MustNotDifferentiable(forward.OpReducedShape)
}

func redNumel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// redOnes returns n ones: a shared slice for the usual ranks (the caller
// only reads it; a fresh one for each Emitter.Ints call would cost an
// allocation).
func redOnes(n int) []int {
	if n <= len(allOnes) {
		return allOnes[:n:n]
	}
	ones := make([]int, n)
	for i := range ones {
		ones[i] = 1
	}
	return ones
}

var allOnes = [...]int{1, 1, 1, 1, 1, 1, 1, 1}

// redBroadcastBack takes g of the shape of a Sum/Mean node's output to the
// shape of its input: reshape to the keep-dims shape, then BroadcastTo.
func redBroadcastBack(e registry.Emitter, n registry.Node, g registry.Value) registry.Value {
	x, axes := n.Inputs()[0], n.Inputs()[1]
	xs := x.Shape()
	if gs := g.Shape(); len(gs) != len(xs) {
		// keep_dims was false and some dimensions were dropped.
		var ks registry.Value
		if len(gs) == 0 { // everything was reduced
			ks = e.Ints(redOnes(len(xs))...)
		} else {
			ks = forward.ReducedShape(e, e.Ints(xs...), axes)
		}
		g = forward.Reshape(e, g, ks)
	}
	if !bcSameShape(g.Shape(), xs) {
		g = forward.BroadcastTo(e, g, e.Ints(xs...))
	}
	return g
}
