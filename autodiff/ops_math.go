package autodiff

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the elementwise math family (TensorFlow's AddV2, Sub,
// Mul, RealDiv, Neg, Square, Sqrt, Rsqrt, Exp, Log, Sigmoid, Tanh, Relu,
// Relu6, BroadcastTo, Cast and L2Loss). Binary ops broadcast their
// operands NumPy-style; both operands must have the same float dtype.

// Add returns a + b (TensorFlow's AddV2), broadcasting.
func Add(a, b Value) Value { return binary(forward.AddV2, a, b) }

// Sub returns a - b, broadcasting.
func Sub(a, b Value) Value { return binary(forward.Sub, a, b) }

// Mul returns a * b elementwise, broadcasting.
func Mul(a, b Value) Value { return binary(forward.Mul, a, b) }

// Div returns a / b elementwise (TensorFlow's RealDiv), broadcasting.
func Div(a, b Value) Value { return binary(forward.RealDiv, a, b) }

// Neg returns -x.
func Neg(x Value) Value { return unary(forward.Neg, x) }

// Square returns x * x.
func Square(x Value) Value { return unary(forward.Square, x) }

// Sqrt returns the square root of x (NaN for x < 0).
func Sqrt(x Value) Value { return unary(forward.Sqrt, x) }

// Rsqrt returns 1 / sqrt(x).
func Rsqrt(x Value) Value { return unary(forward.Rsqrt, x) }

// Exp returns e^x.
func Exp(x Value) Value { return unary(forward.Exp, x) }

// Log returns the natural logarithm of x.
func Log(x Value) Value { return unary(forward.Log, x) }

// Sigmoid returns 1 / (1 + e^-x).
func Sigmoid(x Value) Value { return unary(forward.Sigmoid, x) }

// Tanh returns the hyperbolic tangent of x.
func Tanh(x Value) Value { return unary(forward.Tanh, x) }

// Relu returns max(x, 0).
func Relu(x Value) Value { return unary(forward.Relu, x) }

// Relu6 returns min(max(x, 0), 6).
func Relu6(x Value) Value { return unary(forward.Relu6, x) }

// BroadcastTo broadcasts x to shape (NumPy rules: x's dimensions align
// with the trailing ones of shape and must equal them or be 1). Its
// gradient sums back over the broadcast dimensions.
func BroadcastTo(x Value, shape ...int) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.BroadcastTo(t.Emitter(), t.box(x), t.box(t.Ints(shape...))))
}

// Cast converts x to dtype dt (float32, float64, int32, int64 or bool) as
// TensorFlow's Cast: float to integer truncates toward zero, a number to
// bool is x != 0, bool to a number is 1 or 0. The gradient flows back only
// between floating dtypes.
func Cast(x Value, dt tensor.Dtype) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.Cast(t.Emitter(), registry.NewAttrs(forward.CastAttrs{DstT: dt}), t.box(x)))
}

// L2Loss returns sum(x^2) / 2 as a scalar of x's dtype (TensorFlow's
// L2Loss, the usual weight-decay term).
func L2Loss(x Value) Value { return unary(forward.L2Loss, x) }
