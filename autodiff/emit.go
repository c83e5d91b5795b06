package autodiff

import "github.com/tapegrad/tapegrad/registry"

// Emitter returns an emitter that applies ops on t as the program's own
// (forward) ops: recorded for the backward pass unless t is no-grad, with
// errors reported on t like those of Apply. It is what the typed op
// builders of packages forward and backward (forward.Conv2D,
// backward.Conv2DBackpropInput, ...) take:
//
//	e := tape.Emitter()
//	y := autodiff.ValueOf(forward.Relu(e, tape.Ref(x)))
func (t *Tape) Emitter() registry.Emitter {
	if t.fe.t == nil {
		t.fe = emitter{t: t, fwd: true}
	}
	return &t.fe
}

// Ref returns v, a Value of t, as a registry.Value for a typed op builder,
// without allocating (the zero Value and values of other tapes are
// reported when the op runs).
func (t *Tape) Ref(v Value) registry.Value { return t.box(v) }

// ValueOf returns the tape Value behind rv, a registry.Value that a typed
// op builder returned (or that Ref made); the zero Value, which reports
// itself as invalid, for anything else.
func ValueOf(rv registry.Value) Value {
	v, _ := unbox(rv)
	return v
}
