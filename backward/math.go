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
		{"SqrtGrad", "z = dy * 0.5 / y (0 where dy == 0), the gradient of y = sqrt(x)", ewkern.SqrtGrad[float32], ewkern.SqrtGrad[float64], "y", "dy", "z"},
		{"RsqrtGrad", "z = -0.5 * dy * y^3 (0 where dy == 0), the gradient of y = rsqrt(x)", ewkern.RsqrtGrad[float32], ewkern.RsqrtGrad[float64], "y", "dy", "z"},
		{"SigmoidGrad", "z = dy * y * (1 - y), the gradient of y = sigmoid(x)", ewkern.SigmoidGrad[float32], ewkern.SigmoidGrad[float64], "y", "dy", "z"},
		{"TanhGrad", "z = dy * (1 - y^2), the gradient of y = tanh(x)", ewkern.TanhGrad[float32], ewkern.TanhGrad[float64], "y", "dy", "z"},
		{"ReluGrad", "backprops = gradients * (features > 0), the gradient of Relu (features: its input or output)", ewkern.ReluGrad[float32], ewkern.ReluGrad[float64], "gradients", "features", "backprops"},
		{"Relu6Grad", "backprops = gradients * (0 < features < 6), the gradient of Relu6 (features: its input or output)", ewkern.Relu6Grad[float32], ewkern.Relu6Grad[float64], "gradients", "features", "backprops"},
	} {
		registry.MustRegister(&registry.OpDef{Name: g.name, Doc: g.doc,
			Inputs: args(g.in0, g.in1), Outputs: args(g.out),
			Kernels: floatKernels(ewGradKernel(g.name, g.loop32), ewGradKernel(g.name, g.loop64)),
			Samples: ewGradSamples(g.name)})
	}

	registry.MustSetGradient("AddV2", addGrad)
	registry.MustSetGradient("Sub", subGrad)
	registry.MustSetGradient("Mul", mulGrad)
	registry.MustSetGradient("RealDiv", realDivGrad)

	registry.MustSetGradient("Neg", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return op1(e, "Neg", nil, g) }), nil
	})
	// Square: dy * (2 x).
	registry.MustSetGradient("Square", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value {
			x := n.Inputs()[0]
			return op1(e, "Mul", nil, g, op1(e, "Mul", nil, x, e.Scalar(x.Dtype(), 2)))
		}), nil
	})
	// Sqrt, Rsqrt, Sigmoid, Tanh: the gradient op of the output y and dy.
	for op, gradOp := range map[string]string{"Sqrt": "SqrtGrad", "Rsqrt": "RsqrtGrad", "Sigmoid": "SigmoidGrad", "Tanh": "TanhGrad"} {
		registry.MustSetGradient(op, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
			return unary(e, dy, func(g registry.Value) registry.Value { return op1(e, gradOp, nil, n.Outputs()[0], g) }), nil
		})
	}
	// Exp: dy * y.
	registry.MustSetGradient("Exp", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return op1(e, "Mul", nil, g, n.Outputs()[0]) }), nil
	})
	// Log: dy / x (TensorFlow multiplies by Reciprocal(x)).
	registry.MustSetGradient("Log", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return op1(e, "RealDiv", nil, g, n.Inputs()[0]) }), nil
	})
	// Relu, Relu6: ReluGrad(dy, y) and Relu6Grad(dy, y), with the output as
	// the features, as current TensorFlow does (same mask as the input's).
	for op, gradOp := range map[string]string{"Relu": "ReluGrad", "Relu6": "Relu6Grad"} {
		registry.MustSetGradient(op, func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
			return unary(e, dy, func(g registry.Value) registry.Value { return op1(e, gradOp, nil, g, n.Outputs()[0]) }), nil
		})
	}

	registry.MustSetGradient("SqrtGrad", sqrtGradGrad)
	registry.MustSetGradient("RsqrtGrad", rsqrtGradGrad)
	registry.MustSetGradient("SigmoidGrad", sigmoidGradGrad)
	registry.MustSetGradient("TanhGrad", tanhGradGrad)
	registry.MustSetGradient("ReluGrad", reluGradGrad("ReluGrad"))
	registry.MustSetGradient("Relu6Grad", reluGradGrad("Relu6Grad"))

	registry.MustSetGradient("BroadcastTo", broadcastToGrad)
	registry.MustSetGradient("Cast", castGrad)
	// L2Loss: x * dy (dy is a scalar).
	registry.MustSetGradient("L2Loss", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return unary(e, dy, func(g registry.Value) registry.Value { return op1(e, "Mul", nil, n.Inputs()[0], g) }), nil
	})
}

// ewGradKernel returns the kernel of an elementwise gradient op over two
// inputs of the same shape (TensorFlow does not broadcast them); loop
// computes one chunk of the output.
func ewGradKernel[T tensorx.Float](op string, loop func(out, a, b []T)) registry.Kernel {
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, b := in[0], in[1]
		if b.Dtype() != a.Dtype() {
			return nil, registry.Errorf(registry.ErrDtype, "%s: input 1 has dtype %v, expected %v like input 0", op, b.Dtype(), a.Dtype())
		}
		if !tensorx.SameShape(a.Shape(), b.Shape()) {
			return nil, registry.Errorf(registry.ErrShape, "%s: inputs must be the same size, got shapes %s and %s", op, shapeDebugString(a.Shape()), shapeDebugString(b.Shape()))
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
		func(g registry.Value) registry.Value { return op1(e, "Neg", nil, g) }), nil
}

// mulGrad: dx = dy * y, dy_y = x * dy, each summed to its input's shape.
func mulGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x, y := n.Inputs()[0], n.Inputs()[1]
	return binaryGrad(e, n, dy,
		func(g registry.Value) registry.Value { return op1(e, "Mul", nil, g, y) },
		func(g registry.Value) registry.Value { return op1(e, "Mul", nil, x, g) }), nil
}

// realDivGrad: dx = dy / y, dy_y = dy * ((-x / y) / y).
func realDivGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x, y := n.Inputs()[0], n.Inputs()[1]
	return binaryGrad(e, n, dy,
		func(g registry.Value) registry.Value { return op1(e, "RealDiv", nil, g, y) },
		func(g registry.Value) registry.Value {
			q := op1(e, "RealDiv", nil, op1(e, "RealDiv", nil, op1(e, "Neg", nil, x), y), y)
			return op1(e, "Mul", nil, g, q)
		}), nil
}

// sqrtGradGrad: z = 0.5 * b / a (a = y, b = dy). With ga = g / a:
// dz/da = -ga * z, dz/db = 0.5 * ga.
func sqrtGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil {
		return e.Values(2), nil
	}
	a, z := n.Inputs()[0], n.Outputs()[0]
	ga := op1(e, "RealDiv", nil, dy[0], a) // shared by both gradients
	return pairGrad(e, n, dy,
		func(registry.Value) registry.Value { return op1(e, "Mul", nil, op1(e, "Neg", nil, ga), z) },
		func(registry.Value) registry.Value { return op1(e, "Mul", nil, e.Scalar(a.Dtype(), 0.5), ga) }), nil
}

// rsqrtGradGrad: z = -0.5 * b * a^3. dz/da = -1.5 * g * b * a^2,
// dz/db = RsqrtGrad(a, g).
func rsqrtGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	a, b := n.Inputs()[0], n.Inputs()[1]
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			t := op1(e, "Mul", nil, op1(e, "Mul", nil, e.Scalar(a.Dtype(), -1.5), g), b)
			return op1(e, "Mul", nil, t, op1(e, "Square", nil, a))
		},
		func(g registry.Value) registry.Value { return op1(e, "RsqrtGrad", nil, a, g) }), nil
}

// sigmoidGradGrad: z = b * a * (1 - a). With gb = g * b:
// dz/da = gb - 2 * gb * a, dz/db = SigmoidGrad(a, g).
func sigmoidGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	a, b := n.Inputs()[0], n.Inputs()[1]
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			gb := op1(e, "Mul", nil, g, b)
			return op1(e, "Sub", nil, gb, op1(e, "Mul", nil, op1(e, "Mul", nil, e.Scalar(a.Dtype(), 2), gb), a))
		},
		func(g registry.Value) registry.Value { return op1(e, "SigmoidGrad", nil, a, g) }), nil
}

// tanhGradGrad: z = b * (1 - a^2). dz/da = g * -2 * b * a,
// dz/db = TanhGrad(a, g).
func tanhGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	a, b := n.Inputs()[0], n.Inputs()[1]
	return pairGrad(e, n, dy,
		func(g registry.Value) registry.Value {
			t := op1(e, "Mul", nil, op1(e, "Mul", nil, g, e.Scalar(a.Dtype(), -2)), b)
			return op1(e, "Mul", nil, t, a)
		},
		func(g registry.Value) registry.Value { return op1(e, "TanhGrad", nil, a, g) }), nil
}

// reluGradGrad returns the gradient of ReluGrad or Relu6Grad (inputs
// gradients, features): the op is linear in the gradients with the
// features' mask, and piecewise constant in the features, so
// (op(g, features), zeros).
func reluGradGrad(op string) registry.GradFunc {
	return func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		f := n.Inputs()[1]
		return pairGrad(e, n, dy,
			func(g registry.Value) registry.Value { return op1(e, op, nil, g, f) },
			func(registry.Value) registry.Value { return op1(e, "ZerosLike", nil, f) }), nil
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
	return vals(e, op1(e, "Cast", forward.CastAttrs{DstT: src}, g)), nil
}
