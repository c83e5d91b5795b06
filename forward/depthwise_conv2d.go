package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/dwconv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// DepthwiseConv2dNative with TensorFlow's name, argument order, attrs and
// validation (spec/depthwise_conv2d.md). Output channel c·M + m holds
// input channel c filtered by filter[:, :, c, m]. Its backprops,
// DepthwiseConv2dNativeBackpropInput and
// DepthwiseConv2dNativeBackpropFilter, are registered in package backward;
// the geometry the three share is in depthwise_conv2d_geometry.go, their
// loops in internal/dwconv.
//
// Beyond TensorFlow's CPU kernels, and as the op's documentation, its shape
// function and XLA define the op, the family implements:
//   - dilations, in all three ops (TensorFlow's CPU/GPU forward kernels
//     refuse them and its backprop kernels ignore them; spec §6);
//   - unequal row and column strides (TensorFlow refuses them; the math is
//     the obvious one);
//   - NCHW on CPU.
//
// Computation (internal/dwconv): direct NHWC loops, no im2col (depthwise
// convolution is memory-bound); NCHW tensors are transposed to NHWC
// scratch and back. float32 problems with multiplier 1, a 3x3 filter,
// unit column dilation, column stride 1 or 2 and at least 8 channels run
// AVX2/FMA kernels where the CPU has them; their sums are fused
// multiply-adds in a fixed order, so they differ from the Go loops in the
// last bits. Results are bit-identical for any thread count.

// DepthwiseConv2dAttrs are the attributes of DepthwiseConv2dNative,
// DepthwiseConv2dNativeBackpropInput and DepthwiseConv2dNativeBackpropFilter
// (TensorFlow's names and defaults; unlike Conv2D there is no
// use_cudnn_on_gpu).
type DepthwiseConv2dAttrs struct {
	// Strides are the window strides, 4 values in data_format order; the
	// batch and depth entries must be 1. Required. The row and column
	// strides may differ (TensorFlow's kernels require them equal).
	Strides []int `tf:"strides"`
	// Padding is "SAME", "VALID" or "EXPLICIT". Required.
	Padding string `tf:"padding" allowed:"SAME,VALID,EXPLICIT"`
	// ExplicitPaddings are the (before, after) paddings of the 4 axes in
	// data_format order, 8 values, used only with Padding "EXPLICIT"; the
	// batch and depth pairs must be 0.
	ExplicitPaddings []int `tf:"explicit_paddings"`
	// DataFormat is "NHWC" (default) or "NCHW".
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW"`
	// Dilations are the filter dilation rates, 4 values in data_format
	// order (default [1,1,1,1]); the batch and depth entries must be 1.
	// They are applied in all three ops, as in Conv2D (TensorFlow's own
	// kernels refuse or ignore them).
	Dilations []int `tf:"dilations" default:"[1,1,1,1]"`
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: "DepthwiseConv2dNative",
		Doc: "depthwise 2-D cross-correlation of input [N,H,W,C] (or NCHW) with filter [KH,KW,C,M]; " +
			"output channel c*M+m is channel c filtered by filter[:,:,c,m]",
		Inputs:  args("input", "filter"),
		Outputs: args("output"),
		Attrs:   DepthwiseConv2dAttrs{},
		Kernels: floatKernels(dwForwardKernel[float32], dwForwardKernel[float64]),
		Samples: depthwiseConv2dSamples,
	})
}

func dwForwardKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "DepthwiseConv2dNative"
	win, err := dwWindow(op, attrs)
	if err != nil {
		return nil, err
	}
	x, f := in[0], in[1]
	if f.Dtype() != x.Dtype() {
		return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: filter has dtype %v, expected %v like input", op, f.Dtype(), x.Dtype())
	}
	g, err := dwForwardGeom(op, win, x.Shape(), f.Shape())
	if err != nil {
		return nil, err
	}
	os := win.layout.dims(g.N, g.OH, g.OW, g.OC())
	out, err := DepthwiseConv2dOutput(kc, op, x.Dtype(), os[:])
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 || tensorx.Len(f) == 0 {
		// Only padding, or an empty filter window: empty sums.
		clear(od)
		return kc.Results(out), nil
	}
	w, err := DepthwiseConv2dWork[T](kc, dwconv.ForwardWork[T](&g))
	if err != nil {
		return nil, err
	}
	dwconv.Forward(od, data[T](x), data[T](f), &g, kc.NumThreads(), &w)
	return kc.Results(out), nil
}
