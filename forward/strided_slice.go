package forward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/slicekern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// StridedSlice (docs/spec/array.md): Python's extended slicing,
// input[begin:end:strides] with TensorFlow's masks, as
// tensorflow/core/util/strided_slice_op.cc computes it: begin, end and
// strides are int32 or int64 vectors of one length (the "sparse" spec,
// fewer than 32 entries); bit i of begin_mask (end_mask) ignores begin[i]
// (end[i]) and takes the widest range; ellipsis_mask marks at most one
// entry standing for all the dimensions not otherwise named (one is
// implied at the end); new_axis_mask inserts a dimension of size 1;
// shrink_axis_mask takes the single index begin[i] and drops the
// dimension. Negative indices count from the end; out-of-range begin and
// end are clamped, except for shrunk dimensions, whose index must be in
// range. The gradient is StridedSliceGrad (package backward).

// StridedSliceAttrs are the attributes of StridedSlice and
// StridedSliceGrad (TensorFlow's bit masks over the entries of begin, end
// and strides).
type StridedSliceAttrs struct {
	// BeginMask: bit i ignores begin[i] (the widest range's start).
	BeginMask int `tf:"begin_mask"`
	// EndMask: bit i ignores end[i] (the widest range's end).
	EndMask int `tf:"end_mask"`
	// EllipsisMask: bit i makes entry i an ellipsis (at most one bit).
	EllipsisMask int `tf:"ellipsis_mask"`
	// NewAxisMask: bit i makes entry i a new dimension of size 1.
	NewAxisMask int `tf:"new_axis_mask"`
	// ShrinkAxisMask: bit i makes entry i the single index begin[i],
	// dropping the dimension.
	ShrinkAxisMask int `tf:"shrink_axis_mask"`
}

func init() {
	registry.MustRegister(&registry.OpDef{Name: "StridedSlice",
		Doc:    "output = input[begin:end:strides] with TensorFlow's begin/end/ellipsis/new-axis/shrink-axis masks",
		Inputs: args("input", "begin", "end", "strides"), Outputs: args("output"), Attrs: StridedSliceAttrs{},
		Kernels: elemKernels(stridedSliceKernel[float32], stridedSliceKernel[float64], stridedSliceKernel[int32], stridedSliceKernel[int64], stridedSliceKernel[bool]),
		Samples: stridedSliceSamples})
}

// StridedSliceBox is a validated strided slice of an input: the box of the
// input it reads (per input dimension the start, the step and the number
// of elements, TensorFlow's "processing shape") and the output's shape
// (the processing shape with shrunk dimensions removed and new axes
// inserted). The output's elements are the box's, in row-major order.
type StridedSliceBox struct {
	rank              int
	start, step, size [tensorx.MaxRank]int
	finalRank         int
	final             [tensorx.MaxRank]int
}

// Start returns the box's first index along each input dimension.
func (b *StridedSliceBox) Start() []int { return b.start[:b.rank] }

// Step returns the box's step along each input dimension.
func (b *StridedSliceBox) Step() []int { return b.step[:b.rank] }

// Size returns the box's element count along each input dimension.
func (b *StridedSliceBox) Size() []int { return b.size[:b.rank] }

// Final returns the output's shape.
func (b *StridedSliceBox) Final() []int { return b.final[:b.finalRank] }

// The gather indices of TensorFlow's dense spec: a new axis (size 1) and a
// shrunk dimension (dropped).
const (
	ssNewAxis    = -2
	ssShrinkAxis = -1
)

// ParseStridedSlice validates a strided slice of an input of the given
// shape (TensorFlow's ValidateStridedSliceOp; op names the op in errors)
// and returns its box.
func ParseStridedSlice(op string, shape []int, beginT, endT, stridesT *tensor.Dense, a StridedSliceAttrs) (StridedSliceBox, error) {
	var box StridedSliceBox
	for i, t := range []*tensor.Dense{beginT, endT, stridesT} {
		if dt := t.Dtype(); dt != tensor.Int32 && dt != tensor.Int64 {
			return box, registry.Errorf(registry.ErrDtype, "%s: input %d must be int32 or int64, got %v", op, i+1, dt)
		}
		if t.Dtype() != beginT.Dtype() {
			return box, registry.Errorf(registry.ErrDtype, "%s: begin, end and strides must have the same dtype, got %v, %v and %v", op, beginT.Dtype(), endT.Dtype(), stridesT.Dtype())
		}
	}
	bs, es, ss := beginT.Shape(), endT.Shape(), stridesT.Shape()
	if len(ss) != 1 || len(bs) != 1 || len(es) != 1 || bs[0] != ss[0] || es[0] != ss[0] || bs[0] >= 32 {
		return box, registry.Errorf(registry.ErrInvalidArgument, "%s: Expected begin, end, and strides to be 1D equal size tensors, but got shapes %s, %s, and %s instead.",
			op, shapeDebugString(bs), shapeDebugString(es), shapeDebugString(ss))
	}
	if len(shape) > tensorx.MaxRank {
		return box, registry.Errorf(registry.ErrShape, "%s: input rank %d exceeds the maximum %d", op, len(shape), tensorx.MaxRank)
	}
	var bb, eb, sb [32]int
	begin, err := shpIndexInput(bb[:0], op, 1, beginT)
	if err != nil {
		return box, err
	}
	end, err := shpIndexInput(eb[:0], op, 2, endT)
	if err != nil {
		return box, err
	}
	strides, err := shpIndexInput(sb[:0], op, 3, stridesT)
	if err != nil {
		return box, err
	}
	if e := a.EllipsisMask; e != 0 && e&(e-1) != 0 {
		return box, registry.Errorf(registry.ErrInvalidArgument, "%s: Multiple ellipses in slice spec not allowed", op)
	}

	// Step 1: count the new axes after the ellipsis; imply an ellipsis at
	// the end when there is none.
	sparseDims := len(strides)
	ellipsisMask := a.EllipsisMask
	addAfterEllipsis, seen := 0, false
	for i := 0; i < sparseDims; i++ {
		if seen && (1<<i)&a.NewAxisMask != 0 {
			addAfterEllipsis++
		}
		if (1<<i)&ellipsisMask != 0 {
			seen = true
		}
	}
	if !seen {
		ellipsisMask |= 1 << sparseDims
		sparseDims++
	}

	// Step 2: the dense spec, one entry per input dimension.
	dims := len(shape)
	var dBegin, dEnd, dStride [tensorx.MaxRank]int
	var gather [2*tensorx.MaxRank + 32]int
	ng := 0
	dBeginMask, dEndMask, dShrink := 0, 0, 0
	full := 0
	for i := 0; i < sparseDims; i++ {
		switch {
		case (1<<i)&ellipsisMask != 0:
			next := min(dims-(sparseDims-i)+1+addAfterEllipsis, dims)
			for ; full < next; full++ {
				dBegin[full], dEnd[full], dStride[full] = 0, 0, 1
				dBeginMask |= 1 << full
				dEndMask |= 1 << full
				gather[ng] = full
				ng++
			}
		case (1<<i)&a.NewAxisMask != 0:
			gather[ng] = ssNewAxis
			ng++
		default:
			if full == dims {
				return box, registry.Errorf(registry.ErrInvalidArgument, "%s: Index out of range using input dim %d; input has only %d dims", op, full, dims)
			}
			dBegin[full], dEnd[full], dStride[full] = begin[i], end[i], strides[i]
			if a.BeginMask&(1<<i) != 0 {
				dBeginMask |= 1 << full
			}
			if a.EndMask&(1<<i) != 0 {
				dEndMask |= 1 << full
			}
			if a.ShrinkAxisMask&(1<<i) != 0 {
				gather[ng] = ssShrinkAxis
				dShrink |= 1 << full
			} else {
				gather[ng] = full
			}
			ng++
			full++
		}
	}

	// Step 3: canonical begin and end, and the processing shape.
	box.rank = dims
	for i := 0; i < dims; i++ {
		b, e, s, d := dBegin[i], dEnd[i], dStride[i], shape[i]
		if s == 0 {
			return box, registry.Errorf(registry.ErrInvalidArgument, "%s: strides[%d] must be non-zero", op, i)
		}
		shrink := dShrink&(1<<i) != 0
		if shrink && s <= 0 {
			return box, registry.Errorf(registry.ErrInvalidArgument, "%s: only stride 1 allowed on non-range indexing.", op)
		}
		masks := [2]bool{dBeginMask&(1<<i) != 0, dEndMask&(1<<i) != 0}
		valid := [2]int{0, d}
		if s < 0 {
			valid = [2]int{-1, d - 1}
		}
		canonical := func(x, c int) int {
			if masks[c] {
				if s > 0 {
					return valid[c]
				}
				return valid[(c+1)&1]
			}
			if x < 0 {
				x += d
			}
			return max(valid[0], min(x, valid[1]))
		}
		if shrink {
			x := b
			if x < 0 {
				x += d
			}
			if x < 0 || x >= d {
				return box, registry.Errorf(registry.ErrInvalidArgument, "%s: slice index %d of dimension %d out of bounds.", op, x, i)
			}
			b, e = x, x+1
		} else {
			b, e = canonical(b, 0), canonical(e, 1)
		}
		length, size := e-b, 0
		if length != 0 && (length < 0) == (s < 0) {
			size = length / s
			if length%s != 0 {
				size++
			}
		}
		box.start[i], box.step[i], box.size[i] = b, s, size
	}

	// Step 4: the final shape.
	for _, g := range gather[:ng] {
		if g == ssShrinkAxis {
			continue
		}
		if box.finalRank == tensorx.MaxRank {
			return box, registry.Errorf(registry.ErrShape, "%s: the output would have more than %d dimensions", op, tensorx.MaxRank)
		}
		if g >= 0 {
			box.final[box.finalRank] = box.size[g]
		} else {
			box.final[box.finalRank] = 1 // a new axis
		}
		box.finalRank++
	}
	return box, nil
}

func stridedSliceKernel[T tensorx.Elem](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	x := in[0]
	box, err := ParseStridedSlice("StridedSlice", x.Shape(), in[1], in[2], in[3], attrs.(StridedSliceAttrs))
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(x.Dtype(), box.Final()...)
	if err != nil {
		return nil, err
	}
	slicekern.Gather(kc.NumThreads(), data[T](out), data[T](x), x.Shape(), box.Start(), box.Step(), box.Size())
	return kc.Results(out), nil
}
