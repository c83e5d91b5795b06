package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/poolkern"
	"github.com/tapegrad/tapegrad/registry"
)

// MaxPool and AvgPool (docs/spec/pool.md): 2-D pooling of a 4-D input in
// NHWC or NCHW over ksize windows moved by strides (both 4 entries in
// data_format order, 1 in the batch and depth dimensions), VALID or SAME
// padding (TensorFlow's output-size and padding rules, the extra padding
// after). Padding is never read: MaxPool takes the maximum of the window's
// input elements, AvgPool divides their sum by their count (TensorFlow's
// CPU kernels; PyTorch's count_include_pad=False). tapegrad implements
// NCHW too, which TensorFlow's CPU kernels refuse (its GPU kernels take
// it). MaxPool's EXPLICIT padding and depthwise pooling are not
// implemented. Gradients: MaxPoolGrad, MaxPoolGradGrad and AvgPoolGrad in
// package backward.

// PoolAttrs are the attributes of MaxPool, AvgPool and their gradient ops
// (MaxPoolGrad, MaxPoolGradGrad, AvgPoolGrad).
type PoolAttrs struct {
	// Ksize is the window size per dimension, in data_format order
	// (required, 4 entries, 1 for N and C).
	Ksize []int `tf:"ksize"`
	// Strides is the window's step per dimension, in data_format order
	// (required, 4 entries, 1 for N and C).
	Strides []int `tf:"strides"`
	// Padding is VALID or SAME (required). TensorFlow's MaxPool also
	// accepts EXPLICIT, which tapegrad does not implement.
	Padding string `tf:"padding" allowed:"SAME,VALID,EXPLICIT"`
	// ExplicitPaddings is MaxPool's explicit_paddings attr (for EXPLICIT
	// padding only; must be empty otherwise).
	ExplicitPaddings []int `tf:"explicit_paddings"`
	// DataFormat is NHWC (default) or NCHW.
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW"`
}

func init() {
	registry.MustRegister(&registry.OpDef{Name: "MaxPool",
		Doc:    "output = the maximum of each ksize window of input [N,H,W,C] (or NCHW) moved by strides, VALID or SAME padding (padding never read)",
		Inputs: args("input"), Outputs: args("output"), Attrs: PoolAttrs{},
		Kernels: floatKernels(maxPoolKernel[float32], maxPoolKernel[float64]),
		Samples: maxPoolSamples})
	registry.MustRegister(&registry.OpDef{Name: "AvgPool",
		Doc:    "output = the mean of each ksize window of value [N,H,W,C] (or NCHW) moved by strides, over the window's input elements only",
		Inputs: args("value"), Outputs: args("output"), Attrs: PoolAttrs{},
		Kernels: floatKernels(avgPoolKernel[float32], avgPoolKernel[float64]),
		Samples: avgPoolSamples})
}

// ParsePool validates the pooling attrs a of op for an input of the given
// shape, with TensorFlow's checks and messages, and returns the geometry.
func ParsePool(op string, a PoolAttrs, shape []int) (poolkern.Geom, error) {
	var g poolkern.Geom
	if len(a.Ksize) != 4 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: Sliding window ksize field must specify 4 dimensions (ksize=%v)", op, a.Ksize)
	}
	if len(a.Strides) != 4 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: Sliding window stride field must specify 4 dimensions (strides=%v)", op, a.Strides)
	}
	l := convLayoutOf(a.DataFormat)
	if a.Ksize[l.n] != 1 || a.Strides[l.n] != 1 {
		return g, registry.Errorf(registry.ErrUnimplemented, "%s: Pooling is not yet supported on the batch dimension.", op)
	}
	if a.Ksize[l.c] != 1 || a.Strides[l.c] != 1 {
		return g, registry.Errorf(registry.ErrUnimplemented, "%s: pooling across the depth dimension is not implemented (ksize=%v, strides=%v)", op, a.Ksize, a.Strides)
	}
	for _, d := range []int{l.h, l.w} {
		if a.Ksize[d] <= 0 {
			return g, registry.Errorf(registry.ErrInvalidArgument, "%s: Sliding window ksize for dimension %d was %d; it must be positive", op, d, a.Ksize[d])
		}
		if a.Strides[d] <= 0 {
			return g, registry.Errorf(registry.ErrInvalidArgument, "%s: Sliding window stride for dimension %d was %d; it must be positive", op, d, a.Strides[d])
		}
		if err := convCheckFits(op, "window", max(a.Ksize[d], a.Strides[d])); err != nil {
			return g, err
		}
	}
	switch {
	case a.Padding == "EXPLICIT":
		return g, registry.Errorf(registry.ErrUnimplemented, "%s: EXPLICIT padding is not implemented (use SAME or VALID)", op)
	case len(a.ExplicitPaddings) != 0:
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: explicit_paddings attribute must be empty if the padding attribute is not EXPLICIT (padding=%s, explicit_paddings=%v)", op, a.Padding, a.ExplicitPaddings)
	}
	if len(shape) != 4 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: tensor_in must be 4-dimensional, got shape %s", op, shapeDebugString(shape))
	}
	g = poolkern.Geom{NCHW: l.nchw(), N: shape[l.n], H: shape[l.h], W: shape[l.w], C: shape[l.c],
		KH: a.Ksize[l.h], KW: a.Ksize[l.w], SH: a.Strides[l.h], SW: a.Strides[l.w]}
	var err error
	if g.OH, g.PadT, _, err = convOutputSize(op, g.H, g.KH, 1, g.SH, a.Padding, 0, 0); err != nil {
		return g, err
	}
	if g.OW, g.PadL, _, err = convOutputSize(op, g.W, g.KW, 1, g.SW, a.Padding, 0, 0); err != nil {
		return g, err
	}
	return g, nil
}

// PoolOutShape returns the output shape of geometry g in its layout.
func PoolOutShape(g poolkern.Geom) [4]int {
	if g.NCHW {
		return [4]int{g.N, g.C, g.OH, g.OW}
	}
	return [4]int{g.N, g.OH, g.OW, g.C}
}

// poolForward runs a pooling loop on in[0] with the op's attrs.
func poolForward[T poolkern.Float](op string, kc *registry.KernelCtx, attrs any, in []*tensor.Dense,
	loop func(threads int, dst, x []T, g poolkern.Geom)) ([]*tensor.Dense, error) {
	x := in[0]
	g, err := ParsePool(op, attrs.(PoolAttrs), x.Shape())
	if err != nil {
		return nil, err
	}
	s := PoolOutShape(g)
	out, err := kc.Output(x.Dtype(), s[:]...)
	if err != nil {
		return nil, err
	}
	loop(kc.NumThreads(), data[T](out), data[T](x), g)
	return kc.Results(out), nil
}

func maxPoolKernel[T poolkern.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return poolForward("MaxPool", kc, attrs, in, poolkern.MaxPool[T])
}

func avgPoolKernel[T poolkern.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	return poolForward("AvgPool", kc, attrs, in, poolkern.AvgPool[T])
}
