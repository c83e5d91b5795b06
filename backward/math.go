package backward

import (
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/ewkern"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// The elementwise math family's gradient kernels, TensorFlow's SqrtGrad,
// RsqrtGrad, SigmoidGrad, TanhGrad (inputs y, dy) and ReluGrad, Relu6Grad
// (inputs gradients, features), whose loops are in internal/ewkern; and
// the gradients of the family, as TensorFlow's math_grad.py and nn_grad.py
// register them, built only from registered ops so that they can be
// differentiated again. The binary ops reduce the gradient of a broadcast
// operand back to its shape with sumToShape. The gradient kernels have
// their own gradients, so every order works.

// ewGrain is the chunk size (elements) of the parallel gradient loops.
const ewGrain = 1 << 14

func init() {
	for _, g := range []struct {
		name, doc string
		loop32    func(out, a, b []float32)
		loop64    func(out, a, b []float64)
		in0, in1  string
		out       string
	}{
		{OpSqrtGrad, "z = dy * 0.5 / y (0 where dy == 0), the gradient of y = sqrt(x)", ewkern.SqrtGrad[float32], ewkern.SqrtGrad[float64], "y", "dy", "z"},
		{OpRsqrtGrad, "z = -0.5 * dy * y^3 (0 where dy == 0), the gradient of y = rsqrt(x)", ewkern.RsqrtGrad[float32], ewkern.RsqrtGrad[float64], "y", "dy", "z"},
		{OpSigmoidGrad, "z = dy * y * (1 - y), the gradient of y = sigmoid(x)", ewkern.SigmoidGrad[float32], ewkern.SigmoidGrad[float64], "y", "dy", "z"},
		{OpTanhGrad, "z = dy * (1 - y^2), the gradient of y = tanh(x)", ewkern.TanhGrad[float32], ewkern.TanhGrad[float64], "y", "dy", "z"},
		{OpReluGrad, "backprops = gradients * (features > 0), the gradient of Relu (features: its input or output)", ewkern.ReluGrad[float32], ewkern.ReluGrad[float64], "gradients", "features", "backprops"},
		{OpRelu6Grad, "backprops = gradients * (0 < features < 6), the gradient of Relu6 (features: its input or output)", ewkern.Relu6Grad[float32], ewkern.Relu6Grad[float64], "gradients", "features", "backprops"},
	} {
		registry.MustRegister(&registry.OpDef{Name: g.name, Doc: g.doc,
			Inputs: args(g.in0, g.in1), Outputs: args(g.out),
			Kernels: floatKernels(ewGradKernel(g.name, g.loop32), ewGradKernel(g.name, g.loop64)),
			Samples: ewGradSamples(g.name)})
	}

	registry.MustSetGradient(forward.OpAddV2, addGrad)
	registry.MustSetGradient(forward.OpSub, subGrad)
	registry.MustSetGradient(forward.OpMul, mulGrad)
	registry.MustSetGradient(forward.OpRealDiv, realDivGrad)

	registry.MustSetGradient(forward.OpNeg, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return forward.Neg(e, g) }), nil
	})
	// Square: dy * (2 x).
	registry.MustSetGradient(forward.OpSquare, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value {
			x := n.Inputs()[0]
			return forward.Mul(e, g, forward.Mul(e, x, e.Scalar(x.Dtype(), 2)))
		}), nil
	})
	// Sqrt, Rsqrt, Sigmoid, Tanh: the gradient op of the output y and dy.
	for _, o := range []struct {
		op     string
		gradOp func(e registry.Emitter, y, dy registry.Value) registry.Value
	}{{forward.OpSqrt, SqrtGrad}, {forward.OpRsqrt, RsqrtGrad}, {forward.OpSigmoid, SigmoidGrad}, {forward.OpTanh, TanhGrad}} {
		gradOp := o.gradOp
		registry.MustSetGradient(o.op, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
			return unary(e, dy, func(g registry.Value) registry.Value { return gradOp(e, n.Outputs()[0], g) }), nil
		})
	}
	// Exp: dy * y.
	registry.MustSetGradient(forward.OpExp, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return forward.Mul(e, g, n.Outputs()[0]) }), nil
	})
	// Log: dy / x (TensorFlow multiplies by Reciprocal(x)).
	registry.MustSetGradient(forward.OpLog, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return forward.RealDiv(e, g, n.Inputs()[0]) }), nil
	})
	// Relu, Relu6: ReluGrad(dy, y) and Relu6Grad(dy, y), with the output as
	// the features, as current TensorFlow does (same mask as the input's).
	for _, o := range []struct {
		op     string
		gradOp func(e registry.Emitter, gradients, features registry.Value) registry.Value
	}{{forward.OpRelu, ReluGrad}, {forward.OpRelu6, Relu6Grad}} {
		gradOp := o.gradOp
		registry.MustSetGradient(o.op, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
			return unary(e, dy, func(g registry.Value) registry.Value { return gradOp(e, g, n.Outputs()[0]) }), nil
		})
	}

	registry.MustSetGradient(OpSqrtGrad, sqrtGradGrad)
	registry.MustSetGradient(OpRsqrtGrad, rsqrtGradGrad)
	registry.MustSetGradient(OpSigmoidGrad, sigmoidGradGrad)
	registry.MustSetGradient(OpTanhGrad, tanhGradGrad)
	registry.MustSetGradient(OpReluGrad, reluGradGrad(ReluGrad))
	registry.MustSetGradient(OpRelu6Grad, reluGradGrad(Relu6Grad))

	registry.MustSetGradient(forward.OpBroadcastTo, broadcastToGrad)
	registry.MustSetGradient(forward.OpCast, castGrad)
	// L2Loss: x * dy (dy is a scalar).
	registry.MustSetGradient(forward.OpL2Loss, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return forward.Mul(e, n.Inputs()[0], g) }), nil
	})
}

// ewGradKernel returns the kernel of an elementwise gradient op over two
// inputs of the same shape (TensorFlow does not broadcast them); loop
// computes one chunk of the output.
func ewGradKernel[T tensorx.Float](op string, loop func(out, a, b []T)) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, b := in[0], in[1]
		if b.Dtype() != a.Dtype() {
			return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: input 1 has dtype %v, expected %v like input 0", op, b.Dtype(), a.Dtype())
		}
		if !tensorx.SameShape(a.Shape(), b.Shape()) {
			return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: inputs must be the same size, got shapes %s and %s", op, shapeDebugString(a.Shape()), shapeDebugString(b.Shape()))
		}
		out, err := like(kc, a)
		if err != nil {
			return nil, err
		}
		x, y, o := data[T](a), data[T](b), data[T](out)
		if threads := kc.NumThreads(); serial(threads, len(o), ewGrain) {
			loop(o, x, y)
		} else {
			parallel.For(threads, len(o), ewGrain, func(lo, hi int) {
				loop(o[lo:hi], x[lo:hi], y[lo:hi])
			})
		}
		return kc.Results(out), nil
	}
}

// shapeDebugString formats a shape as TensorFlow's TensorShape.DebugString
// does: "[2,3]", "[]" for a scalar.
func shapeDebugString(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// unary returns the one-input gradient f(dy[0]), or nil if no gradient
// flows in.
func unary(e registry.Emitter, dy []registry.Value, f func(g registry.Value) registry.Value) []registry.Value {
	if dy[0] == nil {
		return e.Values(1)
	}
	return vals(e, f(dy[0]))
}

// binaryGrad builds the gradients of a broadcasting binary op: gx(g) and
// gy(g) give the gradients at the output's shape, which are then reduced
// to each input's shape. Only the needed ones are built.
func binaryGrad(e registry.Emitter, n registry.Node, dy []registry.Value,
	gx, gy func(g registry.Value) registry.Value) []registry.Value {
	in := n.Inputs()
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value { return sumToShape(e, gx(g), in[0].Shape()) },
		func(g registry.Value) registry.Value { return sumToShape(e, gy(g), in[1].Shape()) })
}

// pairGrad returns the gradients of a two-input op, ga(dy[0]) and
// gb(dy[0]), building only those n needs (nil for the others, and both nil
// if no gradient flows in).
func pairGrad(e registry.Emitter, n registry.Node, dy []registry.Value, ga, gb func(g registry.Value) registry.Value) []registry.Value {
	out := e.Values(2)
	g := dy[0]
	if g == nil {
		return out
	}
	if n.NeedsGrad(0) {
		out[0] = ga(g)
	}
	if n.NeedsGrad(1) {
		out[1] = gb(g)
	}
	return out
}

func addGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	id := func(g registry.Value) registry.Value { return g }
	return binaryGrad(e, n, dy, id, id), nil
}

func subGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	return binaryGrad(e, n, dy,
		func(g registry.Value) registry.Value { return g },
		func(g registry.Value) registry.Value { return forward.Neg(e, g) }), nil
}

// mulGrad: dx = dy * y, dy_y = x * dy, each summed to its input's shape.
func mulGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x, y := n.Inputs()[0], n.Inputs()[1]
	return binaryGrad(e, n, dy,
		func(g registry.Value) registry.Value { return forward.Mul(e, g, y) },
		func(g registry.Value) registry.Value { return forward.Mul(e, x, g) }), nil
}

// realDivGrad: dx = dy / y, dy_y = dy * ((-x / y) / y).
func realDivGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x, y := n.Inputs()[0], n.Inputs()[1]
	return binaryGrad(e, n, dy,
		func(g registry.Value) registry.Value { return forward.RealDiv(e, g, y) },
		func(g registry.Value) registry.Value {
			q := forward.RealDiv(e, forward.RealDiv(e, forward.Neg(e, x), y), y)
			return forward.Mul(e, g, q)
		}), nil
}

// sqrtGradGrad: z = 0.5 * b / a (a = y, b = dy). With ga = g / a:
// dz/da = -ga * z, dz/db = 0.5 * ga.
func sqrtGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil {
		return e.Values(2), nil
	}
	a, z := n.Inputs()[0], n.Outputs()[0]
	ga := forward.RealDiv(e, dy[0], a) // shared by both gradients
	return pairGrad(e, n, dy,
		func(registry.Value) registry.Value { return forward.Mul(e, forward.Neg(e, ga), z) },
		func(registry.Value) registry.Value { return forward.Mul(e, e.Scalar(a.Dtype(), 0.5), ga) }), nil
}

// rsqrtGradGrad: z = -0.5 * b * a^3. dz/da = -1.5 * g * b * a^2,
// dz/db = RsqrtGrad(a, g).
func rsqrtGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	a, b := n.Inputs()[0], n.Inputs()[1]
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			t := forward.Mul(e, forward.Mul(e, e.Scalar(a.Dtype(), -1.5), g), b)
			return forward.Mul(e, t, forward.Square(e, a))
		},
		func(g registry.Value) registry.Value { return RsqrtGrad(e, a, g) }), nil
}

// sigmoidGradGrad: z = b * a * (1 - a). With gb = g * b:
// dz/da = gb - 2 * gb * a, dz/db = SigmoidGrad(a, g).
func sigmoidGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	a, b := n.Inputs()[0], n.Inputs()[1]
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			gb := forward.Mul(e, g, b)
			return forward.Sub(e, gb, forward.Mul(e, forward.Mul(e, e.Scalar(a.Dtype(), 2), gb), a))
		},
		func(g registry.Value) registry.Value { return SigmoidGrad(e, a, g) }), nil
}

// tanhGradGrad: z = b * (1 - a^2). dz/da = g * -2 * b * a,
// dz/db = TanhGrad(a, g).
func tanhGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	a, b := n.Inputs()[0], n.Inputs()[1]
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			t := forward.Mul(e, forward.Mul(e, g, e.Scalar(a.Dtype(), -2)), b)
			return forward.Mul(e, t, a)
		},
		func(g registry.Value) registry.Value { return TanhGrad(e, a, g) }), nil
}

// reluGradGrad returns the gradient of ReluGrad or Relu6Grad (inputs
// gradients, features): the op is linear in the gradients with the
// features' mask, and piecewise constant in the features, so
// (op(g, features), zeros).
func reluGradGrad(op func(e registry.Emitter, gradients, features registry.Value) registry.Value) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		f := n.Inputs()[1]
		return pairGrad(e, n, dy,
			func(g registry.Value) registry.Value { return op(e, g, f) },
			func(registry.Value) registry.Value { return forward.ZerosLike(e, f) }), nil
	}
}

// broadcastToGrad sums the gradient back to the input's shape; the shape
// input gets none.
func broadcastToGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(2)
	if dy[0] != nil && n.NeedsGrad(0) {
		out[0] = sumToShape(e, dy[0], n.Inputs()[0].Shape())
	}
	return out, nil
}

// castGrad casts the gradient back to the input's dtype when both dtypes
// are floating; otherwise there is no gradient (TensorFlow's _CastGrad).
func castGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	g := dy[0]
	src := n.Inputs()[0].Dtype()
	if g == nil || !isFloat(src) || !isFloat(g.Dtype()) || !n.NeedsGrad(0) {
		return e.Values(1), nil
	}
	attrs := castFloat64
	if src == tensor.Float32 {
		attrs = castFloat32
	}
	return vals(e, forward.Cast(e, attrs, g)), nil
}

// Cast's attrs to the floating dtypes, made once.
var (
	castFloat32 = registry.NewAttrs(forward.CastAttrs{DstT: tensor.Float32})
	castFloat64 = registry.NewAttrs(forward.CastAttrs{DstT: tensor.Float64})
)
