package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of Abs, Sign, Maximum, Minimum, Pow, the comparisons, Select
// and SelectV2, as TensorFlow's math_grad.py registers them
// (docs/spec/cwise.md), built from registered ops only so that they can be
// differentiated again:
//
//   - Abs: dy·Sign(x) (0 at x = 0). Sign, the comparisons: not
//     differentiable (TensorFlow returns zeros for Sign, None for the
//     comparisons).
//   - Maximum (Minimum): mask = x >= y (x <= y); dx = where(mask, dy, 0),
//     dy_y = where(mask, 0, dy), each summed to its input's shape: a tie
//     sends the whole gradient to x.
//   - Pow: dx = dy·y·x^(y−1); dy_y = dy·z·log(x) where x > 0, and 0 where
//     x <= 0 (no real derivative there).
//   - Select: (none, where(c, dy, 0), where(c, 0, dy)); SelectV2 the same
//     with SelectV2 and the sums over broadcast dimensions.

func init() {
	registry.MustSetGradient(forward.OpAbs, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return forward.Mul(e, g, forward.Sign(e, n.Inputs()[0])) }), nil
	})
	registry.MustNotDifferentiable(forward.OpSign)
	for _, op := range []string{forward.OpGreater, forward.OpGreaterEqual, forward.OpLess, forward.OpLessEqual, forward.OpEqual, forward.OpNotEqual} {
		registry.MustNotDifferentiable(op)
	}
	registry.MustSetGradient(forward.OpMaximum, maxMinGrad(forward.GreaterEqual))
	registry.MustSetGradient(forward.OpMinimum, maxMinGrad(forward.LessEqual))
	registry.MustSetGradient(forward.OpPow, powGrad)
	registry.MustSetGradient(forward.OpSelect, selectGrad)
	registry.MustSetGradient(forward.OpSelectV2, selectV2Grad)
}

// maxMinGrad returns the gradient of Maximum (selector GreaterEqual) or
// Minimum (LessEqual).
func maxMinGrad(selector func(e registry.Emitter, x, y registry.Value) registry.Value) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil {
			return e.Values(2), nil
		}
		x, y := n.Inputs()[0], n.Inputs()[1]
		mask := selector(e, x, y)
		zero := e.Scalar(dy[0].Dtype(), 0)
		return binaryGrad(e, n, dy,
			func(g registry.Value) registry.Value { return forward.SelectV2(e, mask, g, zero) },
			func(g registry.Value) registry.Value { return forward.SelectV2(e, mask, zero, g) }), nil
	}
}

// powGrad: dx = dy·y·x^(y−1), dy_y = dy·z·where(x > 0, log(where(x > 0, x,
// 1)), 0), each summed to its input's shape.
func powGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x, y := n.Inputs()[0], n.Inputs()[1]
	z := n.Outputs()[0]
	dt := x.Dtype()
	return binaryGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			return forward.Mul(e, forward.Mul(e, g, y), forward.Pow(e, x, forward.Sub(e, y, e.Scalar(dt, 1))))
		},
		func(g registry.Value) registry.Value {
			mask := forward.Greater(e, x, e.Scalar(dt, 0))
			safe := forward.SelectV2(e, mask, x, e.Scalar(dt, 1))
			logx := forward.SelectV2(e, mask, forward.Log(e, safe), e.Scalar(dt, 0))
			return forward.Mul(e, forward.Mul(e, g, z), logx)
		}), nil
}

// selectGrad: Select(c, t, e) gives nothing for c, Select(c, dy, 0) for t
// and Select(c, 0, dy) for e (zeros of t's shape).
func selectGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	g := dy[0]
	if g == nil || !(n.NeedsGrad(1) || n.NeedsGrad(2)) {
		return out, nil
	}
	c := n.Inputs()[0]
	zeros := forward.ZerosLike(e, n.Inputs()[1])
	if n.NeedsGrad(1) {
		out[1] = forward.Select(e, c, g, zeros)
	}
	if n.NeedsGrad(2) {
		out[2] = forward.Select(e, c, zeros, g)
	}
	return out, nil
}

// selectV2Grad: SelectV2(c, t, e) gives nothing for c, SelectV2(c, dy, 0)
// summed to t's shape for t and SelectV2(c, 0, dy) summed to e's shape
// for e.
func selectV2Grad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	c := in[0]
	zero := e.Scalar(g.Dtype(), 0)
	if n.NeedsGrad(1) {
		out[1] = sumToShape(e, forward.SelectV2(e, c, g, zero), in[1].Shape())
	}
	if n.NeedsGrad(2) {
		out[2] = sumToShape(e, forward.SelectV2(e, c, zero, g), in[2].Shape())
	}
	return out, nil
}
