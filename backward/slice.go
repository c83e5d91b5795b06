package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/slicekern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// The slicing family's gradient ops and gradients (docs/spec/array.md;
// TensorFlow's array_grad.py):
//
//   - StridedSlice → StridedSliceGrad(shape(x), begin, end, strides, dy),
//     TensorFlow's op: dy placed into zeros of x's shape at the slice's
//     positions. StridedSliceGrad → StridedSlice(grad, begin, end, strides)
//     for dy (TensorFlow's _StridedSliceGradGrad). The masks are forwarded.
//   - Slice → tapegrad.SliceGrad(shape(x), begin, dy), dy placed at begin
//     in zeros of x's shape (TensorFlow pads dy with integer arithmetic on
//     begin, which tapegrad's ops do not have); its gradient is Slice.
//   - ConcatV2 → the upstream gradient sliced into the values' shapes
//     (TensorFlow's ConcatOffset and Slice); the axis, which gradient code
//     cannot read, is the one dimension in which the shapes differ (when
//     none does, every value is empty and its gradient is too).
//   - Pad, PadV2 → Slice(dy, paddings[:, 0], shape(x)); paddings and
//     constant_values get none.
//   - ArgMax, ArgMin: not differentiable.
//
// Integer index inputs get no gradient; shape constants are made in the
// dtype of the op's index inputs.

func init() {
	elem := func(k32, k64, i32, i64, b registry.Kernel) map[tensor.Dtype]registry.Kernel {
		return map[tensor.Dtype]registry.Kernel{tensor.Float32: k32, tensor.Float64: k64, tensor.Int32: i32, tensor.Int64: i64, tensor.Bool: b}
	}
	registry.MustRegister(&registry.OpDef{Name: "StridedSliceGrad",
		Doc:    "output = zeros of shape with dy written at the positions StridedSlice(begin, end, strides, masks) reads: its gradient",
		Inputs: args("shape", "begin", "end", "strides", "dy"), Outputs: args("output"), TypeInput: 4,
		Attrs:   forward.StridedSliceAttrs{},
		Kernels: elem(stridedSliceGradKernel[float32], stridedSliceGradKernel[float64], stridedSliceGradKernel[int32], stridedSliceGradKernel[int64], stridedSliceGradKernel[bool]),
		Samples: stridedSliceGradSamples})
	registry.MustRegister(&registry.OpDef{Name: "tapegrad.SliceGrad",
		Doc:    "output = zeros of shape with dy written at begin: the gradient of Slice (tapegrad op, beyond TensorFlow)",
		Inputs: args("shape", "begin", "dy"), Outputs: args("output"), TypeInput: 2,
		Kernels: elem(sliceGradKernel[float32], sliceGradKernel[float64], sliceGradKernel[int32], sliceGradKernel[int64], sliceGradKernel[bool]),
		Samples: sliceGradSamples})

	registry.MustSetGradient(forward.OpStridedSlice, stridedSliceGrad)
	registry.MustSetGradient(OpStridedSliceGrad, stridedSliceGradGrad)
	registry.MustSetGradient(forward.OpSlice, sliceGrad)
	registry.MustSetGradient(OpSliceGrad, sliceGradGrad)
	registry.MustSetGradient(forward.OpConcatV2, concatGrad)
	registry.MustSetGradient(forward.OpPad, padGrad)
	registry.MustSetGradient(forward.OpPadV2, padGrad)
	registry.MustNotDifferentiable(forward.OpArgMax)
	registry.MustNotDifferentiable(forward.OpArgMin)
}

// slShape reads a shape input (shape) of op: an int32 or int64 vector of
// the dtype of index (begin) with non-negative entries.
func slShape(dst []int, op string, st, index *tensor.Dense) ([]int, error) {
	if st.Dtype() != index.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: shape and begin must have the same dtype, got %v and %v", op, st.Dtype(), index.Dtype())
	}
	if len(st.Shape()) != 1 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: shape must be 1-D, got shape.shape = %s", op, shapeDebugString(st.Shape()))
	}
	if st.Shape()[0] > tensorx.MaxRank {
		return nil, registry.Errorf(registry.ErrShape, "%s: shape has %d dimensions, more than the maximum %d", op, st.Shape()[0], tensorx.MaxRank)
	}
	v, err := tensorx.AppendInts(dst, st)
	if err != nil {
		return nil, registry.Errorf(registry.ErrDtype, "%s: shape must be an int32 or int64 vector, got %v", op, st.Dtype())
	}
	for _, d := range v {
		if d < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: shape %v has a negative dimension", op, v)
		}
	}
	if _, err := tensorx.Numel(v); err != nil {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %v", op, err)
	}
	return v, nil
}

func stridedSliceGradKernel[T tensorx.Elem](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "StridedSliceGrad"
	var sbuf [tensorx.MaxRank]int
	shape, err := slShape(sbuf[:0], op, in[0], in[1])
	if err != nil {
		return nil, err
	}
	box, err := forward.ParseStridedSlice(op, shape, in[1], in[2], in[3], attrs.(forward.StridedSliceAttrs))
	if err != nil {
		return nil, err
	}
	dy := in[4]
	if !tensorx.SameShape(dy.Shape(), box.Final()) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: shape of dy was %s instead of %s", op, shapeDebugString(dy.Shape()), shapeDebugString(box.Final()))
	}
	out, err := kc.Zeros(dy.Dtype(), shape...)
	if err != nil {
		return nil, err
	}
	slicekern.Scatter(kc.NumThreads(), data[T](out), data[T](dy), shape, box.Start(), box.Step(), box.Size())
	return kc.Results(out), nil
}

func sliceGradKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	var sbuf, bbuf, obuf [tensorx.MaxRank]int
	shape, err := slShape(sbuf[:0], OpSliceGrad, in[0], in[1])
	if err != nil {
		return nil, err
	}
	bt, dy := in[1], in[2]
	ds := dy.Shape()
	if len(bt.Shape()) != 1 || bt.Shape()[0] != len(shape) || len(ds) != len(shape) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: shape %v, begin of shape %s and dy of shape %s do not have one rank",
			OpSliceGrad, shape, shapeDebugString(bt.Shape()), shapeDebugString(ds))
	}
	begin, err := tensorx.AppendInts(bbuf[:0], bt)
	if err != nil {
		return nil, registry.Errorf(registry.ErrDtype, "%s: begin must be an int32 or int64 vector, got %v", OpSliceGrad, bt.Dtype())
	}
	for i, d := range shape {
		if begin[i] < 0 || begin[i]+ds[i] > d {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: dy of shape %s at begin %v does not fit in shape %v", OpSliceGrad, shapeDebugString(ds), begin, shape)
		}
	}
	out, err := kc.Zeros(dy.Dtype(), shape...)
	if err != nil {
		return nil, err
	}
	step := obuf[:len(shape)]
	for i := range step {
		step[i] = 1
	}
	slicekern.Scatter(kc.NumThreads(), data[T](out), data[T](dy), shape, begin, step, ds)
	return kc.Results(out), nil
}

// intsOf puts v on e as a vector constant of dtype dt (int32 or int64).
func intsOf(e registry.Emitter, dt tensor.Dtype, v ...int) registry.Value {
	c := e.Ints(v...)
	if dt == tensor.Int64 {
		return forward.Cast(e, castInt64, c)
	}
	return c
}

// stridedSliceGrad: StridedSlice(x, begin, end, strides) with upstream dy
// gives StridedSliceGrad(shape(x), begin, end, strides, dy) for x.
func stridedSliceGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(4), nil
	}
	in := n.Inputs()
	shape := intsOf(e, in[1].Dtype(), in[0].Shape()...)
	g := StridedSliceGrad(e, registry.NodeAttrs[forward.StridedSliceAttrs](n), shape, in[1], in[2], in[3], dy[0])
	return only(e, 4, 0, g), nil
}

// stridedSliceGradGrad: StridedSliceGrad is linear in dy; its adjoint is
// StridedSlice with the same slice.
func stridedSliceGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(4) {
		return e.Values(5), nil
	}
	in := n.Inputs()
	g := forward.StridedSlice(e, registry.NodeAttrs[forward.StridedSliceAttrs](n), dy[0], in[1], in[2], in[3])
	return only(e, 5, 4, g), nil
}

// sliceGrad: Slice(x, begin, size) with upstream dy gives
// tapegrad.SliceGrad(shape(x), begin, dy) for x.
func sliceGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(3), nil
	}
	in := n.Inputs()
	return only(e, 3, 0, SliceGrad(e, intsOf(e, in[1].Dtype(), in[0].Shape()...), in[1], dy[0])), nil
}

// sliceGradGrad: tapegrad.SliceGrad(shape, begin, d) is linear in d; its
// adjoint is Slice(g, begin, shape(d)).
func sliceGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if dy[0] == nil || !n.NeedsGrad(2) {
		return e.Values(3), nil
	}
	in := n.Inputs()
	return only(e, 3, 2, forward.Slice(e, dy[0], in[1], intsOf(e, in[1].Dtype(), in[2].Shape()...))), nil
}

// concatAxis returns the concatenation axis of a ConcatV2 whose values
// have the given shapes: the one dimension in which a value's shape
// differs from the output's. If there is none (-1), every value has the
// output's shape, so out[axis] = N·out[axis] is 0: every value is empty,
// and the slice at the origin of the value's shape is its (empty)
// gradient.
func concatAxis(out []int, values []registry.Value) int {
	for _, v := range values {
		for j, d := range v.Shape() {
			if j < len(out) && d != out[j] {
				return j
			}
		}
	}
	return -1
}

// concatGrad: ConcatV2(values..., axis) with upstream dy gives each value
// the slice of dy at its offset along the axis.
func concatGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	in := n.Inputs()
	out := e.Values(len(in))
	if dy[0] == nil {
		return out, nil
	}
	values := in[:len(in)-1]
	outShape := n.Outputs()[0].Shape()
	axis := concatAxis(outShape, values)
	var bbuf [tensorx.MaxRank]int
	begin := bbuf[:len(outShape)]
	for i, v := range values {
		s := v.Shape()
		if n.NeedsGrad(i) {
			out[i] = forward.Slice(e, dy[0], e.Ints(begin...), e.Ints(s...))
		}
		if axis >= 0 {
			begin[axis] += s[axis]
		}
	}
	return out, nil
}

// padGrad: Pad(x, paddings) and PadV2(x, paddings, c) with upstream dy
// give Slice(dy, paddings[:, 0], shape(x)) for x (TensorFlow's _PadGrad:
// the first column of paddings by Slice and Reshape).
func padGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	in := n.Inputs()
	if dy[0] == nil || !n.NeedsGrad(0) {
		return e.Values(len(in)), nil
	}
	x, p := in[0], in[1]
	rank := len(x.Shape())
	before := forward.Reshape(e, forward.Slice(e, p, e.Ints(0, 0), e.Ints(rank, 1)), e.Ints(-1))
	return only(e, len(in), 0, forward.Slice(e, dy[0], before, intsOf(e, p.Dtype(), x.Shape()...))), nil
}
