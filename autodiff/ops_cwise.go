package autodiff

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of Abs, Sign, Maximum, Minimum, Pow, the comparisons and
// SelectV2 (docs/spec/cwise.md). Binary ops broadcast NumPy-style; their
// operands must have the same dtype. The comparisons return bool values,
// which Where takes as its condition.

// Abs returns |x| elementwise (float32, float64, int32, int64). Its
// gradient is dy·Sign(x), 0 at x = 0.
func Abs(x Value) Value { return unary(forward.Abs, x) }

// Sign returns -1, 0 or 1 by the sign of each element of x (NaN for NaN).
// It is not differentiable.
func Sign(x Value) Value { return unary(forward.Sign, x) }

// Maximum returns max(a, b) elementwise, broadcasting (NaN if either is
// NaN). Where a == b the gradient goes to a.
func Maximum(a, b Value) Value { return binary(forward.Maximum, a, b) }

// Minimum returns min(a, b) elementwise, broadcasting (NaN if either is
// NaN). Where a == b the gradient goes to a.
func Minimum(a, b Value) Value { return binary(forward.Minimum, a, b) }

// Pow returns a^b elementwise, broadcasting (C's pow). The gradient with
// respect to b is 0 where a <= 0.
func Pow(a, b Value) Value { return binary(forward.Pow, a, b) }

// Greater returns a > b elementwise as bool, broadcasting.
func Greater(a, b Value) Value { return binary(forward.Greater, a, b) }

// GreaterEqual returns a >= b elementwise as bool, broadcasting.
func GreaterEqual(a, b Value) Value { return binary(forward.GreaterEqual, a, b) }

// Less returns a < b elementwise as bool, broadcasting.
func Less(a, b Value) Value { return binary(forward.Less, a, b) }

// LessEqual returns a <= b elementwise as bool, broadcasting.
func LessEqual(a, b Value) Value { return binary(forward.LessEqual, a, b) }

// Equal returns a == b elementwise as bool, broadcasting (also for bool
// operands); operands that do not broadcast are an error.
func Equal(a, b Value) Value { return binary(cwEqual, a, b) }

// NotEqual returns a != b elementwise as bool, broadcasting.
func NotEqual(a, b Value) Value { return binary(cwNotEqual, a, b) }

// cwEqual and cwNotEqual are Equal and NotEqual with their default attrs.
func cwEqual(e registry.Emitter, a, b registry.Value) registry.Value {
	return forward.Equal(e, registry.Attrs[forward.EqualAttrs]{}, a, b)
}

func cwNotEqual(e registry.Emitter, a, b registry.Value) registry.Value {
	return forward.NotEqual(e, registry.Attrs[forward.EqualAttrs]{}, a, b)
}

// Where returns cond ? a : b elementwise (TensorFlow's SelectV2, tf.where
// with two values): cond is bool, a and b have the same dtype, and the
// three broadcast against each other. The gradient goes to a where cond
// holds and to b elsewhere.
func Where(cond, a, b Value) Value {
	t := tapeOf(cond, a, b)
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.SelectV2(t.Emitter(), t.box(cond), t.box(a), t.box(b)))
}
