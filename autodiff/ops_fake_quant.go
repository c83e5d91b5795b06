package autodiff

import (
	"github.com/tapegrad/tapegrad/backward"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the fake-quantisation family (TensorFlow's
// FakeQuantWithMinMaxArgs, FakeQuantWithMinMaxVars,
// FakeQuantWithMinMaxVarsPerChannel and their *Gradient ops). The forward
// functions are differentiable with TensorFlow's straight-through
// gradient: the upstream gradient passes where nudged_min <= x <=
// nudged_max, and the parts below / above the range are summed into the
// min / max gradients. The gradient functions are differentiable too
// (linear in the upstream gradient), so gradients of any order work.
//
// float32 is TensorFlow's dtype and is bit-exact with it; float64 runs
// the same algorithm in float64 arithmetic. See package forward for the
// attrs (num_bits 2..16, default 8; narrow_range).

// fqGrad applies one of the three-output gradient builders.
func fqGrad(b func(registry.Emitter, registry.Attrs[forward.FakeQuantAttrs], registry.Value, registry.Value, registry.Value, registry.Value) []registry.Value,
	gradients, x, lo, hi Value, attrs forward.FakeQuantAttrs) (dx, dlo, dhi Value) {
	t := tapeOf(gradients, x, lo, hi)
	if t == nil {
		return Value{}, Value{}, Value{}
	}
	out := b(t.Emitter(), registry.NewAttrs(attrs), t.box(gradients), t.box(x), t.box(lo), t.box(hi))
	return ValueOf(out[0]), ValueOf(out[1]), ValueOf(out[2])
}

// fqVars applies one of the builders of the forward ops with min and max
// inputs.
func fqVars(b func(registry.Emitter, registry.Attrs[forward.FakeQuantAttrs], registry.Value, registry.Value, registry.Value) registry.Value,
	x, lo, hi Value, attrs forward.FakeQuantAttrs) Value {
	t := tapeOf(x, lo, hi)
	if t == nil {
		return Value{}
	}
	return ValueOf(b(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(lo), t.box(hi)))
}

// FakeQuantArgs applies FakeQuantWithMinMaxArgs: x (any shape) snapped to
// the num_bits grid of the attr range [Min, Max] (default [-6, 6]; Min <
// Max is required), nudged so that 0 is on the grid, and clamped to it.
func FakeQuantArgs(x Value, attrs forward.FakeQuantArgsAttrs) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.FakeQuantWithMinMaxArgs(t.Emitter(), registry.NewAttrs(attrs), t.box(x)))
}

// FakeQuantArgsGradient applies FakeQuantWithMinMaxArgsGradient: gradients
// where the nudged range of attrs contains x (bounds included), else 0.
// gradients and x have the same shape.
func FakeQuantArgsGradient(gradients, x Value, attrs forward.FakeQuantArgsAttrs) Value {
	t := tapeOf(gradients, x)
	if t == nil {
		return Value{}
	}
	return ValueOf(backward.FakeQuantWithMinMaxArgsGradient(t.Emitter(), registry.NewAttrs(attrs), t.box(gradients), t.box(x)))
}

// FakeQuantVars applies FakeQuantWithMinMaxVars: x (any shape) snapped to
// the num_bits grid of the range [lo, hi] given by two scalar values
// (TensorFlow's min and max inputs), nudged so that 0 is on the grid, and
// clamped to it; 0 everywhere if lo == hi == 0. Its gradient flows to x,
// lo and hi.
func FakeQuantVars(x, lo, hi Value, attrs forward.FakeQuantAttrs) Value {
	return fqVars(forward.FakeQuantWithMinMaxVars, x, lo, hi, attrs)
}

// FakeQuantVarsGradient applies FakeQuantWithMinMaxVarsGradient: the
// straight-through gradients of FakeQuantVars for the upstream gradients
// (shape of x): dx = gradients inside the nudged range, dlo and dhi the
// scalar sums of the gradients below and above it.
func FakeQuantVarsGradient(gradients, x, lo, hi Value, attrs forward.FakeQuantAttrs) (dx, dlo, dhi Value) {
	return fqGrad(backward.FakeQuantWithMinMaxVarsGradient, gradients, x, lo, hi, attrs)
}

// FakeQuantPerChannel applies FakeQuantWithMinMaxVarsPerChannel: x (rank
// >= 1) snapped, in each channel c of its last axis, to the num_bits grid
// of [lo[c], hi[c]] (TensorFlow's min and max inputs, both of shape
// [channels]), nudged so that 0 is on the grid, and clamped to it; 0 in
// channels with lo[c] == hi[c] == 0. Its gradient flows to x, lo and hi.
func FakeQuantPerChannel(x, lo, hi Value, attrs forward.FakeQuantAttrs) Value {
	return fqVars(forward.FakeQuantWithMinMaxVarsPerChannel, x, lo, hi, attrs)
}

// FakeQuantPerChannelGradient applies
// FakeQuantWithMinMaxVarsPerChannelGradient: the straight-through
// gradients of FakeQuantPerChannel for the upstream gradients (shape of x,
// rank 1..4): dx = gradients inside each channel's nudged range, dlo[c]
// and dhi[c] the sums of channel c's gradients below and above it.
func FakeQuantPerChannelGradient(gradients, x, lo, hi Value, attrs forward.FakeQuantAttrs) (dx, dlo, dhi Value) {
	return fqGrad(backward.FakeQuantWithMinMaxVarsPerChannelGradient, gradients, x, lo, hi, attrs)
}
