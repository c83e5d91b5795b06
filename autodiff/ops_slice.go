package autodiff

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the slicing family (TensorFlow's ConcatV2, Slice,
// StridedSlice, Pad, PadV2, ArgMax and ArgMin; docs/spec/array.md).
// Integer arguments become int32 constants on the tape; each op runs on
// the tape of its first Value argument that has one.

// Concat joins values (two or more, of one dtype and rank, equal in every
// dimension but axis) along axis, in [-rank, rank) (TensorFlow's
// ConcatV2). Each value's gradient is its slice of the upstream gradient.
func Concat(values []Value, axis int) Value {
	t := tapeOf(values...)
	if t == nil {
		return Value{}
	}
	ax, ok := sizeInts(t, forward.OpConcatV2, len(values), []int{axis})
	if !ok {
		return ax
	}
	refs := t.Emitter().Values(len(values))
	for i, v := range values {
		refs[i] = t.box(v)
	}
	// ax is an int32 vector of one element; ConcatV2 wants a scalar.
	axis0 := forward.Reshape(t.Emitter(), t.box(ax), t.box(t.Ints()))
	return ValueOf(forward.ConcatV2(t.Emitter(), refs, axis0))
}

// Slice returns x[begin[i] : begin[i]+size[i]] along every dimension i
// (TensorFlow's Slice); size[i] = -1 takes the rest of dimension i. The
// gradient places the upstream gradient at begin in zeros of x's shape.
func Slice(x Value, begin, size []int) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	b, ok := sizeInts(t, forward.OpSlice, 1, orEmpty(begin))
	if !ok {
		return b
	}
	s, ok := sizeInts(t, forward.OpSlice, 2, orEmpty(size))
	if !ok {
		return s
	}
	return ValueOf(forward.Slice(t.Emitter(), t.box(x), t.box(b), t.box(s)))
}

// StridedSlice returns x[begin:end:strides] with TensorFlow's masks in
// attrs (StridedSlice; see forward.StridedSliceAttrs): bit i of
// attrs.ShrinkAxisMask makes entry i the single index begin[i], dropping
// the dimension; begin, end and strides have one entry per sliced
// dimension. For example, x[1:, ::-1] of a matrix is
// StridedSlice(x, []int{1, 0}, []int{0, 0}, []int{1, -1},
// forward.StridedSliceAttrs{BeginMask: 2, EndMask: 3}): the masks say
// which begin and end entries are absent (their values are ignored).
func StridedSlice(x Value, begin, end, strides []int, attrs forward.StridedSliceAttrs) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	var in [3]Value
	for i, v := range [][]int{begin, end, strides} {
		iv, ok := sizeInts(t, forward.OpStridedSlice, i+1, orEmpty(v))
		if !ok {
			return iv
		}
		in[i] = iv
	}
	return ValueOf(forward.StridedSlice(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(in[0]), t.box(in[1]), t.box(in[2])))
}

// Pad pads x with zeros: paddings[i] = {before, after} elements along
// dimension i (TensorFlow's Pad). The gradient slices x's part out of the
// upstream gradient.
func Pad(x Value, paddings [][2]int) Value { return padWith(x, paddings, nil) }

// PadConstant pads x with the value c (TensorFlow's PadV2 with a scalar
// constant_values of x's dtype). The constant gets no gradient, as in
// TensorFlow.
func PadConstant(x Value, paddings [][2]int, c float64) Value {
	if x.t == nil {
		return Value{}
	}
	v := x.t.Scalar(x.Dtype(), c)
	return padWith(x, paddings, &v)
}

// padWith applies Pad, or PadV2 with constant c.
func padWith(x Value, paddings [][2]int, c *Value) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	flat := make([]int, 0, 2*len(paddings))
	for _, p := range paddings {
		flat = append(flat, p[0], p[1])
	}
	p, ok := sizeInts(t, forward.OpPad, 1, flat)
	if !ok {
		return p
	}
	e := t.Emitter()
	pm := forward.Reshape(e, t.box(p), t.box(t.Ints(len(paddings), 2)))
	if c == nil {
		return ValueOf(forward.Pad(e, t.box(x), pm))
	}
	return ValueOf(forward.PadV2(e, t.box(x), pm, t.box(*c)))
}

// ArgMax returns the index of the first largest element of x along axis,
// in [-rank, rank), as an int64 value of x's shape without that dimension
// (TensorFlow's ArgMax). It is not differentiable.
func ArgMax(x Value, axis int) Value { return argOp(forward.ArgMax, forward.OpArgMax, x, axis) }

// ArgMin returns the index of the first smallest element of x along axis,
// as ArgMax.
func ArgMin(x Value, axis int) Value { return argOp(forward.ArgMin, forward.OpArgMin, x, axis) }

func argOp(b func(registry.Emitter, registry.Attrs[forward.ArgMaxAttrs], registry.Value, registry.Value) registry.Value, op string, x Value, axis int) Value {
	t := x.t
	if t == nil {
		return Value{}
	}
	ax, ok := sizeInts(t, op, 1, []int{axis})
	if !ok {
		return ax
	}
	e := t.Emitter()
	dim := forward.Reshape(e, t.box(ax), t.box(t.Ints()))
	return ValueOf(b(e, argInt64, t.box(x), dim))
}

// argInt64 are ArgMax's attrs with int64 output (the default, made once).
var argInt64 = registry.NewAttrs(forward.ArgMaxAttrs{OutputType: tensor.Int64})

// orEmpty returns v, or an empty non-nil slice for nil (an empty int32
// vector, for rank-0 inputs).
func orEmpty(v []int) []int {
	if v == nil {
		return []int{}
	}
	return v
}
