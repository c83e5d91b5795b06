package autodiff

import (
	"github.com/tapegrad/tapegrad/backward"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the Conv2D family (TensorFlow's Conv2D,
// Conv2DBackpropInput and Conv2DBackpropFilter; see forward.Conv2DAttrs
// for the attributes). Each op runs on the tape of its first Value
// argument that has one; a zero Value or values of two tapes are an error
// on that tape.

// Conv2D returns the 2-D cross-correlation of x (NHWC [N,H,W,C], or NCHW
// with attrs.DataFormat "NCHW") with filter [KH,KW,Cf,O], as TensorFlow's
// Conv2D: grouped when C is a multiple of Cf (C/Cf groups). attrs.Strides
// and attrs.Padding ("SAME", "VALID" or "EXPLICIT") are required. Dtypes:
// float32, float64 and int32 (NHWC only, as TensorFlow's int32 kernels;
// integer arithmetic wrapping modulo 2^32, no gradients).
func Conv2D(x, filter Value, attrs forward.Conv2DAttrs) Value {
	t := tapeOf(x, filter)
	if t == nil {
		return Value{}
	}
	return ValueOf(forward.Conv2D(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(filter)))
}

// Conv2DBackpropInput returns the gradient of Conv2D with respect to its
// input, of shape inputSizes (4 values in the data format's order, or
// [H, W]), given the filter and dy, the gradient of Conv2D's output. It is
// differentiable in filter and dy. Dtypes: float32, float64 and int32
// (NHWC, without dilations or groups, as TensorFlow's int32 kernels).
func Conv2DBackpropInput(inputSizes []int, filter, dy Value, attrs forward.Conv2DAttrs) Value {
	t := tapeOf(filter, dy)
	if t == nil {
		return Value{}
	}
	sizes, ok := sizeInts(t, backward.OpConv2DBackpropInput, 0, inputSizes)
	if !ok {
		return sizes
	}
	return ValueOf(backward.Conv2DBackpropInput(t.Emitter(), registry.NewAttrs(attrs), t.box(sizes), t.box(filter), t.box(dy)))
}

// Conv2DBackpropFilter returns the gradient of Conv2D with respect to its
// filter, of shape filterSizes [KH,KW,Cf,O], given the input x and dy, the
// gradient of Conv2D's output. It is differentiable in x and dy. Dtypes:
// float32 and float64 (TensorFlow has no int32 kernel for it).
func Conv2DBackpropFilter(x Value, filterSizes []int, dy Value, attrs forward.Conv2DAttrs) Value {
	t := tapeOf(x, dy)
	if t == nil {
		return Value{}
	}
	sizes, ok := sizeInts(t, backward.OpConv2DBackpropFilter, 1, filterSizes)
	if !ok {
		return sizes
	}
	return ValueOf(backward.Conv2DBackpropFilter(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(sizes), t.box(dy)))
}
