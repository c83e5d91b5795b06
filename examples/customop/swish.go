package main

import (
	"math"

	"github.com/chewxy/math32"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// SwishAttrs are the attributes of myproject.Swish: y = x * sigmoid(beta*x).
// An attr struct names each field after the TensorFlow-style attribute and
// gives its default in a tag (the grammar is in package registry's
// documentation). A field with a default takes it whenever it holds Go's
// zero value, so Beta is a pointer: beta = 0 (y = x/2) is a legal value,
// and nil, not 0, means the default, 1.
type SwishAttrs struct {
	Beta *float64 `tf:"beta" default:"1"`
}

// OpSwish is the op's name. The dot keeps it apart from TensorFlow's names.
const OpSwish = "myproject.Swish"

// The op is registered from outside the library, exactly as tapegrad's own
// ops are: a name with a dot (so it never collides with TensorFlow's), its
// inputs and outputs, attrs, a kernel per dtype, and a gradient.
func init() {
	registry.MustRegister(&registry.OpDef{
		Name:    OpSwish,
		Doc:     "y = x * sigmoid(beta * x)",
		Inputs:  []registry.Arg{{Name: "x"}},
		Outputs: []registry.Arg{{Name: "y"}},
		Attrs:   SwishAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: swishKernel[float32],
			tensor.Float64: swishKernel[float64],
		},
	})
	registry.MustSetGradient(OpSwish, swishGrad)
}

// swishKernel is the forward computation. Kernels get contiguous inputs of
// the dtype they are registered for, and allocate their outputs from the
// caller's allocator (the tape's arena recycles them).
func swishKernel[T float32 | float64](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	beta := *attrs.(SwishAttrs).Beta // normalised attrs: never nil
	if math.IsNaN(beta) || math.IsInf(beta, 0) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "myproject.Swish: beta must be finite, got %v", beta)
	}
	out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	// registry.Elems gives the elements of a tensor of every shape
	// (scalars and empty tensors too) as a slice of the kernel's type.
	x, y := registry.Elems[T](in[0]), registry.Elems[T](out)
	for i, v := range x {
		y[i] = v / (1 + exp(-T(beta)*v))
	}
	return kc.Results(out), nil
}

func exp[T float32 | float64](v T) T {
	if f, ok := any(v).(float32); ok {
		return T(math32.Exp(f))
	}
	return T(math.Exp(float64(v)))
}

// SwishOp is the op's typed builder, the same shape as the builders that
// cmd/genops writes for tapegrad's own ops (forward.Conv2D, forward.Mul,
// ...): an emitter, the attrs with their defaults filled once, the inputs
// by name, the output. Gradient functions (this op's own, or those of ops
// built on it) and tape code call it instead of naming the op by a string,
// so a misspelled op does not compile.
func SwishOp(e registry.Emitter, attrs registry.Attrs[SwishAttrs], x registry.Value) registry.Value {
	return registry.Apply1(e, OpSwish, attrs.Boxed(), x)
}

// swishGrad builds dy * d/dx[x*sigmoid(bx)] = dy * (s + b*x*s*(1-s)),
// s = sigmoid(b*x), only from registered ops, through their typed builders,
// so the gradient is itself differentiable (second order works).
func swishGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	x := n.Inputs()[0]
	beta := e.Scalar(x.Dtype(), *registry.NodeAttrs[SwishAttrs](n).Value().Beta)
	bx := forward.Mul(e, beta, x)
	s := forward.Sigmoid(e, bx)
	oneMinusS := forward.Sub(e, forward.OnesLike(e, s), s)
	t := forward.Mul(e, bx, forward.Mul(e, s, oneMinusS))
	dydx := forward.AddV2(e, s, t)
	grads := e.Values(1)
	grads[0] = forward.Mul(e, dy[0], dydx)
	return grads, nil
}

// Swish applies myproject.Swish on x's tape. The attrs are made once per
// call here; a layer that applies the op on every step makes them once
// when it is built (registry.NewAttrs) and keeps them.
func Swish(x autodiff.Value, beta float64) autodiff.Value {
	t := x.Tape()
	if t == nil {
		return x // the zero Value reports itself as invalid
	}
	return autodiff.ValueOf(SwishOp(t.Emitter(), registry.NewAttrs(SwishAttrs{Beta: registry.Ptr(beta)}), t.Ref(x)))
}
