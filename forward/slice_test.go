package forward

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of ConcatV2, Slice, StridedSlice, Pad, PadV2, ArgMax and ArgMin
// against naive loops written from docs/spec/array.md. StridedSlice's
// reference follows Python's slicing rules (slice.indices) for each
// dimension after expanding the ellipsis, which is what TensorFlow's
// strided_slice implements for basic indexing.

// slIndices returns the indices Python's slice(start, stop, step).indices(n)
// visits; nil start/stop mean the defaults.
func slIndices(start, stop *int, step, n int) []int {
	var b, e int
	if step > 0 {
		b, e = 0, n
		if start != nil {
			b = *start
			if b < 0 {
				b = max(b+n, 0)
			} else {
				b = min(b, n)
			}
		}
		if stop != nil {
			e = *stop
			if e < 0 {
				e = max(e+n, 0)
			} else {
				e = min(e, n)
			}
		}
	} else {
		b, e = n-1, -1
		if start != nil {
			b = *start
			if b < 0 {
				b = max(b+n, -1)
			} else {
				b = min(b, n-1)
			}
		}
		if stop != nil {
			e = *stop
			if e < 0 {
				e = max(e+n, -1)
			} else {
				e = min(e, n-1)
			}
		}
	}
	var out []int
	for i := b; (step > 0 && i < e) || (step < 0 && i > e); i += step {
		out = append(out, i)
	}
	return out
}

// slSpec is one random strided-slice configuration.
type slSpec struct {
	shape               []int
	begin, end, strides []int
	a                   StridedSliceAttrs
}

// slNaive evaluates the spec on x by the rules above: it returns the
// output shape and values, or ok == false if the spec is invalid.
func slNaive(s slSpec, x []float64) (shape []int, out []float64, ok bool) {
	n := len(s.strides)
	bit := func(m, i int) bool { return m&(1<<i) != 0 }
	ellipses, named := 0, 0
	for i := 0; i < n; i++ {
		switch {
		case bit(s.a.EllipsisMask, i):
			ellipses++
		case bit(s.a.NewAxisMask, i):
		default:
			named++
		}
	}
	if ellipses > 1 || named > len(s.shape) {
		return nil, nil, false
	}
	type entry struct {
		kind    byte // 'n' new axis, 'i' index, 's' slice
		idx     []int
		srcAxis int
	}
	var entries []entry
	axis := 0
	expand := func() {
		for k := 0; k < len(s.shape)-named; k++ {
			entries = append(entries, entry{'s', slIndices(nil, nil, 1, s.shape[axis]), axis})
			axis++
		}
	}
	for i := 0; i < n; i++ {
		switch {
		case bit(s.a.EllipsisMask, i):
			expand()
		case bit(s.a.NewAxisMask, i):
			entries = append(entries, entry{kind: 'n'})
		case bit(s.a.ShrinkAxisMask, i):
			d := s.shape[axis]
			k := s.begin[i]
			if k < 0 {
				k += d
			}
			if s.strides[i] <= 0 || k < 0 || k >= d {
				return nil, nil, false
			}
			entries = append(entries, entry{'i', []int{k}, axis})
			axis++
		default:
			if s.strides[i] == 0 {
				return nil, nil, false
			}
			var b, e *int
			if !bit(s.a.BeginMask, i) {
				b = &s.begin[i]
			}
			if !bit(s.a.EndMask, i) {
				e = &s.end[i]
			}
			entries = append(entries, entry{'s', slIndices(b, e, s.strides[i], s.shape[axis]), axis})
			axis++
		}
	}
	if ellipses == 0 {
		expand()
	}
	// Per input axis, the index list; the output shape.
	lists := make([][]int, len(s.shape))
	for _, en := range entries {
		switch en.kind {
		case 'n':
			shape = append(shape, 1)
		case 'i':
			lists[en.srcAxis] = en.idx
		default:
			lists[en.srcAxis] = en.idx
			shape = append(shape, len(en.idx))
		}
	}
	total := 1
	for _, l := range lists {
		total *= len(l)
	}
	idx := make([]int, len(lists))
	for k := 0; k < total; k++ {
		rem := k
		for d := len(lists) - 1; d >= 0; d-- {
			idx[d] = lists[d][rem%len(lists[d])]
			rem /= len(lists[d])
		}
		off := 0
		for d, v := range idx {
			off = off*s.shape[d] + v
		}
		out = append(out, x[off])
	}
	if shape == nil {
		shape = []int{}
	}
	return shape, out, true
}

// slRandSpec returns a random strided-slice configuration.
func slRandSpec(r *rand.Rand) slSpec {
	var s slSpec
	rank := r.Intn(5)
	for range rank {
		s.shape = append(s.shape, r.Intn(5))
	}
	n := r.Intn(rank + 3)
	for i := 0; i < n; i++ {
		d := 4
		s.begin = append(s.begin, r.Intn(2*d+5)-d-2)
		s.end = append(s.end, r.Intn(2*d+5)-d-2)
		st := 1 + r.Intn(3)
		if r.Intn(3) == 0 {
			st = -st
		}
		if r.Intn(30) == 0 {
			st = 0
		}
		s.strides = append(s.strides, st)
		pick := func() int {
			if r.Intn(4) == 0 {
				return 1 << i
			}
			return 0
		}
		s.a.BeginMask |= pick()
		s.a.EndMask |= pick()
		s.a.ShrinkAxisMask |= pick()
		if r.Intn(6) == 0 {
			s.a.NewAxisMask |= 1 << i
		}
		if r.Intn(8) == 0 {
			s.a.EllipsisMask |= 1 << i
		}
	}
	return s
}

func TestStridedSliceNaive(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	valid := 0
	for it := 0; it < 4000; it++ {
		s := slRandSpec(r)
		x := testutil.Arange(testutil.Numel(s.shape))
		wantShape, want, ok := slNaive(s, x)
		idx := shpInt32s
		if it%2 == 1 {
			idx = shpInt64s
		}
		out, err := registrytest.Run(t, "StridedSlice", s.a, 1+it%3, testutil.Dense(t, tensor.Float64, s.shape, x),
			idx(s.begin...), idx(s.end...), idx(s.strides...))
		if !ok {
			if err == nil {
				t.Fatalf("%+v: no error, want one", s)
			}
			testutil.WantErr(t, err, registry.ErrInvalidArgument, "StridedSlice")
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		valid++
		testutil.ShapeIs(t, fmt.Sprintf("%+v", s), out[0], wantShape...)
		if got := testutil.Float64s(t, out[0]); !slices.Equal(got, want) {
			t.Fatalf("%+v: got %v, want %v", s, got, want)
		}
	}
	if valid < 1500 {
		t.Fatalf("only %d valid configurations", valid)
	}
}

func TestStridedSliceErrors(t *testing.T) {
	x := testutil.Dense(t, tensor.Float64, []int{3, 4}, testutil.Arange(12))
	for _, c := range []struct {
		a             StridedSliceAttrs
		begin, end, s *tensor.Dense
		kind          error
		msg           string
	}{
		{StridedSliceAttrs{}, shpInt32s(0), shpInt32s(1, 2), shpInt32s(1), registry.ErrInvalidArgument, "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [1], [2], and [1] instead."},
		{StridedSliceAttrs{}, shpInt32s(0), shpInt32s(1), shpInt32s(0), registry.ErrInvalidArgument, "strides[0] must be non-zero"},
		{StridedSliceAttrs{EllipsisMask: 3}, shpInt32s(0, 0), shpInt32s(1, 1), shpInt32s(1, 1), registry.ErrInvalidArgument, "Multiple ellipses in slice spec not allowed"},
		{StridedSliceAttrs{ShrinkAxisMask: 1}, shpInt32s(3), shpInt32s(4), shpInt32s(1), registry.ErrInvalidArgument, "slice index 3 of dimension 0 out of bounds."},
		{StridedSliceAttrs{ShrinkAxisMask: 1}, shpInt32s(1), shpInt32s(2), shpInt32s(-1), registry.ErrInvalidArgument, "only stride 1 allowed on non-range indexing."},
		{StridedSliceAttrs{}, shpInt32s(0, 0, 0), shpInt32s(1, 1, 1), shpInt32s(1, 1, 1), registry.ErrInvalidArgument, "Index out of range using input dim 2; input has only 2 dims"},
		{StridedSliceAttrs{}, shpInt32s(0), shpInt64s(1), shpInt32s(1), registry.ErrDtype, "same dtype"},
	} {
		_, err := registrytest.Run(t, "StridedSlice", c.a, 1, x, c.begin, c.end, c.s)
		testutil.WantErr(t, err, c.kind, "StridedSlice", c.msg)
	}
}

func TestSliceNaive(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	for it := 0; it < 500; it++ {
		rank := r.Intn(5)
		shape := make([]int, rank)
		begin, size := make([]int, rank), make([]int, rank)
		for d := range shape {
			shape[d] = r.Intn(5)
			begin[d] = r.Intn(shape[d] + 1)
			size[d] = r.Intn(shape[d] - begin[d] + 1)
			if r.Intn(4) == 0 {
				size[d] = -1
			}
		}
		x := testutil.Arange(testutil.Numel(shape))
		// Slice is StridedSlice with stride 1 and end = begin + size.
		spec := slSpec{shape: shape, begin: begin, strides: make([]int, rank)}
		for d := range shape {
			spec.strides[d] = 1
			e := begin[d] + size[d]
			if size[d] == -1 {
				e = shape[d]
			}
			spec.end = append(spec.end, e)
		}
		wantShape, want, _ := slNaive(spec, x)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Int32} {
			out := registrytest.MustRun(t, "Slice", nil, 1+it%2, cwDense(t, dt, shape, x), shpInt64s(begin...), shpInt64s(size...))[0]
			testutil.ShapeIs(t, "Slice", out, wantShape...)
			if got := testutil.Float64s(t, out); !slices.Equal(got, want) {
				t.Fatalf("Slice %v %v %v: %v, want %v", shape, begin, size, got, want)
			}
		}
	}
	x := testutil.Dense(t, tensor.Float64, []int{3, 4}, testutil.Arange(12))
	for _, c := range []struct {
		begin, size *tensor.Dense
		msg         string
	}{
		{shpInt32s(0), shpInt32s(1, 1), "Expected begin and size arguments to be 1-D tensors of size 2, but got shapes [1] and [2] instead."},
		{shpInt32s(4, 0), shpInt32s(1, 1), "Expected begin[0] in [0, 3], but got 4"},
		{shpInt32s(1, 1), shpInt32s(3, 1), "Expected size[0] in [0, 2], but got 3"},
		{shpInt32s(1, 1), shpInt32s(1, -2), "Expected size[1] in [0, 3], but got -2"},
	} {
		_, err := registrytest.Run(t, "Slice", nil, 1, x, c.begin, c.size)
		testutil.WantErr(t, err, registry.ErrInvalidArgument, "Slice", c.msg)
	}
	_, err := registrytest.Run(t, "Slice", nil, 1, x, shpInt32s(0, 0), shpInt64s(1, 1))
	testutil.WantErr(t, err, registry.ErrDtype, "Slice")
	_, err = registrytest.Run(t, "Slice", nil, 1, testutil.Dense(t, tensor.Float64, []int{0, 2}, nil), shpInt32s(1, 0), shpInt32s(0, 1))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "Expected begin[0] == 0 (got 1) and size[0] == 0 (got 0) when input.dim_size(0) == 0")
}

func TestConcatV2Naive(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	for it := 0; it < 300; it++ {
		rank := 1 + r.Intn(4)
		axis := r.Intn(rank)
		base := make([]int, rank)
		for d := range base {
			base[d] = r.Intn(4)
		}
		nv := 2 + r.Intn(3)
		var shapes [][]int
		var vals [][]float64
		var in []*tensor.Dense
		next := 0.0
		for range nv {
			s := slices.Clone(base)
			s[axis] = r.Intn(4)
			v := make([]float64, testutil.Numel(s))
			for i := range v {
				next++
				v[i] = next
			}
			shapes, vals = append(shapes, s), append(vals, v)
			in = append(in, testutil.Dense(t, tensor.Float64, s, v))
		}
		// Naive: output element [..., k, ...] along the axis comes from the
		// value whose range along the axis holds k.
		outShape := slices.Clone(base)
		outShape[axis] = 0
		for _, s := range shapes {
			outShape[axis] += s[axis]
		}
		want := make([]float64, testutil.Numel(outShape))
		idx := make([]int, rank)
		for k := range want {
			rem := k
			for d := rank - 1; d >= 0; d-- {
				idx[d] = rem % outShape[d]
				rem /= outShape[d]
			}
			j, a := 0, idx[axis]
			for a >= shapes[j][axis] {
				a -= shapes[j][axis]
				j++
			}
			off := 0
			for d := range idx {
				v := idx[d]
				if d == axis {
					v = a
				}
				off = off*shapes[j][d] + v
			}
			want[k] = vals[j][off]
		}
		ax := axis
		if r.Intn(2) == 0 {
			ax -= rank
		}
		out := registrytest.MustRun(t, "ConcatV2", nil, 1+it%3, append(in, shpInt32Scalar(ax))...)[0]
		testutil.ShapeIs(t, "ConcatV2", out, outShape...)
		if got := testutil.Float64s(t, out); !slices.Equal(got, want) {
			t.Fatalf("ConcatV2 %v axis %d: %v, want %v", shapes, ax, got, want)
		}
	}
	a := testutil.Dense(t, tensor.Float64, []int{2, 3}, testutil.Arange(6))
	b := testutil.Dense(t, tensor.Float64, []int{3, 3}, testutil.Arange(9))
	for _, c := range []struct {
		in   []*tensor.Dense
		kind error
		msg  string
	}{
		{[]*tensor.Dense{a, b, shpInt32Scalar(1)}, registry.ErrInvalidArgument, "ConcatOp : Dimension 0 in both shapes must be equal: shape[0] = [2,3] vs. shape[1] = [3,3]"},
		{[]*tensor.Dense{a, b, shpInt32Scalar(2)}, registry.ErrInvalidArgument, "ConcatOp : Expected concatenating dimensions in the range [-2, 2), but got 2"},
		{[]*tensor.Dense{a, testutil.Dense(t, tensor.Float64, []int{6}, testutil.Arange(6)), shpInt32Scalar(0)}, registry.ErrInvalidArgument, "Ranks of all input tensors should match"},
		{[]*tensor.Dense{testutil.Dense(t, tensor.Float64, []int{}, []float64{1}), testutil.Dense(t, tensor.Float64, []int{}, []float64{2}), shpInt32Scalar(0)}, registry.ErrInvalidArgument, "Can't concatenate scalars"},
		{[]*tensor.Dense{a, b, shpInt32s(0)}, registry.ErrInvalidArgument, "axis tensor should be a scalar integer, but got shape [1]"},
		{[]*tensor.Dense{a, testutil.To32(t, b), shpInt32Scalar(0)}, registry.ErrDtype, "ConcatV2"},
		{[]*tensor.Dense{a, shpInt32Scalar(0)}, registry.ErrInvalidArgument, "at least 2 values"},
	} {
		_, err := registrytest.Run(t, "ConcatV2", nil, 1, c.in...)
		testutil.WantErr(t, err, c.kind, "ConcatV2", c.msg)
	}
}

func TestPadNaive(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	for it := 0; it < 300; it++ {
		rank := r.Intn(5)
		shape := make([]int, rank)
		pads := make([]int64, 2*rank)
		outShape := make([]int, rank)
		for d := range shape {
			shape[d] = r.Intn(4)
			pads[2*d], pads[2*d+1] = int64(r.Intn(3)), int64(r.Intn(3))
			outShape[d] = int(pads[2*d]) + shape[d] + int(pads[2*d+1])
		}
		x := testutil.Arange(testutil.Numel(shape))
		c := float64(r.Intn(5)) - 9
		want := make([]float64, testutil.Numel(outShape))
		idx := make([]int, rank)
		for k := range want {
			rem := k
			for d := rank - 1; d >= 0; d-- {
				idx[d] = rem % outShape[d]
				rem /= outShape[d]
			}
			off, inside := 0, true
			for d := range idx {
				v := idx[d] - int(pads[2*d])
				inside = inside && v >= 0 && v < shape[d]
				off = off*shape[d] + v
			}
			if inside {
				want[k] = x[off]
			} else {
				want[k] = c
			}
		}
		p := testutil.New(t, []int{rank, 2}, pads)
		out := registrytest.MustRun(t, "PadV2", nil, 2, testutil.Dense(t, tensor.Float64, shape, x), p, testutil.Dense(t, tensor.Float64, []int{}, []float64{c}))[0]
		testutil.ShapeIs(t, "PadV2", out, outShape...)
		if got := testutil.Float64s(t, out); !slices.Equal(got, want) {
			t.Fatalf("PadV2 %v %v: %v, want %v", shape, pads, got, want)
		}
		out = registrytest.MustRun(t, "Pad", nil, 1, testutil.Dense(t, tensor.Float64, shape, x), testutil.New(t, []int{rank, 2}, testutil.Convert[int32](pads)))[0]
		for i, v := range testutil.Float64s(t, out) {
			w := want[i]
			if w == c {
				w = 0
			}
			if v != w {
				t.Fatalf("Pad %v %v: element %d = %v, want %v", shape, pads, i, v, w)
			}
		}
	}
	x := testutil.Dense(t, tensor.Float64, []int{2, 2}, testutil.Arange(4))
	for _, c := range []struct {
		p   *tensor.Dense
		msg string
	}{
		{testutil.New(t, []int{2}, []int32{1, 1}), "paddings must be a matrix with 2 columns: [2]"},
		{testutil.New(t, []int{1, 2}, []int32{1, 1}), "The first dimension of paddings must be the rank of inputs"},
		{testutil.New(t, []int{2, 2}, []int32{1, -1, 0, 0}), "Paddings must be non-negative: 1 -1"},
	} {
		_, err := registrytest.Run(t, "Pad", nil, 1, x, c.p)
		testutil.WantErr(t, err, registry.ErrInvalidArgument, "Pad", c.msg)
	}
	_, err := registrytest.Run(t, "PadV2", nil, 1, x, testutil.New(t, []int{2, 2}, []int32{1, 1, 0, 0}), testutil.Dense(t, tensor.Float64, []int{1}, []float64{1}))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "PadV2: constant_values must be a scalar")
}

func TestArgMaxOp(t *testing.T) {
	x := testutil.Dense(t, tensor.Float64, []int{2, 3}, []float64{1, 5, 5, 7, 2, 7})
	for _, c := range []struct {
		op   string
		dim  int
		dt   tensor.Dtype
		want []int64
	}{
		{"ArgMax", 1, tensor.Int64, []int64{1, 0}},
		{"ArgMax", -2, tensor.Int32, []int64{1, 0, 1}},
		{"ArgMin", 1, tensor.Int64, []int64{0, 1}},
		{"ArgMin", 0, tensor.Int32, []int64{0, 1, 0}},
	} {
		var attrs any
		if c.dt == tensor.Int32 {
			attrs = ArgMaxAttrs{OutputType: tensor.Int32}
		}
		out := registrytest.MustRun(t, c.op, attrs, 1, x, shpInt32Scalar(c.dim))[0]
		if out.Dtype() != c.dt {
			t.Fatalf("%s: dtype %v, want %v", c.op, out.Dtype(), c.dt)
		}
		var got []int64
		if c.dt == tensor.Int32 {
			got = testutil.Convert[int64](tensorx.MustSlice[int32](out))
		} else {
			got = tensorx.MustSlice[int64](out)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s dim %d: %v, want %v", c.op, c.dim, got, c.want)
		}
	}
	_, err := registrytest.Run(t, "ArgMax", nil, 1, x, shpInt32Scalar(2))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "ArgMax: Expected dimension in the range [-2, 2), but got 2")
	_, err = registrytest.Run(t, "ArgMax", nil, 1, testutil.Dense(t, tensor.Float64, []int{2, 0}, nil), shpInt32Scalar(1))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "ArgMax: Reduction axis 1 is empty in shape [2,0]")
	_, err = registrytest.Run(t, "ArgMax", nil, 1, x, shpInt32s(1))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "dim must be a scalar, but received tensor of shape: [1]")
	_, err = registrytest.Run(t, "ArgMin", ArgMaxAttrs{OutputType: tensor.Float32}, 1, x, shpInt32Scalar(0))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "output_type must be int32 or int64")
}
