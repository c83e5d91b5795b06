package forward

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Maximum, Minimum and Pow (docs/spec/cwise.md): broadcasting binary ops
// on float32 and float64, with TensorFlow's CPU semantics:
//
//   - Maximum and Minimum propagate NaN (Eigen's PropagateNaN: a NaN
//     operand gives NaN, x's first); otherwise max(x, y) is y if x < y,
//     else x (std::max), and min(x, y) is y if y < x, else x (std::min).
//   - Pow is C's pow for every pair, including pow(x, 0) = 1,
//     pow(0, y<0) = +Inf and NaN for a negative base with a non-integer
//     exponent; computed with Go's math.Pow (C99's special cases, within
//     an ulp or two of the correctly rounded result); float32 in float64
//     and rounded once.

func init() {
	for _, b := range []struct {
		name, doc string
		k32, k64  registry.Kernel
	}{
		{"Maximum", "z = max(x, y), broadcasting (NaN if either is NaN)", binaryKernel("Maximum", maxRows[float32]()), binaryKernel("Maximum", maxRows[float64]())},
		{"Minimum", "z = min(x, y), broadcasting (NaN if either is NaN)", binaryKernel("Minimum", minRows[float32]()), binaryKernel("Minimum", minRows[float64]())},
		{"Pow", "z = x^y, broadcasting (C's pow)", binaryKernel("Pow", powRows[float32]()), binaryKernel("Pow", powRows[float64]())},
	} {
		registry.MustRegister(&registry.OpDef{Name: b.name, Doc: b.doc,
			Inputs: args("x", "y"), Outputs: args("z"),
			Kernels: floatKernels(b.k32, b.k64), Samples: cwiseBinarySamples(b.name)})
	}
}

// maxOf is TensorFlow's maximum of two floats: NaN if either is NaN (x's
// first), else std::max(x, y).
func maxOf[T tensorx.Float](x, y T) T {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case x < y:
		return y
	}
	return x
}

// minOf is TensorFlow's minimum of two floats: NaN if either is NaN (x's
// first), else std::min(x, y).
func minOf[T tensorx.Float](x, y T) T {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case y < x:
		return y
	}
	return x
}

// maxRows, minRows and powRows are the inner loops of Maximum, Minimum
// and Pow.
func maxRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = maxOf(a[i], b[i])
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = maxOf(a, b[i])
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = maxOf(a[i], b)
			}
		},
	}
}

func minRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = minOf(a[i], b[i])
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = minOf(a, b[i])
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			for i := range o {
				o[i] = minOf(a[i], b)
			}
		},
	}
}

// powOf is C's pow: in float64 (math.Pow has C99's special cases), rounded
// once for float32.
func powOf[T tensorx.Float](x, y T) T { return T(math.Pow(float64(x), float64(y))) }

func powRows[T tensorx.Float]() binRows[T] {
	return binRows[T]{
		vv: func(o, a, b []T) {
			a, b = a[:len(o)], b[:len(o)]
			for i := range o {
				o[i] = powOf(a[i], b[i])
			}
		},
		sv: func(o []T, a T, b []T) {
			b = b[:len(o)]
			for i := range o {
				o[i] = powOf(a, b[i])
			}
		},
		vs: func(o, a []T, b T) {
			a = a[:len(o)]
			switch {
			case b == 2:
				// x·x is pow(x, 2) exactly (one rounding either way).
				for i := range o {
					o[i] = a[i] * a[i]
				}
			default:
				for i := range o {
					o[i] = powOf(a[i], b)
				}
			}
		},
	}
}
