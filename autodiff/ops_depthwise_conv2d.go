package autodiff

import (
	"github.com/tapegrad/tapegrad/backward"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the DepthwiseConv2dNative family (TensorFlow's
// DepthwiseConv2dNative, DepthwiseConv2dNativeBackpropInput and
// DepthwiseConv2dNativeBackpropFilter; see forward.DepthwiseConv2dAttrs for
// the attributes). Each op runs on the tape of its first Value argument
// that has one; a zero Value or values of two tapes are an error on that
// tape. Beyond TensorFlow's kernels, dilations and unequal row/column
// strides are supported in all three ops.

// DepthwiseConv2D returns the depthwise 2-D cross-correlation of x (NHWC
// [N,H,W,C], or NCHW with attrs.DataFormat "NCHW") with filter
// [KH,KW,C,M], as TensorFlow's DepthwiseConv2dNative: output channel c·M+m
// is input channel c filtered by filter[:,:,c,m]. attrs.Strides and
// attrs.Padding ("SAME", "VALID" or "EXPLICIT") are required.
func DepthwiseConv2D(x, filter Value, attrs forward.DepthwiseConv2dAttrs) Value {
	t := tapeOf(x, filter)
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.DepthwiseConv2dNative(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(filter)))
}

// DepthwiseConv2DBackpropInput returns the gradient of DepthwiseConv2D
// with respect to its input, of shape inputSizes (4 values in the data
// format's order), given the filter and dy, the gradient of
// DepthwiseConv2D's output. It is differentiable in filter and dy.
func DepthwiseConv2DBackpropInput(inputSizes []int, filter, dy Value, attrs forward.DepthwiseConv2dAttrs) Value {
	t := tapeOf(filter, dy)
	if t == nil {
		return Value{}
	}
	sizes, ok := sizeInts(t, backward.OpDepthwiseConv2dNativeBackpropInput, 0, inputSizes)
	if !ok {
		return sizes
	}
	return ValueOf(backward.DepthwiseConv2dNativeBackpropInput(t.Emitter(), registry.NewAttrs(attrs), t.box(sizes), t.box(filter), t.box(dy)))
}

// DepthwiseConv2DBackpropFilter returns the gradient of DepthwiseConv2D
// with respect to its filter, of shape filterSizes [KH,KW,C,M], given the
// input x and dy, the gradient of DepthwiseConv2D's output. It is
// differentiable in x and dy.
func DepthwiseConv2DBackpropFilter(x Value, filterSizes []int, dy Value, attrs forward.DepthwiseConv2dAttrs) Value {
	t := tapeOf(x, dy)
	if t == nil {
		return Value{}
	}
	sizes, ok := sizeInts(t, backward.OpDepthwiseConv2dNativeBackpropFilter, 1, filterSizes)
	if !ok {
		return sizes
	}
	return ValueOf(backward.DepthwiseConv2dNativeBackpropFilter(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(sizes), t.box(dy)))
}
