package autodiff

import (
	"github.com/tapegrad/tapegrad/backward"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the pooling family (TensorFlow's MaxPool, AvgPool,
// MaxPoolGrad and AvgPoolGrad; see forward.PoolAttrs and
// docs/spec/pool.md). Each op runs on the tape of its first Value
// argument that has one.

// MaxPool returns the maximum of each window of x [N,H,W,C] (or NCHW by
// attrs.DataFormat): attrs.Ksize and attrs.Strides in data-format order,
// padding VALID or SAME (padding is never part of a window). The gradient
// goes to each window's first maximum in row-major order.
func MaxPool(x Value, attrs forward.PoolAttrs) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.MaxPool(t.Emitter(), registry.NewAttrs(attrs), t.box(x)))
}

// AvgPool returns the mean of each window of x, over the window's input
// elements only (with SAME padding, border windows average fewer
// elements), with the attrs of MaxPool.
func AvgPool(x Value, attrs forward.PoolAttrs) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.AvgPool(t.Emitter(), registry.NewAttrs(attrs), t.box(x)))
}

// MaxPoolGrad applies TensorFlow's MaxPoolGrad: the gradient of MaxPool
// with respect to its input origInput, given its output origOutput and
// dy, the gradient of the output. It is differentiable with respect to dy
// (MaxPoolGradGrad); origInput and origOutput get zero gradient.
func MaxPoolGrad(origInput, origOutput, dy Value, attrs forward.PoolAttrs) Value {
	t := tapeOf(origInput, origOutput, dy)
	if t == nil {
		return Value{}
	}
	return ValueOf(backward.MaxPoolGrad(t.Emitter(), registry.NewAttrs(attrs), t.box(origInput), t.box(origOutput), t.box(dy)))
}

// AvgPoolGrad applies TensorFlow's AvgPoolGrad: the gradient of AvgPool
// with respect to an input of shape origShape (4 values), given dy, the
// gradient of its output. It is differentiable with respect to dy.
func AvgPoolGrad(origShape []int, dy Value, attrs forward.PoolAttrs) Value {
	t := dy.t
	if t == nil {
		return Value{}
	}
	s, ok := sizeInts(t, backward.OpAvgPoolGrad, 0, origShape)
	if !ok {
		return s
	}
	return ValueOf(backward.AvgPoolGrad(t.Emitter(), registry.NewAttrs(attrs), t.box(s), t.box(dy)))
}
