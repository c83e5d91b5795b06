package autodiff

import "github.com/tapegrad/tapegrad/forward"

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

var (
	opFakeQuantArgs           = ref("FakeQuantWithMinMaxArgs")
	opFakeQuantArgsGrad       = ref("FakeQuantWithMinMaxArgsGradient")
	opFakeQuantVars           = ref("FakeQuantWithMinMaxVars")
	opFakeQuantVarsGrad       = ref("FakeQuantWithMinMaxVarsGradient")
	opFakeQuantPerChannel     = ref("FakeQuantWithMinMaxVarsPerChannel")
	opFakeQuantPerChannelGrad = ref("FakeQuantWithMinMaxVarsPerChannelGradient")
)

// fqTapeOf returns the tape of the first argument that has one, or nil if
// every argument is the zero Value.
func fqTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// fqApply1 applies a single-output op of the family on the tape of its
// first valid argument. A zero Value, a value of another tape or a value
// used after Reset is an error on that tape; if no argument has a tape
// there is nowhere to record the error, and the result is the zero Value,
// whose Err reports it as invalid.
func fqApply1(r *opRef, attrs any, in ...Value) Value {
	t := fqTapeOf(in...)
	if t == nil {
		return Value{}
	}
	return t.apply1(r.def(), attrs, in...)
}

// fqApply3 is fqApply1 for the three-output gradient ops.
func fqApply3(r *opRef, attrs any, in ...Value) (Value, Value, Value) {
	t := fqTapeOf(in...)
	if t == nil {
		return Value{}, Value{}, Value{}
	}
	var buf [3]Value
	out := t.applyDef(r.def(), attrs, in, !t.noGrad, "forward", buf[:0])
	return out[0], out[1], out[2]
}

// FakeQuantArgs applies FakeQuantWithMinMaxArgs: x (any shape) snapped to
// the num_bits grid of the attr range [Min, Max] (default [-6, 6]; Min <
// Max is required), nudged so that 0 is on the grid, and clamped to it.
func FakeQuantArgs(x Value, attrs forward.FakeQuantArgsAttrs) Value {
	return fqApply1(opFakeQuantArgs, attrs, x)
}

// FakeQuantArgsGradient applies FakeQuantWithMinMaxArgsGradient: gradients
// where the nudged range of attrs contains x (bounds included), else 0.
// gradients and x have the same shape.
func FakeQuantArgsGradient(gradients, x Value, attrs forward.FakeQuantArgsAttrs) Value {
	return fqApply1(opFakeQuantArgsGrad, attrs, gradients, x)
}

// FakeQuantVars applies FakeQuantWithMinMaxVars: x (any shape) snapped to
// the num_bits grid of the range [lo, hi] given by two scalar values
// (TensorFlow's min and max inputs), nudged so that 0 is on the grid, and
// clamped to it; 0 everywhere if lo == hi == 0. Its gradient flows to x,
// lo and hi.
func FakeQuantVars(x, lo, hi Value, attrs forward.FakeQuantAttrs) Value {
	return fqApply1(opFakeQuantVars, attrs, x, lo, hi)
}

// FakeQuantVarsGradient applies FakeQuantWithMinMaxVarsGradient: the
// straight-through gradients of FakeQuantVars for the upstream gradients
// (shape of x): dx = gradients inside the nudged range, dlo and dhi the
// scalar sums of the gradients below and above it.
func FakeQuantVarsGradient(gradients, x, lo, hi Value, attrs forward.FakeQuantAttrs) (dx, dlo, dhi Value) {
	return fqApply3(opFakeQuantVarsGrad, attrs, gradients, x, lo, hi)
}

// FakeQuantPerChannel applies FakeQuantWithMinMaxVarsPerChannel: x (rank
// >= 1) snapped, in each channel c of its last axis, to the num_bits grid
// of [lo[c], hi[c]] (TensorFlow's min and max inputs, both of shape
// [channels]), nudged so that 0 is on the grid, and clamped to it; 0 in
// channels with lo[c] == hi[c] == 0. Its gradient flows to x, lo and hi.
func FakeQuantPerChannel(x, lo, hi Value, attrs forward.FakeQuantAttrs) Value {
	return fqApply1(opFakeQuantPerChannel, attrs, x, lo, hi)
}

// FakeQuantPerChannelGradient applies
// FakeQuantWithMinMaxVarsPerChannelGradient: the straight-through
// gradients of FakeQuantPerChannel for the upstream gradients (shape of x,
// rank 1..4): dx = gradients inside each channel's nudged range, dlo[c]
// and dhi[c] the sums of channel c's gradients below and above it.
func FakeQuantPerChannelGradient(gradients, x, lo, hi Value, attrs forward.FakeQuantAttrs) (dx, dlo, dhi Value) {
	return fqApply3(opFakeQuantPerChannelGrad, attrs, gradients, x, lo, hi)
}
