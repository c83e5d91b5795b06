package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Conv2DBackpropInput for int32 (spec/conv2d.md). TensorFlow registers
// int32 CPU kernels for it (tensorflow/core/kernels/
// conv_grad_input_ops_int32.cc; conv_grad_input_ops.cc before) but not for
// Conv2DBackpropFilter. Its int32 kernels, the CPU default
// (Conv2DCustomBackpropInputOp) and the GPU int32 one alike, refuse the
// NCHW format and dilation rates above 1 when the op is built, and the
// CPU one refuses grouped convolutions (filter in_channels other than the
// input depth); strides and SAME/VALID/EXPLICIT padding are accepted.
// The attrs are refused here before the inputs are looked at, like
// TensorFlow's kernel construction.
//
// Arithmetic is int32 and wraps modulo 2^32 (internal/conv's
// BackpropInputInt32). As a plain op it is computed like the float
// kernels; int32 values get no gradients on the tape.

func conv2DBackpropInputInt32Kernel(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = OpConv2DBackpropInput
	win, err := forward.ParseConv2DWindow(op, attrs, registry.ErrUnimplemented)
	if err != nil {
		return nil, err
	}
	a := attrs.(forward.Conv2DAttrs) // ParseConv2DWindow checked the type
	if a.DataFormat == "NCHW" {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Conv2DCustomBackpropInputOp only supports NHWC (TensorFlow's int32 kernels, CPU and GPU; data_format is NCHW)", op)
	}
	if _, ah, aw, _ := win.Axes(); a.Dilations[ah] != 1 || a.Dilations[aw] != 1 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Current libxsmm and customized CPU implementations do not yet support dilation rates larger than 1 (TensorFlow's int32 kernels; dilations are %v)", op, a.Dilations)
	}
	// The shapes are reconciled before the empty-tensor returns, and a
	// grouped problem is refused even when empty, as TensorFlow's CPU
	// kernel does.
	out, od, g, done, err := conv2DBackpropInputPrep[int32](kc, op, win, in, true)
	if err != nil {
		return nil, err
	}
	if g.C != g.CF {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Gradients for grouped convolutions are not supported on CPU. Please file a feature request if you run into this issue. Computed input depth %d doesn't match filter input depth %d (TensorFlow's int32 kernels)", op, g.C, g.CF)
	}
	if done {
		return kc.Results(out), nil
	}
	conv.BackpropInputInt32(od, tensorx.MustSlice[int32](in[1]), tensorx.MustSlice[int32](in[2]), &g.Geom, kc.NumThreads())
	return kc.Results(out), nil
}
