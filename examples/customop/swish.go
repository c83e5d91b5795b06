package main

import (
	"math"

	"github.com/chewxy/math32"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/registry"
)

// SwishAttrs are the attributes of myproject.Swish: y = x * sigmoid(beta*x).
// An attr struct names each field after the TensorFlow-style attribute and
// gives its default in a tag; the zero value of Beta means the default, 1.
type SwishAttrs struct {
	Beta float64 `tf:"beta" default:"1"`
}

// The op is registered from outside the library, exactly as tapegrad's own
// ops are: a name with a dot (so it never collides with TensorFlow's), its
// inputs and outputs, attrs, a kernel per dtype, and a gradient.
func init() {
	registry.MustRegister(&registry.OpDef{
		Name:    "myproject.Swish",
		Doc:     "y = x * sigmoid(beta * x)",
		Inputs:  []registry.Arg{{Name: "x"}},
		Outputs: []registry.Arg{{Name: "y"}},
		Attrs:   SwishAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: swishKernel[float32],
			tensor.Float64: swishKernel[float64],
		},
	})
	registry.MustSetGradient("myproject.Swish", swishGrad)
}

// swishKernel is the forward computation. Kernels get contiguous inputs of
// the dtype they are registered for, and allocate their outputs from the
// caller's allocator (the tape's arena recycles them).
func swishKernel[T float32 | float64](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	beta := attrs.(SwishAttrs).Beta
	if math.IsNaN(beta) || math.IsInf(beta, 0) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "myproject.Swish: beta must be finite, got %v", beta)
	}
	out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	x, y := elems[T](in[0]), elems[T](out)
	for i, v := range x {
		y[i] = v / (1 + exp(-T(beta)*v))
	}
	return []*tensor.Dense{out}, nil
}

// elems returns the backing slice of a float32 or float64 tensor. The typed
// accessors work for every shape, scalars and empty tensors included (unlike
// Dense.Data).
func elems[T float32 | float64](d *tensor.Dense) []T {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return any(d.Float32s()).([]T)
	}
	return any(d.Float64s()).([]T)
}

func exp[T float32 | float64](v T) T {
	if f, ok := any(v).(float32); ok {
		return T(math32.Exp(f))
	}
	return T(math.Exp(float64(v)))
}

// swishGrad builds dy * d/dx[x*sigmoid(bx)] = dy * (s + b*x*s*(1-s)),
// s = sigmoid(b*x), only from registered ops, so the gradient is itself
// differentiable (second order works).
func swishGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x := n.Inputs()[0]
	beta := e.Scalar(x.Dtype(), n.Attrs().(SwishAttrs).Beta)
	bx := e.Apply("Mul", nil, beta, x)[0]
	s := e.Apply("Sigmoid", nil, bx)[0]
	one := e.Apply("OnesLike", nil, s)[0]
	oneMinusS := e.Apply("Sub", nil, one, s)[0]
	t := e.Apply("Mul", nil, bx, e.Apply("Mul", nil, s, oneMinusS)[0])[0]
	dydx := e.Apply("AddV2", nil, s, t)[0]
	return []registry.Value{e.Apply("Mul", nil, dy[0], dydx)[0]}, nil
}

// Swish applies myproject.Swish on x's tape.
func Swish(x autodiff.Value, beta float64) autodiff.Value {
	return x.Tape().Apply("myproject.Swish", SwishAttrs{Beta: beta}, x)[0]
}
