package forward

import (
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/registry"
)

// Abs and Sign (docs/spec/cwise.md), for float32, float64, int32 and int64
// as TensorFlow's CPU kernels: Abs(x) = |x| (the sign bit cleared for
// floats, so Abs(-0) = 0 and Abs(NaN) is NaN; the most negative integer
// stays itself, as in C++); Sign(x) = -1, 0 or 1 (+0 for ±0), NaN for NaN
// (Eigen's sign_impl for real types). Abs's gradient is dy·Sign(x), so
// it is 0 at x = 0.

func init() {
	registry.MustRegister(&registry.OpDef{Name: "Abs", Doc: "y = |x|",
		Inputs: args("x"), Outputs: args("y"),
		Kernels: numKernels(numUnaryKernel(absLoop[float32]), numUnaryKernel(absLoop[float64]),
			numUnaryKernel(absLoop[int32]), numUnaryKernel(absLoop[int64])),
		Samples: absSamples})
	registry.MustRegister(&registry.OpDef{Name: "Sign", Doc: "y = -1, 0 or 1 by the sign of x (NaN for NaN)",
		Inputs: args("x"), Outputs: args("y"),
		Kernels: numKernels(numUnaryKernel(signLoop[float32]), numUnaryKernel(signLoop[float64]),
			numUnaryKernel(signLoop[int32]), numUnaryKernel(signLoop[int64]))})
}

// numKernels returns the kernel map of an op with float32, float64, int32
// and int64 kernels.
func numKernels(f32, f64, i32, i64 registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: f32, tensor.Float64: f64, tensor.Int32: i32, tensor.Int64: i64}
}

// numUnaryKernel returns the kernel of a unary elementwise op of a numeric
// type whose loop is loop(out, x).
func numUnaryKernel[T ewNumber](loop func(out, x []T)) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := like(kc, in[0])
		if err != nil {
			return nil, err
		}
		x, o := data[T](in[0]), data[T](out)
		if threads := kc.NumThreads(); serial(threads, len(x), ewGrain) {
			loop(o, x)
		} else {
			parallel.For(threads, len(x), ewGrain, func(lo, hi int) { loop(o[lo:hi], x[lo:hi]) })
		}
		return kc.Results(out), nil
	}
}

// absLoop computes out[i] = |x[i]|.
func absLoop[T ewNumber](out, x []T) {
	x = x[:len(out)]
	switch o := any(out).(type) {
	case []float32:
		for i, v := range any(x).([]float32) {
			o[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		}
	case []float64:
		for i, v := range any(x).([]float64) {
			o[i] = math.Abs(v)
		}
	default:
		for i, v := range x {
			if v < 0 {
				v = -v
			}
			out[i] = v
		}
	}
}

// signLoop computes out[i] = sign(x[i]).
func signLoop[T ewNumber](out, x []T) {
	x = x[:len(out)]
	for i, v := range x {
		switch {
		case v > 0:
			out[i] = 1
		case v < 0:
			out[i] = -1
		case v == 0:
			out[i] = 0 // -0 too
		default:
			out[i] = v // NaN
		}
	}
}
