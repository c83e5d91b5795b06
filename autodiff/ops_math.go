package autodiff

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
)

// Typed functions of the elementwise math family (TensorFlow's AddV2, Sub,
// Mul, RealDiv, Neg, Square, Sqrt, Rsqrt, Exp, Log, Sigmoid, Tanh, Relu,
// Relu6, BroadcastTo, Cast and L2Loss). Binary ops broadcast their
// operands NumPy-style; both operands must have the same float dtype.

var (
	opAddV2       = ref("AddV2")
	opSub         = ref("Sub")
	opMul         = ref("Mul")
	opRealDiv     = ref("RealDiv")
	opNeg         = ref("Neg")
	opSquare      = ref("Square")
	opSqrt        = ref("Sqrt")
	opRsqrt       = ref("Rsqrt")
	opExp         = ref("Exp")
	opLog         = ref("Log")
	opSigmoid     = ref("Sigmoid")
	opTanh        = ref("Tanh")
	opRelu        = ref("Relu")
	opRelu6       = ref("Relu6")
	opBroadcastTo = ref("BroadcastTo")
	opCast        = ref("Cast")
	opL2Loss      = ref("L2Loss")
)

// mathTapeOf returns the tape of the first argument that has one, or nil
// if every argument is the zero Value.
func mathTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// mathApply applies a single-output op on the tape of its first valid
// argument. A zero Value, a value of another tape or a value used after
// Reset is an error on that tape (applyDef checks every input); if no
// argument has a tape there is nowhere to record the error, and the result
// is the zero Value, whose Err reports it as invalid.
func mathApply(r *opRef, attrs any, in ...Value) Value {
	t := mathTapeOf(in...)
	if t == nil {
		return Value{}
	}
	return t.applyDef(r.def(), attrs, in, !t.noGrad, "forward", nil)[0]
}

// Add returns a + b (TensorFlow's AddV2), broadcasting.
func Add(a, b Value) Value { return mathApply(opAddV2, nil, a, b) }

// Sub returns a - b, broadcasting.
func Sub(a, b Value) Value { return mathApply(opSub, nil, a, b) }

// Mul returns a * b elementwise, broadcasting.
func Mul(a, b Value) Value { return mathApply(opMul, nil, a, b) }

// Div returns a / b elementwise (TensorFlow's RealDiv), broadcasting.
func Div(a, b Value) Value { return mathApply(opRealDiv, nil, a, b) }

// Neg returns -x.
func Neg(x Value) Value { return mathApply(opNeg, nil, x) }

// Square returns x * x.
func Square(x Value) Value { return mathApply(opSquare, nil, x) }

// Sqrt returns the square root of x (NaN for x < 0).
func Sqrt(x Value) Value { return mathApply(opSqrt, nil, x) }

// Rsqrt returns 1 / sqrt(x).
func Rsqrt(x Value) Value { return mathApply(opRsqrt, nil, x) }

// Exp returns e^x.
func Exp(x Value) Value { return mathApply(opExp, nil, x) }

// Log returns the natural logarithm of x.
func Log(x Value) Value { return mathApply(opLog, nil, x) }

// Sigmoid returns 1 / (1 + e^-x).
func Sigmoid(x Value) Value { return mathApply(opSigmoid, nil, x) }

// Tanh returns the hyperbolic tangent of x.
func Tanh(x Value) Value { return mathApply(opTanh, nil, x) }

// Relu returns max(x, 0).
func Relu(x Value) Value { return mathApply(opRelu, nil, x) }

// Relu6 returns min(max(x, 0), 6).
func Relu6(x Value) Value { return mathApply(opRelu6, nil, x) }

// BroadcastTo broadcasts x to shape (NumPy rules: x's dimensions align
// with the trailing ones of shape and must equal them or be 1). Its
// gradient sums back over the broadcast dimensions.
func BroadcastTo(x Value, shape ...int) Value {
	t := mathTapeOf(x)
	if t == nil {
		return Value{}
	}
	return mathApply(opBroadcastTo, nil, x, t.Ints(shape...))
}

// Cast converts x to dtype dt (float32, float64, int32, int64 or bool) as
// TensorFlow's Cast: float to integer truncates toward zero, a number to
// bool is x != 0, bool to a number is 1 or 0. The gradient flows back only
// between floating dtypes.
func Cast(x Value, dt tensor.Dtype) Value {
	return mathApply(opCast, forward.CastAttrs{DstT: dt}, x)
}

// L2Loss returns sum(x^2) / 2 as a scalar of x's dtype (TensorFlow's
// L2Loss, the usual weight-decay term).
func L2Loss(x Value) Value { return mathApply(opL2Loss, nil, x) }
