package autodiff

import "github.com/tapegrad/tapegrad/registry"

// The typed op functions of this package apply the typed builders of
// packages forward and backward on the tape of their Value arguments.
// Each op runs on the tape of its first argument that has one; a zero
// Value, a value of another tape or one used after Reset is an error on
// that tape (the tape checks every input); if no argument has a tape there
// is nowhere to record an error, and the results are zero Values, whose
// Err reports them as invalid.

// tapeOf returns the tape of the first argument that has one, or nil.
func tapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

type (
	unaryBuilder  = func(registry.Emitter, registry.Value) registry.Value
	binaryBuilder = func(registry.Emitter, registry.Value, registry.Value) registry.Value
)

// unary applies a one-input, one-output builder to x.
func unary(b unaryBuilder, x Value) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	return ValueOf(b(t.Emitter(), t.box(x)))
}

// binary applies a two-input, one-output builder to x and y.
func binary(b binaryBuilder, x, y Value) Value {
	t := tapeOf(x, y)
	if t == nil {
		return Value{}
	}
	return ValueOf(b(t.Emitter(), t.box(x), t.box(y)))
}

// valuesOfRefs turns a builder's outputs into Values of t.
func (t *Tape) valuesOfRefs(rs []registry.Value) []Value {
	out := t.values(len(rs))
	for i, r := range rs {
		out[i] = ValueOf(r)
	}
	return out
}
