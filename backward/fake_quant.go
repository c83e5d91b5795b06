package backward

import (
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of the fake-quant family (spec/fake_quant.md §4).
//
// The forward ops get TensorFlow's registered gradients (array_ops.py): the
// straight-through estimator computed by the matching *Gradient op, which
// passes the upstream gradient where nudged_min <= x <= nudged_max and
// sums it per channel (or over the tensor) below / above the range into the
// min / max gradients.
//
// TensorFlow registers no gradient for the *Gradient ops. tapegrad does,
// so that gradients of gradients work:
//
//   - The gradient ops are linear in their `gradients` input. Their
//     gradient with respect to it is the adjoint of that linear map: the
//     upstream gradient of backprops_wrt_input masked to the range, plus
//     the upstream gradient of backprop_wrt_min (resp. _max) broadcast to
//     the elements below (resp. above) the range. No TensorFlow op
//     expresses it; it is the tapegrad op
//     tapegrad.FakeQuantWithMinMaxVars[PerChannel]GradientAdjoint, whose
//     own gradient (the adjoint of the adjoint) is the gradient op again.
//     FakeQuantWithMinMaxArgsGradient is self-adjoint.
//   - With respect to inputs, min and max the gradient ops (and the adjoint
//     ops) are piecewise constant: their derivative is zero almost
//     everywhere, as TensorFlow's straight-through view implies, and is
//     returned as ZerosLike.

func init() {
	registry.MustSetGradient("FakeQuantWithMinMaxArgs", fqArgsForwardGrad)
	registry.MustSetGradient("FakeQuantWithMinMaxVars", fqForwardGrad("FakeQuantWithMinMaxVarsGradient", false))
	registry.MustSetGradient("FakeQuantWithMinMaxVarsPerChannel", fqForwardGrad("FakeQuantWithMinMaxVarsPerChannelGradient", true))

	registry.MustSetGradient("FakeQuantWithMinMaxArgsGradient", fqArgsGradGrad)
	registry.MustSetGradient("FakeQuantWithMinMaxVarsGradient", fqGradOpGrad("tapegrad.FakeQuantWithMinMaxVarsGradientAdjoint"))
	registry.MustSetGradient("FakeQuantWithMinMaxVarsPerChannelGradient", fqGradOpGrad("tapegrad.FakeQuantWithMinMaxVarsPerChannelGradientAdjoint"))

	registry.MustSetGradient("tapegrad.FakeQuantWithMinMaxVarsGradientAdjoint", fqAdjointGrad("FakeQuantWithMinMaxVarsGradient"))
	registry.MustSetGradient("tapegrad.FakeQuantWithMinMaxVarsPerChannelGradientAdjoint", fqAdjointGrad("FakeQuantWithMinMaxVarsPerChannelGradient"))
}

// fqArgsForwardGrad: FakeQuantWithMinMaxArgsGradient(dy, inputs), same attrs.
func fqArgsForwardGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(1), nil
	}
	return vals(e, op1(e, "FakeQuantWithMinMaxArgsGradient", n.Attrs(), dy[0], n.Inputs()[0])), nil
}

// fqForwardGrad returns the gradient of FakeQuantWithMinMaxVars or
// ...PerChannel: gradOp(dy, inputs, min, max) gives the three gradients.
// TensorFlow's PerChannelGradient op accepts inputs of rank 1..4 only,
// while the forward accepts any rank >= 1; for rank > 4 the gradient is
// computed on the [rows, channels] view and reshaped back.
func fqForwardGrad(gradOp string, perChannel bool) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		out := e.Values(3)
		if dy[0] == nil || !(n.NeedsGrad(0) || n.NeedsGrad(1) || n.NeedsGrad(2)) {
			return out, nil
		}
		in := n.Inputs()
		g, x := dy[0], in[0]
		shape := x.Shape()
		flat := perChannel && len(shape) > 4
		if flat {
			d := shape[len(shape)-1]
			rows := 1
			for _, s := range shape[:len(shape)-1] {
				rows *= s
			}
			g = op1(e, "Reshape", nil, g, e.Ints(rows, d))
			x = op1(e, "Reshape", nil, x, e.Ints(rows, d))
		}
		res := e.Apply(gradOp, n.Attrs(), vals(e, g, x, in[1], in[2])...)
		if len(res) != 3 {
			return nil, fqApplyErr(e, gradOp, len(res))
		}
		for i := range out {
			if n.NeedsGrad(i) {
				out[i] = res[i]
			}
		}
		if flat && out[0] != nil {
			out[0] = op1(e, "Reshape", nil, out[0], e.Ints(shape...))
		}
		return out, nil
	}
}

// fqApplyErr is the error of an Apply that did not return the gradient
// op's three outputs: the emitter's error if it failed.
func fqApplyErr(e registry.Emitter, op string, n int) error {
	if err := e.Err(); err != nil {
		return err
	}
	return registry.Errorf(registry.ErrInternal, "%s returned %d outputs, want 3", op, n)
}

// fqZerosFor returns ZerosLike(in[i]) for every i >= from that needs a
// gradient: the gradient ops are piecewise constant in inputs, min and max.
func fqZerosFor(e registry.Emitter, n registry.Node, out []registry.Value, from int) {
	in := n.Inputs()
	for i := from; i < len(in); i++ {
		if n.NeedsGrad(i) {
			out[i] = op1(e, "ZerosLike", nil, in[i])
		}
	}
}

// fqArgsGradGrad is the gradient of FakeQuantWithMinMaxArgsGradient
// (gradients, inputs): the map gradients ↦ gradients·mask is self-adjoint,
// so the gradient w.r.t. gradients is the op applied to the upstream
// gradient; w.r.t. inputs it is zero.
func fqArgsGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(2)
	if dy[0] == nil {
		return out, nil
	}
	if n.NeedsGrad(0) {
		out[0] = op1(e, "FakeQuantWithMinMaxArgsGradient", n.Attrs(), dy[0], n.Inputs()[1])
	}
	fqZerosFor(e, n, out, 1)
	return out, nil
}

// fqGradOpGrad returns the gradient of FakeQuantWithMinMaxVars[PerChannel]
// Gradient(gradients, inputs, min, max) → (backprops_wrt_input,
// backprop_wrt_min, backprop_wrt_max): the adjoint op applied to the three
// upstream gradients (zeros for those that get none) for gradients, zeros
// for inputs, min and max.
func fqGradOpGrad(adjOp string) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		out := e.Values(4)
		if dy[0] == nil && dy[1] == nil && dy[2] == nil {
			return out, nil
		}
		in := n.Inputs()
		if n.NeedsGrad(0) {
			u := e.Values(3)
			like := []registry.Value{in[1], in[2], in[2]} // shapes of the three outputs
			for i := range u {
				u[i] = dy[i]
				if u[i] == nil {
					u[i] = op1(e, "ZerosLike", nil, like[i])
				}
			}
			out[0] = op1(e, adjOp, n.Attrs(), u[0], u[1], u[2], in[1], in[2], in[3])
		}
		fqZerosFor(e, n, out, 1)
		return out, nil
	}
}

// fqAdjointGrad returns the gradient of a tapegrad adjoint op
// (d_backprops, d_min, d_max, inputs, min, max) → d_gradients: the adjoint
// of the adjoint, i.e. the gradient op applied to the upstream gradient,
// gives the gradients of d_backprops, d_min and d_max; inputs, min and max
// get zeros.
func fqAdjointGrad(gradOp string) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		out := e.Values(6)
		if dy[0] == nil {
			return out, nil
		}
		in := n.Inputs()
		if n.NeedsGrad(0) || n.NeedsGrad(1) || n.NeedsGrad(2) {
			res := e.Apply(gradOp, n.Attrs(), vals(e, dy[0], in[3], in[4], in[5])...)
			if len(res) != 3 {
				return nil, fqApplyErr(e, gradOp, len(res))
			}
			for i := 0; i < 3; i++ {
				if n.NeedsGrad(i) {
					out[i] = res[i]
				}
			}
		}
		fqZerosFor(e, n, out, 3)
		return out, nil
	}
}
