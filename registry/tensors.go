package registry

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"
)

// The little tensor handling the registry needs itself: the element types
// of Scratch and the allocation of outputs when a KernelCtx has no
// allocator. (Package registry imports nothing of the module, so these do
// not come from the internal tensor helpers; they follow the same rules.)

// Elem is the set of element types tapegrad stores in tensors.
type Elem interface {
	float32 | float64 | int32 | int64 | bool
}

// maxRank bounds the rank of tensors tapegrad creates.
const maxRank = 16

// dtypeOf returns the tensor dtype of the Go type T.
func dtypeOf[T Elem]() tensor.Dtype {
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

// numel returns the number of elements of shape, or a shape error for a
// negative dimension, a rank above maxRank or more than 2^31·64 elements
// (the bound of the internal tensor helpers). It does not retain shape.
func numel(shape []int) (int, error) {
	if len(shape) > maxRank {
		return 0, fmt.Errorf("%w: rank %d exceeds the maximum %d", ErrShape, len(shape), maxRank)
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

// newDense wraps data in a *tensor.Dense of the given shape (a copy of
// shape; data is used, not copied); len(data) fills the shape.
func newDense[T Elem](shape []int, data []T) *tensor.Dense {
	sh := append([]int(nil), shape...)
	return tensor.New(tensor.WithShape(sh...), tensor.WithBacking(data))
}

// zeros returns a new zero-filled tensor of dtype dt and the given shape.
func zeros(dt tensor.Dtype, shape []int) (*tensor.Dense, error) {
	n, err := numel(shape)
	if err != nil {
		return nil, err
	}
	switch dt {
	case tensor.Float32:
		return newDense(shape, make([]float32, n)), nil
	case tensor.Float64:
		return newDense(shape, make([]float64, n)), nil
	case tensor.Int32:
		return newDense(shape, make([]int32, n)), nil
	case tensor.Int64:
		return newDense(shape, make([]int64, n)), nil
	case tensor.Bool:
		return newDense(shape, make([]bool, n)), nil
	}
	return nil, fmt.Errorf("%w: unsupported dtype %v", ErrDtype, dt)
}

// sliceOf returns the backing slice of d as []T, or a dtype error if d's
// dtype is not T.
func sliceOf[T Elem](d *tensor.Dense) ([]T, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrDtype)
	}
	if want := dtypeOf[T](); d.Dtype() != want {
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
