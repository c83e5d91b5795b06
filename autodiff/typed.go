package autodiff

import (
	"math"
	"strconv"

	"github.com/tapegrad/tapegrad/registry"
)

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

// inputName returns the name of input at of the op named op, or "#at" if
// the op or the input is unknown.
func inputName(op string, at int) string {
	if def, err := registry.Lookup(op); err == nil && at >= 0 && at < len(def.Inputs) {
		return def.Inputs[at].Name
	}
	return "#" + strconv.Itoa(at)
}

// sizeInts puts sizes on t as an int32 vector for input at of op (a nil
// sizes is an empty vector, which the op rejects with its own message),
// or records an error for a size that does not fit in int32.
func sizeInts(t *Tape, op string, at int, sizes []int) (Value, bool) {
	for _, s := range sizes {
		if s < math.MinInt32 || s > math.MaxInt32 {
			t.fail(op, at, "forward", registry.Errorf(registry.ErrInvalidArgument,
				"%s: size %d does not fit the int32 %s input", op, s, inputName(op, at)))
			return t.poison(), false
		}
	}
	return t.Ints(sizes...), true
}
