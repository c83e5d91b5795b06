package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Conv2D with TensorFlow's name, argument order, attrs and validation
// (spec/conv2d.md); its gradient ops Conv2DBackpropInput and
// Conv2DBackpropFilter are registered in package backward, and the
// validation the three share is in conv2d_geometry.go. The kernels
// implement the device-independent semantics (what TensorFlow's GPU
// kernels accept): both data formats, dilations and grouped convolution
// (input depth a multiple of the filter's in_channels), and
// SAME/VALID/EXPLICIT padding. TensorFlow's CPU-only refusals (NCHW,
// dilated or grouped backprops) are not reproduced. int32 (conv2d_int32.go)
// has what TensorFlow's int32 kernels accept: NHWC only.
//
// The loops are internal/conv's (an implicit GEMM over internal/gemm:
// im2col rows read in place from the input, or the input itself for 1x1
// and whole-input filters). NCHW tensors are transposed to NHWC scratch
// and back. Empty tensors follow TensorFlow's kernel: an empty output is
// returned as is, and an output that only padding reaches (an empty
// input) is all zeros.
//
// Steady-state calls allocate nothing on one thread (with the tape's
// recycling allocator): shape arguments are read into stack arrays,
// results go through kc.Results, and internal/conv builds its closures
// only on the multi-threaded paths (conv2d_alloc_test.go).

// Conv2DAttrs are the attributes of Conv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter (TensorFlow's names and defaults).
type Conv2DAttrs struct {
	// Strides are the window strides, 4 values in data_format order; the
	// batch and depth entries must be 1. Required.
	Strides []int `tf:"strides"`
	// UseCudnnOnGPU is accepted for compatibility and has no effect
	// (default true).
	UseCudnnOnGPU *bool `tf:"use_cudnn_on_gpu" default:"true"`
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
	Dilations []int `tf:"dilations" default:"[1,1,1,1]"`
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: "Conv2D",
		Doc: "2-D cross-correlation of input [N,H,W,C] (or NCHW) with filter [KH,KW,Cf,O]; " +
			"grouped when C is a multiple of Cf",
		Inputs:  args("input", "filter"),
		Outputs: args("output"),
		Attrs:   Conv2DAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: conv2DKernel[float32],
			tensor.Float64: conv2DKernel[float64],
			tensor.Int32:   conv2DInt32Kernel, // conv2d_int32.go
		},
		Samples: conv2DSamples,
	})
}

func conv2DKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "Conv2D"
	win, err := ParseConv2DWindow(op, attrs, registry.ErrUnimplemented)
	if err != nil {
		return nil, err
	}
	x, f := in[0], in[1]
	if f.Dtype() != x.Dtype() {
		return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: filter has dtype %v, expected %v like input", op, f.Dtype(), x.Dtype())
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
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 {
		// Non-empty output from an empty input: padding only.
		clear(od)
		return kc.Results(out), nil
	}
	if tensorx.Len(f) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: filter must not have zero elements (i.e. all dimensions must be non-zero), got filter shape %v", op, f.Shape())
	}
	if err := conv2DForward(kc, &g, data[T](x), data[T](f), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// conv2DForward computes Conv2D's output; NCHW problems run in NHWC
// scratch.
func conv2DForward[T tensorx.Float](kc *registry.KernelCtx, g *Conv2DGeometry, x, f, out []T) error {
	threads := kc.NumThreads()
	if !g.NCHW() {
		conv.Forward(out, x, f, &g.Geom, threads)
		return nil
	}
	xt, err := registry.Scratch[T](kc, len(x), false)
	if err != nil {
		return err
	}
	ot, err := registry.Scratch[T](kc, len(out), false)
	if err != nil {
		return err
	}
	conv.ToNHWC(xt, x, g.N, g.C, g.H, g.W)
	conv.Forward(ot, xt, f, &g.Geom, threads)
	conv.ToNCHW(out, ot, g.N, g.O, g.OH, g.OW)
	return nil
}
