package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Conv2D for int32 (spec/conv2d.md). TensorFlow registers int32 CPU
// kernels for Conv2D (tensorflow/core/kernels/conv_ops_int32.cc; in
// conv_ops.cc before the 2023 split) and Conv2DBackpropInput (package
// backward), not for Conv2DBackpropFilter or the depthwise ops. Its int32
// Conv2D takes strides, dilations, SAME/VALID/EXPLICIT padding and grouped
// convolution (the CPU kernel's grouped path is generic in the element
// type), and refuses NCHW, on the CPU and in its int32 GPU kernel alike,
// after the shape checks and the empty-tensor returns, as here.
//
// Arithmetic is int32 and wraps modulo 2^32 (internal/conv's
// ForwardInt32): the exact integer result reduced modulo 2^32. int32
// values are not differentiable: the tape computes no gradient for them
// (only float inputs need gradients, and only float targets have them).

func conv2DInt32Kernel(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "Conv2D"
	win, err := ParseConv2DWindow(op, attrs, registry.ErrUnimplemented)
	if err != nil {
		return nil, err
	}
	x, f := in[0], in[1]
	if f.Dtype() != x.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: filter has dtype %v, expected %v like input", op, f.Dtype(), x.Dtype())
	}
	g, err := conv2DForwardGeom(op, win, x.Shape(), f.Shape())
	if err != nil {
		return nil, err
	}
	osz := g.outShape()
	out, err := Conv2DOutput(kc, op, x.Dtype(), osz[:])
	if err != nil {
		return nil, err
	}
	od := data[int32](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 {
		// Non-empty output from an empty input: padding only.
		clear(od)
		return kc.Results(out), nil
	}
	if g.NCHW() {
		return nil, registry.Errorf(registry.ErrUnimplemented, "%s: The Conv2D op currently only supports the NHWC tensor format for int32 (TensorFlow's int32 kernels, CPU and GPU). The op was given the format: NCHW", op)
	}
	if tensorx.Len(f) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: filter must not have zero elements (i.e. all dimensions must be non-zero), got filter shape %v", op, f.Shape())
	}
	conv.ForwardInt32(od, data[int32](x), data[int32](f), &g.Geom, kc.NumThreads())
	return kc.Results(out), nil
}
