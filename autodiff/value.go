package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Value is a handle to a tensor on a tape: an op's output, a constant, a
// watched leaf or a bound parameter. It is small and passed by value. A
// Value is valid until its tape is Reset; the zero Value is invalid.
//
// Value implements registry.Value, so gradient functions see it as shape
// and dtype only.
type Value struct {
	t   *Tape
	id  int32
	gen uint32
}

// Tape returns the value's tape (nil for the zero Value).
func (v Value) Tape() *Tape { return v.t }

// Err returns the error that makes v unusable: the tape's sticky error, or
// an invalid-value error; nil if v can be read.
func (v Value) Err() error {
	if v.t == nil {
		return fmt.Errorf("%w: zero Value", ErrInvalidValue)
	}
	if v.t.err != nil {
		return v.t.err
	}
	return v.t.check(v)
}

func (v Value) rec() *valRec {
	if v.t == nil || v.t.check(v) != nil {
		return nil
	}
	return &v.t.vals[v.id]
}

// Shape returns the value's shape (nil for an invalid value). The slice is
// shared: do not modify it.
func (v Value) Shape() tensor.Shape {
	if r := v.rec(); r != nil {
		return r.d.Shape()
	}
	return nil
}

// Dtype returns the value's dtype (the zero Dtype for an invalid value).
func (v Value) Dtype() tensor.Dtype {
	if r := v.rec(); r != nil {
		return r.d.Dtype()
	}
	return tensor.Dtype{}
}

// RequiresGrad reports whether v depends on a watched leaf or a trainable
// parameter, i.e. whether a gradient can flow back from it.
func (v Value) RequiresGrad() bool {
	if r := v.rec(); r != nil {
		return r.req
	}
	return false
}

// Data returns the tensor behind v. It is owned by the tape: valid until
// Reset, and not to be modified.
func (v Value) Data() (*tensor.Dense, error) {
	if err := v.Err(); err != nil {
		return nil, err
	}
	return v.t.vals[v.id].d, nil
}

// Tensor returns a copy of v's tensor that outlives the tape.
func (v Value) Tensor() (*tensor.Dense, error) {
	d, err := v.Data()
	if err != nil {
		return nil, err
	}
	return tensorx.Clone(d)
}

// Float32s returns a copy of a float32 value's elements.
func (v Value) Float32s() ([]float32, error) { return copyOut[float32](v) }

// Float64s returns a copy of a float64 value's elements.
func (v Value) Float64s() ([]float64, error) { return copyOut[float64](v) }

// Int32s returns a copy of an int32 value's elements.
func (v Value) Int32s() ([]int32, error) { return copyOut[int32](v) }

// Int64s returns a copy of an int64 value's elements.
func (v Value) Int64s() ([]int64, error) { return copyOut[int64](v) }

func copyOut[T tensorx.Elem](v Value) ([]T, error) {
	d, err := v.Data()
	if err != nil {
		return nil, err
	}
	s, err := tensorx.Slice[T](d)
	if err != nil {
		return nil, err
	}
	return append([]T(nil), s...), nil
}

// Item returns the value of a one-element float or integer tensor as float64.
func (v Value) Item() (float64, error) {
	d, err := v.Data()
	if err != nil {
		return 0, err
	}
	if tensorx.Len(d) != 1 {
		return 0, fmt.Errorf("%w: Item needs a one-element value, got shape %v", ErrShape, d.Shape())
	}
	switch d.Dtype() {
	case tensor.Float32:
		return float64(d.Float32s()[0]), nil
	case tensor.Float64:
		return d.Float64s()[0], nil
	case tensor.Int32:
		return float64(d.Int32s()[0]), nil
	case tensor.Int64:
		return float64(d.Int64s()[0]), nil
	}
	return 0, fmt.Errorf("%w: Item of a %v value", ErrDtype, d.Dtype())
}

// String describes the value (not its data).
func (v Value) String() string {
	if err := v.Err(); err != nil {
		return "Value(invalid)"
	}
	d := v.t.vals[v.id].d
	return fmt.Sprintf("Value(%v %v)", d.Dtype(), d.Shape())
}
