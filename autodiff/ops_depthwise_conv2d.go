package autodiff

import (
	"math"

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

var (
	opDepthwiseConv2dNative               = ref("DepthwiseConv2dNative")
	opDepthwiseConv2dNativeBackpropInput  = ref("DepthwiseConv2dNativeBackpropInput")
	opDepthwiseConv2dNativeBackpropFilter = ref("DepthwiseConv2dNativeBackpropFilter")
)

// dwTapeOf returns the tape of the first argument that has one, or nil.
func dwTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// dwApply applies an op of the family. For sizesAt >= 0, sizes becomes an
// int32 constant inserted as input sizesAt. If no argument has a tape there
// is nowhere to record an error, and the result is the zero Value, whose
// Err reports it as invalid.
func dwApply(r *opRef, attrs forward.DepthwiseConv2dAttrs, sizes []int, sizesAt int, vs ...Value) Value {
	t := dwTapeOf(vs...)
	if t == nil {
		return Value{}
	}
	def := r.def()
	if sizesAt < 0 {
		return t.apply1(def, attrs, vs...)
	}
	if t.err != nil {
		return t.poison()
	}
	if sizes == nil {
		// An empty int32 vector, which the op rejects with its own message.
		sizes = []int{}
	}
	for _, s := range sizes {
		if s < math.MinInt32 || s > math.MaxInt32 {
			t.fail(r.name, sizesAt, "forward", registry.Errorf(registry.ErrInvalidArgument, "%s: size %d does not fit the int32 %s input", r.name, s, def.Inputs[sizesAt].Name))
			return t.poison()
		}
	}
	var buf [3]Value
	in := append(buf[:0], vs[:sizesAt]...)
	in = append(in, t.Ints(sizes...))
	in = append(in, vs[sizesAt:]...)
	return t.apply1(def, attrs, in...)
}

// DepthwiseConv2D returns the depthwise 2-D cross-correlation of x (NHWC
// [N,H,W,C], or NCHW with attrs.DataFormat "NCHW") with filter
// [KH,KW,C,M], as TensorFlow's DepthwiseConv2dNative: output channel c·M+m
// is input channel c filtered by filter[:,:,c,m]. attrs.Strides and
// attrs.Padding ("SAME", "VALID" or "EXPLICIT") are required.
func DepthwiseConv2D(x, filter Value, attrs forward.DepthwiseConv2dAttrs) Value {
	return dwApply(opDepthwiseConv2dNative, attrs, nil, -1, x, filter)
}

// DepthwiseConv2DBackpropInput returns the gradient of DepthwiseConv2D
// with respect to its input, of shape inputSizes (4 values in the data
// format's order), given the filter and dy, the gradient of
// DepthwiseConv2D's output. It is differentiable in filter and dy.
func DepthwiseConv2DBackpropInput(inputSizes []int, filter, dy Value, attrs forward.DepthwiseConv2dAttrs) Value {
	return dwApply(opDepthwiseConv2dNativeBackpropInput, attrs, inputSizes, 0, filter, dy)
}

// DepthwiseConv2DBackpropFilter returns the gradient of DepthwiseConv2D
// with respect to its filter, of shape filterSizes [KH,KW,C,M], given the
// input x and dy, the gradient of DepthwiseConv2D's output. It is
// differentiable in x and dy.
func DepthwiseConv2DBackpropFilter(x Value, filterSizes []int, dy Value, attrs forward.DepthwiseConv2dAttrs) Value {
	return dwApply(opDepthwiseConv2dNativeBackpropFilter, attrs, filterSizes, 1, x, dy)
}
