package autodiff

import (
	"math"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the Conv2D family (TensorFlow's Conv2D,
// Conv2DBackpropInput and Conv2DBackpropFilter; see forward.Conv2DAttrs
// for the attributes). Each op runs on the tape of its first Value
// argument that has one; a zero Value or values of two tapes are an error
// on that tape.

var (
	opConv2D               = ref("Conv2D")
	opConv2DBackpropInput  = ref("Conv2DBackpropInput")
	opConv2DBackpropFilter = ref("Conv2DBackpropFilter")
)

// convTapeOf returns the tape of the first argument that has one, or nil.
func convTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// convApply applies a single-output op of the family; for sizesAt >= 0,
// sizes becomes an int32 constant inserted as input sizesAt.
func convApply(r *opRef, attrs forward.Conv2DAttrs, sizes []int, sizesAt int, vs ...Value) Value {
	t := convTapeOf(vs...)
	if t == nil {
		return Value{}
	}
	in := vs
	if sizesAt >= 0 {
		for _, s := range sizes {
			if s < math.MinInt32 || s > math.MaxInt32 {
				t.fail(r.name, sizesAt, "forward", registry.Errorf(registry.ErrInvalidArgument, "%s: size %d does not fit the int32 %s input", r.name, s, r.def().Inputs[sizesAt].Name))
				return t.poison()
			}
		}
		in = make([]Value, 0, len(vs)+1)
		in = append(in, vs[:sizesAt]...)
		in = append(in, t.Ints(sizes...))
		in = append(in, vs[sizesAt:]...)
	}
	return t.applyDef(r.def(), attrs, in, !t.noGrad, "forward", nil)[0]
}

// Conv2D returns the 2-D cross-correlation of x (NHWC [N,H,W,C], or NCHW
// with attrs.DataFormat "NCHW") with filter [KH,KW,Cf,O], as TensorFlow's
// Conv2D: grouped when C is a multiple of Cf (C/Cf groups). attrs.Strides
// and attrs.Padding ("SAME", "VALID" or "EXPLICIT") are required.
func Conv2D(x, filter Value, attrs forward.Conv2DAttrs) Value {
	return convApply(opConv2D, attrs, nil, -1, x, filter)
}

// Conv2DBackpropInput returns the gradient of Conv2D with respect to its
// input, of shape inputSizes (4 values in the data format's order, or
// [H, W]), given the filter and dy, the gradient of Conv2D's output. It is
// differentiable in filter and dy.
func Conv2DBackpropInput(inputSizes []int, filter, dy Value, attrs forward.Conv2DAttrs) Value {
	return convApply(opConv2DBackpropInput, attrs, convSizes(inputSizes), 0, filter, dy)
}

// Conv2DBackpropFilter returns the gradient of Conv2D with respect to its
// filter, of shape filterSizes [KH,KW,Cf,O], given the input x and dy, the
// gradient of Conv2D's output. It is differentiable in x and dy.
func Conv2DBackpropFilter(x Value, filterSizes []int, dy Value, attrs forward.Conv2DAttrs) Value {
	return convApply(opConv2DBackpropFilter, attrs, convSizes(filterSizes), 1, x, dy)
}

// convSizes turns a nil size list into an empty one (an empty int32
// vector input, which the op rejects with its own message).
func convSizes(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}
