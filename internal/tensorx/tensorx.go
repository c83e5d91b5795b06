// Package tensorx holds the only sanctioned ways tapegrad code creates
// *tensor.Dense values and reaches their backing slices. It works around
// the sharp edges of gorgonia.org/tensor v0.9.24: Data() panics on empty
// tensors, the typed accessors do not check the dtype, tensor.New panics on a
// shape/length mismatch, and views share their parent's backing array.
package tensorx

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"
)

// Float is the set of floating-point element types kernels are generic over.
type Float interface{ float32 | float64 }

// Elem is the set of element types tapegrad stores in tensors.
type Elem interface {
	float32 | float64 | int32 | int64 | bool
}

// ErrShape and ErrDtype are returned (wrapped) by the helpers below. They
// are the same classes of error as package registry's ErrShape and
// ErrDtype, which this package cannot import: each has an ErrorKind method
// ("shape", "dtype"), and errors.Is matches sentinels of the same kind
// either way (errors.Is(err, registry.ErrShape) holds for a shape error
// from here).
var (
	ErrShape error = &kindSentinel{kind: "shape", msg: "shape error"}
	ErrDtype error = &kindSentinel{kind: "dtype", msg: "dtype error"}
)

// kindSentinel is a sentinel error with a kind shared across packages.
type kindSentinel struct{ kind, msg string }

func (e *kindSentinel) Error() string { return e.msg }

// ErrorKind names the class of the error: "shape" or "dtype".
func (e *kindSentinel) ErrorKind() string { return e.kind }

// Is reports whether target is a sentinel of the same kind.
func (e *kindSentinel) Is(target error) bool {
	k, ok := target.(interface{ ErrorKind() string })
	return ok && k.ErrorKind() == e.kind
}

// MaxRank bounds the rank of tensors tapegrad creates.
const MaxRank = 16

// DtypeOf returns the tensor dtype of the Go type T.
func DtypeOf[T Elem]() tensor.Dtype {
	var z T
	switch any(z).(type) {
	case float32:
		return tensor.Float32
	case float64:
		return tensor.Float64
	case int32:
		return tensor.Int32
	case int64:
		return tensor.Int64
	default:
		return tensor.Bool
	}
}

// Numel returns the number of elements of shape, or an error for a negative
// dimension, a rank above MaxRank or an element count that overflows.
//
// Numel, New and Zeros do not retain shape (error messages format a copy),
// so a caller's shape slice can stay on its stack.
func Numel(shape []int) (int, error) {
	if len(shape) > MaxRank {
		return 0, fmt.Errorf("%w: rank %d exceeds the maximum %d", ErrShape, len(shape), MaxRank)
	}
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: negative dimension in shape %v", ErrShape, slices.Clone(shape))
		}
		if d != 0 && n > math.MaxInt32*64/d {
			return 0, fmt.Errorf("%w: shape %v has too many elements", ErrShape, slices.Clone(shape))
		}
		n *= d
	}
	return n, nil
}

// Slice returns the backing slice of d as []T, or an error if d's dtype is
// not T. It never panics, also for empty tensors and scalars. d must be
// contiguous (see Contiguous).
func Slice[T Elem](d *tensor.Dense) ([]T, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrDtype)
	}
	if want := DtypeOf[T](); d.Dtype() != want {
		return nil, fmt.Errorf("%w: tensor has dtype %v, want %v", ErrDtype, d.Dtype(), want)
	}
	var s any
	switch any(*new(T)).(type) {
	case float32:
		s = d.Float32s()
	case float64:
		s = d.Float64s()
	case int32:
		s = d.Int32s()
	case int64:
		s = d.Int64s()
	default:
		s = d.Bools()
	}
	return s.([]T), nil
}

// MustSlice is Slice for tensors whose dtype the caller has already checked.
// It panics on a dtype mismatch, which is a bug in tapegrad, not user input.
func MustSlice[T Elem](d *tensor.Dense) []T {
	s, err := Slice[T](d)
	if err != nil {
		panic("tensorx: " + err.Error())
	}
	return s
}

// New wraps data in a *tensor.Dense of the given shape (the slice is used,
// not copied). It validates the length against the shape first.
func New[T Elem](shape []int, data []T) (*tensor.Dense, error) {
	n, err := Numel(shape)
	if err != nil {
		return nil, err
	}
	if len(data) != n {
		return nil, fmt.Errorf("%w: %d elements do not fill shape %v (%d)", ErrShape, len(data), slices.Clone(shape), n)
	}
	sh := append([]int(nil), shape...)
	return tensor.New(tensor.WithShape(sh...), tensor.WithBacking(data)), nil
}

// Zeros returns a new zero-filled tensor of dtype dt and the given shape.
func Zeros(dt tensor.Dtype, shape []int) (*tensor.Dense, error) {
	n, err := Numel(shape)
	if err != nil {
		return nil, err
	}
	switch dt {
	case tensor.Float32:
		return New(shape, make([]float32, n))
	case tensor.Float64:
		return New(shape, make([]float64, n))
	case tensor.Int32:
		return New(shape, make([]int32, n))
	case tensor.Int64:
		return New(shape, make([]int64, n))
	case tensor.Bool:
		return New(shape, make([]bool, n))
	}
	return nil, fmt.Errorf("%w: unsupported dtype %v", ErrDtype, dt)
}

// Supported reports whether tapegrad stores tensors of dtype dt.
func Supported(dt tensor.Dtype) bool {
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool:
		return true
	}
	return false
}

// Shape returns a copy of d's shape as []int (never aliasing d's).
func Shape(d *tensor.Dense) []int {
	return append([]int(nil), d.Shape()...)
}

// Len returns the number of elements of d.
func Len(d *tensor.Dense) int {
	n := 1
	for _, s := range d.Shape() {
		n *= s
	}
	return n
}

// Contiguous returns d itself if its data is laid out row-major in its own
// backing array, and otherwise a compacted copy. It returns an error for
// dtypes tapegrad does not support.
func Contiguous(d *tensor.Dense) (*tensor.Dense, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrShape)
	}
	if !Supported(d.Dtype()) {
		return nil, fmt.Errorf("%w: unsupported dtype %v", ErrDtype, d.Dtype())
	}
	if _, err := Numel(d.Shape()); err != nil {
		return nil, err
	}
	if !d.RequiresIterator() && !d.IsView() {
		n := Len(d)
		if rawLen(d) == n {
			return d, nil
		}
	}
	c := d.Materialize()
	cd, ok := c.(*tensor.Dense)
	if !ok {
		return nil, fmt.Errorf("%w: cannot compact %T", ErrShape, c)
	}
	if rawLen(cd) != Len(cd) {
		return nil, fmt.Errorf("%w: tensor of shape %v has %d elements in its backing array", ErrShape, cd.Shape(), rawLen(cd))
	}
	return cd, nil
}

func rawLen(d *tensor.Dense) int {
	switch d.Dtype() {
	case tensor.Float32:
		return len(d.Float32s())
	case tensor.Float64:
		return len(d.Float64s())
	case tensor.Int32:
		return len(d.Int32s())
	case tensor.Int64:
		return len(d.Int64s())
	case tensor.Bool:
		return len(d.Bools())
	}
	return -1
}

// Clone returns a deep, contiguous copy of d.
func Clone(d *tensor.Dense) (*tensor.Dense, error) {
	c, err := Contiguous(d)
	if err != nil {
		return nil, err
	}
	out, err := Zeros(c.Dtype(), c.Shape())
	if err != nil {
		return nil, err
	}
	CopyData(out, c)
	return out, nil
}

// CopyData copies src's elements into dst; both must be contiguous, of the
// same dtype and element count.
func CopyData(dst, src *tensor.Dense) {
	switch dst.Dtype() {
	case tensor.Float32:
		copy(dst.Float32s(), src.Float32s())
	case tensor.Float64:
		copy(dst.Float64s(), src.Float64s())
	case tensor.Int32:
		copy(dst.Int32s(), src.Int32s())
	case tensor.Int64:
		copy(dst.Int64s(), src.Int64s())
	case tensor.Bool:
		copy(dst.Bools(), src.Bools())
	}
}

// Float64s returns a float64 copy of a float or integer tensor's data.
func Float64s(d *tensor.Dense) ([]float64, error) {
	switch d.Dtype() {
	case tensor.Float32:
		s := d.Float32s()
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out, nil
	case tensor.Float64:
		return append([]float64(nil), d.Float64s()...), nil
	case tensor.Int32:
		s := d.Int32s()
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out, nil
	case tensor.Int64:
		s := d.Int64s()
		out := make([]float64, len(s))
		for i, v := range s {
			out[i] = float64(v)
		}
		return out, nil
	case tensor.Bool:
		s := d.Bools()
		out := make([]float64, len(s))
		for i, v := range s {
			if v {
				out[i] = 1
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: unsupported dtype %v", ErrDtype, d.Dtype())
}

// Ints returns the values of an int32 or int64 tensor as []int.
func Ints(d *tensor.Dense) ([]int, error) {
	return AppendInts(nil, d)
}

// AppendInts appends the values of an int32 or int64 tensor to dst and
// returns the extended slice; with a dst of enough capacity (a stack array
// for a shape) it does not allocate.
func AppendInts(dst []int, d *tensor.Dense) ([]int, error) {
	switch d.Dtype() {
	case tensor.Int32:
		for _, v := range d.Int32s() {
			dst = append(dst, int(v))
		}
		return dst, nil
	case tensor.Int64:
		for _, v := range d.Int64s() {
			dst = append(dst, int(v))
		}
		return dst, nil
	}
	return dst, fmt.Errorf("%w: want an int32 or int64 tensor, got %v", ErrDtype, d.Dtype())
}

// SameShape reports whether two shapes are equal.
func SameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
