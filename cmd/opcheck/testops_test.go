package main

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Ops registered only in this test binary (names with a dot), used by
// testdata/testops/*.json:
//
//	opcheck.Scale(x) -> y = alpha*x (or -alpha*x with mode "negate"); gradient Scale(dy)
//	opcheck.Pair(x, k) -> (y = x, z = alpha*x, n = len(x)+k as an int64 scalar)
//	opcheck.Refuse(x) -> x, or an InvalidArgument error if any element is negative
//	opcheck.Panic(x) -> the kernel panics
//	opcheck.GradPanic(x) -> x; the gradient function panics

type scaleAttrs struct {
	Alpha float64 `tf:"alpha" default:"2"`
	Mode  string  `tf:"mode" default:"plain" allowed:"plain,negate"`
}

type pairAttrs struct {
	Alpha float64 `tf:"alpha" default:"2"`
}

func floats(k32, k64 registry.Kernel) map[tensor.Dtype]registry.Kernel {
	return map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64}
}

func scaled[T tensorx.Float](kc *registry.KernelCtx, x *tensor.Dense, alpha float64) (*tensor.Dense, error) {
	xs, err := tensorx.Slice[T](x)
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(x.Dtype(), x.Shape()...)
	if err != nil {
		return nil, err
	}
	o := tensorx.MustSlice[T](out)
	for i, v := range xs {
		o[i] = T(alpha) * v
	}
	return out, nil
}

func scaleKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(scaleAttrs)
	alpha := a.Alpha
	if a.Mode == "negate" {
		alpha = -alpha
	}
	out, err := scaled[T](kc, in[0], alpha)
	if err != nil {
		return nil, err
	}
	return []*tensor.Dense{out}, nil
}

func pairKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(pairAttrs)
	k, err := tensorx.Slice[int32](in[1])
	if err != nil || len(in[1].Shape()) != 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "opcheck.Pair: k must be an int32 scalar, got %v %v", in[1].Dtype(), in[1].Shape())
	}
	y, err := scaled[T](kc, in[0], 1)
	if err != nil {
		return nil, err
	}
	z, err := scaled[T](kc, in[0], a.Alpha)
	if err != nil {
		return nil, err
	}
	n, err := kc.Output(tensor.Int64)
	if err != nil {
		return nil, err
	}
	tensorx.MustSlice[int64](n)[0] = int64(tensorx.Len(in[0])) + int64(k[0])
	return []*tensor.Dense{y, z, n}, nil
}

func refuseKernel[T tensorx.Float](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	for _, v := range tensorx.MustSlice[T](in[0]) {
		if v < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "opcheck.Refuse: input must be non-negative, got %v", v)
		}
	}
	out, err := scaled[T](kc, in[0], 1)
	return []*tensor.Dense{out}, err
}

func panicKernel(*registry.KernelCtx, any, []*tensor.Dense) ([]*tensor.Dense, error) {
	panic("opcheck.Panic: boom")
}

func init() {
	one := []registry.Arg{{Name: "x"}}
	registry.MustRegister(&registry.OpDef{Name: "opcheck.Scale", Doc: "y = alpha*x",
		Inputs: one, Outputs: []registry.Arg{{Name: "y"}}, Attrs: scaleAttrs{},
		Kernels: floats(scaleKernel[float32], scaleKernel[float64])})
	registry.MustSetGradient("opcheck.Scale", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if dy[0] == nil || !n.NeedsGrad(0) {
			return []registry.Value{nil}, nil
		}
		return e.Apply("opcheck.Scale", n.Attrs(), dy[0]), nil
	})

	registry.MustRegister(&registry.OpDef{Name: "opcheck.Pair", Doc: "y = x, z = alpha*x, n = len(x)+k",
		Inputs: []registry.Arg{{Name: "x"}, {Name: "k"}}, Outputs: []registry.Arg{{Name: "y"}, {Name: "z"}, {Name: "n"}},
		Attrs: pairAttrs{}, Kernels: floats(pairKernel[float32], pairKernel[float64])})
	registry.MustSetGradient("opcheck.Pair", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if !n.NeedsGrad(0) {
			return []registry.Value{nil, nil}, nil
		}
		var parts []registry.Value
		if dy[0] != nil {
			parts = append(parts, dy[0])
		}
		if dy[1] != nil {
			alpha := n.Attrs().(pairAttrs).Alpha
			parts = append(parts, e.Apply("opcheck.Scale", scaleAttrs{Alpha: alpha}, dy[1])[0])
		}
		switch len(parts) {
		case 0:
			return []registry.Value{nil, nil}, nil
		case 1:
			return []registry.Value{parts[0], nil}, nil
		}
		return []registry.Value{e.Apply("AddN", nil, parts...)[0], nil}, nil
	})

	registry.MustRegister(&registry.OpDef{Name: "opcheck.Refuse", Doc: "y = x for x >= 0, an error otherwise",
		Inputs: one, Outputs: []registry.Arg{{Name: "y"}}, Kernels: floats(refuseKernel[float32], refuseKernel[float64])})
	registry.MustNotDifferentiable("opcheck.Refuse")

	registry.MustRegister(&registry.OpDef{Name: "opcheck.Panic", Doc: "a kernel that panics",
		Inputs: one, Outputs: []registry.Arg{{Name: "y"}}, Kernels: floats(panicKernel, panicKernel)})
	registry.MustNotDifferentiable("opcheck.Panic")

	registry.MustRegister(&registry.OpDef{Name: "opcheck.GradPanic", Doc: "y = x with a gradient function that panics",
		Inputs: one, Outputs: []registry.Arg{{Name: "y"}}, Kernels: floats(refuseKernel[float32], refuseKernel[float64])})
	registry.MustSetGradient("opcheck.GradPanic", func(registry.Emitter, registry.Node, []registry.Value) ([]registry.Value, error) {
		panic("opcheck.GradPanic: gradient boom")
	})
}
