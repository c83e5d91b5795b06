package testutil

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// New makes a tensor of the given shape holding a copy of v; a length
// that does not fill the shape fails the test.
func New[T tensorx.Elem](t testing.TB, shape []int, v []T) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, append(make([]T, 0, len(v)), v...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Dense makes a tensor of dtype dt (float32 or float64) from a copy of
// float64 values, rounded to float32 for float32.
func Dense(t testing.TB, dt tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	t.Helper()
	switch dt {
	case tensor.Float32:
		return New(t, shape, Convert[float32](v))
	case tensor.Float64:
		return New(t, shape, v)
	}
	t.Fatalf("testutil.Dense: dtype %v", dt)
	return nil
}

// Ints makes an int32 vector.
func Ints(t testing.TB, v ...int) *tensor.Dense {
	t.Helper()
	return New(t, []int{len(v)}, Convert[int32](v))
}

// Int64s makes an int64 vector.
func Int64s(t testing.TB, v ...int64) *tensor.Dense {
	t.Helper()
	return New(t, []int{len(v)}, v)
}

// To32 returns a float32 copy of a float tensor (values rounded).
func To32(t testing.TB, d *tensor.Dense) *tensor.Dense {
	t.Helper()
	return Dense(t, tensor.Float32, tensorx.Shape(d), Float64s(t, d))
}

// Float64s returns a float64 copy of a tensor's elements.
func Float64s(t testing.TB, d *tensor.Dense) []float64 {
	t.Helper()
	v, err := tensorx.Float64s(d)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Values returns the elements of v (an autodiff.Value, typically) as
// float64 values; an error fails the test.
func Values(t testing.TB, v interface{ Float64s() ([]float64, error) }) []float64 {
	t.Helper()
	s, err := v.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Numel returns the number of elements of shape (the product of its
// dimensions).
func Numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Arange returns 1, 2, ..., n.
func Arange(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i + 1)
	}
	return v
}

// Convert returns v converted element by element to T.
func Convert[T tensorx.Float | int32 | int64, S tensorx.Float | int32 | int64 | int](v []S) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

// Round returns a copy of v rounded as a tensor of dtype dt stores it.
func Round(dt tensor.Dtype, v []float64) []float64 {
	out := append([]float64(nil), v...)
	if dt == tensor.Float32 {
		for i, x := range out {
			out[i] = float64(float32(x))
		}
	}
	return out
}

// Abs returns the absolute values of v.
func Abs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Abs(x)
	}
	return out
}

// Normal returns n standard normal values drawn from r.
func Normal(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// RandVals returns n values shift + scale·N(0, 1) drawn from r.
func RandVals(r *rand.Rand, n int, scale, shift float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = shift + scale*r.NormFloat64()
	}
	return v
}

// uniform returns n values uniform in [lo, hi) drawn from r.
func uniform(r *rand.Rand, n int, lo, hi float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float64()
	}
	return v
}

// RandDense returns a float64 tensor of standard normal values.
func RandDense(t testing.TB, r *rand.Rand, shape ...int) *tensor.Dense {
	t.Helper()
	return New(t, shape, Normal(r, checkedNumel(t, shape)))
}

// RandDenseScaled returns a float64 tensor of values shift + scale·N(0, 1).
func RandDenseScaled(t testing.TB, r *rand.Rand, scale, shift float64, shape ...int) *tensor.Dense {
	t.Helper()
	return New(t, shape, RandVals(r, checkedNumel(t, shape), scale, shift))
}

// UniformDense returns a float64 tensor of values uniform in [lo, hi).
func UniformDense(t testing.TB, r *rand.Rand, lo, hi float64, shape ...int) *tensor.Dense {
	t.Helper()
	return New(t, shape, uniform(r, checkedNumel(t, shape), lo, hi))
}

// checkedNumel is tensorx.Numel failing the test on a bad shape.
func checkedNumel(t testing.TB, shape []int) int {
	t.Helper()
	n, err := tensorx.Numel(shape)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TensorFn builds a tensor of a test case when the case runs (so that a
// failure to build it fails that case).
type TensorFn func(t testing.TB) *tensor.Dense

// Float64Zeros returns a TensorFn of a float64 tensor of zeros.
func Float64Zeros(shape ...int) TensorFn { return zerosFn(tensor.Float64, shape) }

// Float32Zeros returns a TensorFn of a float32 tensor of zeros.
func Float32Zeros(shape ...int) TensorFn { return zerosFn(tensor.Float32, shape) }

func zerosFn(dt tensor.Dtype, shape []int) TensorFn {
	return func(t testing.TB) *tensor.Dense { return Dense(t, dt, shape, make([]float64, Numel(shape))) }
}

// IntsFn returns a TensorFn of the int32 vector v (Ints).
func IntsFn(v ...int) TensorFn {
	return func(t testing.TB) *tensor.Dense { return Ints(t, v...) }
}

// Int64sFn returns a TensorFn of the int64 vector v (Int64s).
func Int64sFn(v ...int64) TensorFn {
	return func(t testing.TB) *tensor.Dense { return Int64s(t, v...) }
}

// Seq returns a function building the tensors of fs, in order.
func Seq(fs ...TensorFn) func(t testing.TB) []*tensor.Dense {
	return func(t testing.TB) []*tensor.Dense {
		out := make([]*tensor.Dense, len(fs))
		for i, f := range fs {
			out[i] = f(t)
		}
		return out
	}
}

// ArangeFloat64s returns a float64 tensor of the given shape holding 1, 2, 3, ...
// (Arange).
func ArangeFloat64s(t testing.TB, shape ...int) *tensor.Dense {
	t.Helper()
	return Dense(t, tensor.Float64, shape, Arange(Numel(shape)))
}
