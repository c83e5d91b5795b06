package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of the shape ops, as TensorFlow registers them in
// array_grad.py: Reshape reshapes the upstream gradient back to the
// input's shape, Transpose transposes it by the inverse permutation, Fill
// sums it into the value. The integer shape/perm/dims inputs get none.

func init() {
	registry.MustSetGradient(forward.OpReshape, shpReshapeGrad)
	registry.MustSetGradient(forward.OpTranspose, shpTransposeGrad)
	registry.MustSetGradient(forward.OpFill, shpFillGrad)
	registry.MustNotDifferentiable(forward.OpInvertPermutation)
}

func shpReshapeGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(2), nil
	}
	x := n.Inputs()[0]
	return only(e, 2, 0, forward.Reshape(e, dy[0], e.Ints(x.Shape()...))), nil
}

func shpTransposeGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(2), nil
	}
	// The permutation is data, which gradient code never reads: its
	// inverse is computed by an op, as TensorFlow does.
	inv := forward.InvertPermutation(e, n.Inputs()[1])
	return only(e, 2, 0, forward.Transpose(e, dy[0], inv)), nil
}

func shpFillGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(1) {
		return e.Values(2), nil
	}
	g := dy[0]
	if r := len(g.Shape()); r > 0 {
		axes := make([]int, r)
		for i := range axes {
			axes[i] = i
		}
		g = forward.Sum(e, sumAttrs, g, e.Ints(axes...))
	}
	// TensorFlow also accepts a one-element vector as the value.
	if v := n.Inputs()[1]; len(v.Shape()) != 0 {
		g = forward.Reshape(e, g, e.Ints(v.Shape()...))
	}
	return only(e, 2, 1, g), nil
}
