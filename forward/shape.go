package forward

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Shape ops: Reshape, Transpose, Fill and InvertPermutation, with
// TensorFlow's names, argument order, dtypes and error messages. Every
// kernel copies: outputs never alias inputs.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: "Reshape",
		Doc: "a copy of tensor with the shape given by the int32/int64 vector shape; " +
			"one entry may be -1 and is inferred from the element count",
		Inputs:  args("tensor", "shape"),
		Outputs: args("output"),
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: reshapeKernel, tensor.Float64: reshapeKernel,
			tensor.Int32: reshapeKernel, tensor.Int64: reshapeKernel, tensor.Bool: reshapeKernel,
		},
		Samples: reshapeSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name:    "Transpose",
		Doc:     "permutes the dimensions of x: y.shape[i] = x.shape[perm[i]]; perm is an int32/int64 permutation of 0..rank-1",
		Inputs:  args("x", "perm"),
		Outputs: args("y"),
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: transposeKernel[float32], tensor.Float64: transposeKernel[float64],
			tensor.Int32: transposeKernel[int32], tensor.Int64: transposeKernel[int64], tensor.Bool: transposeKernel[bool],
		},
		Samples: transposeSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name:      "Fill",
		Doc:       "a tensor of shape dims (an int32/int64 vector) with every element equal to the scalar value",
		Inputs:    args("dims", "value"),
		Outputs:   args("output"),
		TypeInput: 1,
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: fillKernel[float32], tensor.Float64: fillKernel[float64],
			tensor.Int32: fillKernel[int32], tensor.Int64: fillKernel[int64], tensor.Bool: fillKernel[bool],
		},
		Samples: fillSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name:    "InvertPermutation",
		Doc:     "the inverse of the int32/int64 permutation x: y[x[i]] = i",
		Inputs:  args("x"),
		Outputs: args("y"),
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Int32: invertPermutationKernel[int32], tensor.Int64: invertPermutationKernel[int64],
		},
	})
}

// shpGrain is the number of elements per parallel chunk of copy loops.
const shpGrain = 1 << 15

// shpDebug formats a shape as TensorFlow's TensorShape::DebugString:
// "[2,3]", "[]" for a scalar.
func shpDebug(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// shpTFDtype names a dtype as TensorFlow's messages do ("float", "double").
func shpTFDtype(dt tensor.Dtype) string {
	switch dt {
	case tensor.Float32:
		return "float"
	case tensor.Float64:
		return "double"
	}
	return dt.String()
}

// shpDtypeError is TensorFlow's error for an input of the wrong dtype,
// followed by the dtypes as Go names them (TensorFlow says "float" and
// "double" for float32 and float64).
func shpDtypeError(op string, input int, want string, got tensor.Dtype) error {
	return registry.InputErrorf(registry.ErrDtype, input, "%s: cannot compute %s as input #%d(zero-based) was expected to be a %s tensor but is a %s tensor (Go dtypes: got %v, want %s)",
		op, op, input, want, shpTFDtype(got), got, shpGoDtype(want))
}

// shpGoDtype turns TensorFlow's dtype names in want ("float", "double")
// into Go's.
func shpGoDtype(want string) string {
	switch want {
	case "float":
		return "float32"
	case "double":
		return "float64"
	}
	return want
}

// shpIndexInput reads an int32 or int64 input (shape, perm, axes) as []int,
// appended to dst (a stack buffer of the caller's).
func shpIndexInput(dst []int, op string, input int, t *tensor.Dense) ([]int, error) {
	if t.Dtype() != tensor.Int32 && t.Dtype() != tensor.Int64 {
		return nil, shpDtypeError(op, input, "int32 or int64", t.Dtype())
	}
	v, err := tensorx.AppendInts(dst, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return v, nil
}

// ---------------------------------------------------------------------------
// Reshape.

// reshapeOutShape computes Reshape's output shape as TensorFlow's kernel
// does: at most one -1 (inferred), other sizes non-negative, and the
// element count preserved. Zero sizes are left out of the product so that
// the -1 can still be inferred next to them. The shape is appended to dst.
func reshapeOutShape(dst, in, sizes []int) ([]int, error) {
	n, err := tensorx.Numel(in)
	if err != nil {
		return nil, fmt.Errorf("Reshape: %w", err)
	}
	if len(sizes) > tensorx.MaxRank {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "Reshape: shape has %d dimensions, more than the maximum %d", len(sizes), tensorx.MaxRank)
	}
	out := dst
	for range sizes {
		out = append(out, 0)
	}
	out = out[len(dst):]
	unknown := -1
	product := 1
	sizesHaveZero := false
	for d, s := range sizes {
		switch {
		case s == -1:
			if unknown != -1 {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "Reshape: Only one input size may be -1, not both %d and %d", unknown, d)
			}
			unknown = d
			out[d] = 1
		case s < 0:
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Reshape: Size %d must be non-negative, not %d", d, s)
		case s == 0:
			out[d] = 0
			sizesHaveZero = true
		default:
			if product > (1<<62)/s {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "Reshape: requested shape %v has too many elements", slices.Clone(sizes))
			}
			out[d] = s
			product *= s
		}
	}
	if unknown != -1 {
		// Input dimensions of size 0 are skipped when the requested shape
		// has a zero size too, so the -1 stays inferable.
		inCount, inHasZero := 1, false
		for _, d := range in {
			if d > 0 || !sizesHaveZero {
				inCount *= d
			} else {
				inHasZero = true
			}
		}
		missing := inCount / product
		if !inHasZero && missing*product != inCount {
			return nil, registry.Errorf(registry.ErrInvalidArgument,
				"Reshape: Input to reshape is a tensor with %d values, but the requested shape requires a multiple of %d", inCount, product)
		}
		out[unknown] = missing
	}
	m := 1
	for _, d := range out {
		m *= d
	}
	if m != n {
		return nil, registry.InputErrorf(registry.ErrInvalidArgument, 1,
			"Reshape: Input to reshape is a tensor with %d values, but the requested shape has %d", n, m)
	}
	return out, nil
}

func reshapeKernel(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	x, st := in[0], in[1]
	if r := len(st.Shape()); r > 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "Reshape: sizes input must be 1-D, not %s", shpDebug(st.Shape()))
	}
	var sbuf, obuf [tensorx.MaxRank]int
	sizes, err := shpIndexInput(sbuf[:0], "Reshape", 1, st)
	if err != nil {
		return nil, err
	}
	shape, err := reshapeOutShape(obuf[:0], x.Shape(), sizes)
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(x.Dtype(), shape...)
	if err != nil {
		return nil, err
	}
	tensorx.CopyData(out, x)
	return kc.Results(out), nil
}

// ---------------------------------------------------------------------------
// Transpose.

// transposePerm validates perm for a tensor of the given rank, with
// TensorFlow's messages. perm is appended to dst.
func transposePerm(dst []int, rank int, pt *tensor.Dense) ([]int, error) {
	if len(pt.Shape()) != 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "Transpose: perm must be rank 1, got shape %s", shpDebug(pt.Shape()))
	}
	perm, err := shpIndexInput(dst, "Transpose", 1, pt)
	if err != nil {
		return nil, err
	}
	if len(perm) != rank {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "Transpose: transpose expects a vector of size %d. But input(1) is a vector of size %d", rank, len(perm))
	}
	var seen [tensorx.MaxRank]bool
	for _, d := range perm {
		if d < 0 || d >= rank {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Transpose: %d is out of range [0 .. %d)", d, rank)
		}
		seen[d] = true
	}
	for i := 0; i < rank; i++ {
		if !seen[i] {
			s := make([]string, len(perm))
			for j, d := range perm {
				s[j] = strconv.Itoa(d)
			}
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Transpose: %d is missing from {%s}.", i, strings.Join(s, ","))
		}
	}
	return perm, nil
}

// shpTransposePlan is a transpose reduced to its essentials: size-1
// dimensions dropped and input dimensions that stay adjacent and in order
// in the output merged. dims are the reduced input dimensions and perm the
// reduced permutation (output axis i reads input axis perm[i]).
type shpTransposePlan struct {
	rank int
	dims [tensorx.MaxRank]int
	perm [tensorx.MaxRank]int
}

func newTransposePlan(shape, perm []int) shpTransposePlan {
	var p shpTransposePlan
	// Drop size-1 dimensions and renumber the remaining input axes.
	var newIdx [tensorx.MaxRank]int
	k := 0
	for i, d := range shape {
		if d == 1 {
			newIdx[i] = -1
			continue
		}
		newIdx[i] = k
		k++
	}
	var dims, pm [tensorx.MaxRank]int
	nd := 0
	for i, d := range shape {
		if d != 1 {
			dims[newIdx[i]] = d
			nd++
		}
	}
	np := 0
	for _, a := range perm {
		if newIdx[a] >= 0 {
			pm[np] = newIdx[a]
			np++
		}
	}
	// Merge output axes i, i+1 reading consecutive input axes. Each output
	// axis maps to a group of input axes; the group's size is the product.
	// group[j] is the merged index of input axis j.
	var start [tensorx.MaxRank]bool // input axis j starts a group
	for j := 0; j < nd; j++ {
		start[j] = true
	}
	for i := 1; i < np; i++ {
		if pm[i] == pm[i-1]+1 {
			start[pm[i]] = false
		}
	}
	var group [tensorx.MaxRank]int
	g := -1
	for j := 0; j < nd; j++ {
		if start[j] {
			g++
			p.dims[g] = dims[j]
		} else {
			p.dims[g] *= dims[j]
		}
		group[j] = g
	}
	p.rank = g + 1
	r := 0
	for i := 0; i < np; i++ {
		if i > 0 && pm[i] == pm[i-1]+1 {
			continue
		}
		p.perm[r] = group[pm[i]]
		r++
	}
	return p
}

func transposeKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	x := in[0]
	shape := x.Shape()
	var pbuf [tensorx.MaxRank]int
	perm, err := transposePerm(pbuf[:0], len(shape), in[1])
	if err != nil {
		return nil, err
	}
	var obuf [tensorx.MaxRank]int
	outShape := obuf[:0]
	for _, a := range perm {
		outShape = append(outShape, shape[a])
	}
	out, err := kc.Output(x.Dtype(), outShape...)
	if err != nil {
		return nil, err
	}
	src, dst := data[T](x), data[T](out)
	if len(dst) == 0 {
		return kc.Results(out), nil
	}
	transposeInto(kc.NumThreads(), newTransposePlan(shape, perm), src, dst)
	return kc.Results(out), nil
}

// transposeInto writes the transpose described by p of src into dst.
func transposeInto[T any](threads int, p shpTransposePlan, src, dst []T) {
	n := len(dst)
	r := p.rank
	if r <= 1 || shpIsIdentity(p.perm[:r]) {
		if serial(threads, n, shpGrain) {
			copy(dst, src[:n])
		} else {
			parallel.For(threads, n, shpGrain, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
		}
		return
	}
	// Input strides and output dimensions.
	var istr, od, st [tensorx.MaxRank]int
	s := 1
	for j := r - 1; j >= 0; j-- {
		istr[j] = s
		s *= p.dims[j]
	}
	for i := 0; i < r; i++ {
		od[i] = p.dims[p.perm[i]]
		st[i] = istr[p.perm[i]]
	}
	// Last two axes swapped, leading axes in place: a batch of 2-D
	// transposes, done in cache-friendly tiles.
	if p.perm[r-1] == r-2 && p.perm[r-2] == r-1 && shpIsIdentity(p.perm[:r-2]) {
		rows, cols := p.dims[r-2], p.dims[r-1] // of each input matrix
		batch := n / (rows * cols)
		shpTransposeTiles(threads, batch, rows, cols, src, dst)
		return
	}
	// General case: walk the output row by row (rows along its last axis),
	// gathering from the input with the permuted strides.
	inner := od[r-1]
	innerStride := st[r-1]
	rowsTotal := n / inner
	grain := max(1, shpGrain/inner)
	parallel.For(threads, rowsTotal, grain, func(lo, hi int) {
		// Multi-index of row lo over the output's leading r-1 axes.
		var idx [tensorx.MaxRank]int
		off := 0
		rem := lo
		for i := r - 2; i >= 0; i-- {
			idx[i] = rem % od[i]
			rem /= od[i]
			off += idx[i] * st[i]
		}
		for row := lo; row < hi; row++ {
			d := dst[row*inner : (row+1)*inner]
			if innerStride == 1 {
				copy(d, src[off:off+inner])
			} else {
				o := off
				for q := range d {
					d[q] = src[o]
					o += innerStride
				}
			}
			// Advance the odometer.
			for i := r - 2; i >= 0; i-- {
				idx[i]++
				off += st[i]
				if idx[i] < od[i] {
					break
				}
				off -= idx[i] * st[i]
				idx[i] = 0
			}
		}
	})
}

func shpIsIdentity(perm []int) bool {
	for i, a := range perm {
		if a != i {
			return false
		}
	}
	return true
}

// shpTile is the tile edge of blocked 2-D transposes.
const shpTile = 32

// shpTransposeTiles transposes batch row-major rows×cols matrices of src
// into cols×rows matrices of dst, tile by tile.
func shpTransposeTiles[T any](threads, batch, rows, cols int, src, dst []T) {
	tilesR := (rows + shpTile - 1) / shpTile
	tilesC := (cols + shpTile - 1) / shpTile
	// One task per tile column of the output (a band of shpTile output rows).
	tasks := batch * tilesC
	grain := max(1, shpGrain/(shpTile*rows))
	if serial(threads, tasks, grain) {
		shpTransposeTileRange(rows, cols, tilesR, tilesC, src, dst, 0, tasks)
		return
	}
	parallel.For(threads, tasks, grain, func(lo, hi int) {
		shpTransposeTileRange(rows, cols, tilesR, tilesC, src, dst, lo, hi)
	})
}

// shpTransposeTileRange does shpTransposeTiles' tasks [lo, hi).
func shpTransposeTileRange[T any](rows, cols, tilesR, tilesC int, src, dst []T, lo, hi int) {
	for t := lo; t < hi; t++ {
		b, tc := t/tilesC, t%tilesC
		s := src[b*rows*cols : (b+1)*rows*cols]
		d := dst[b*rows*cols : (b+1)*rows*cols]
		j0, j1 := tc*shpTile, min((tc+1)*shpTile, cols)
		for tr := 0; tr < tilesR; tr++ {
			i0, i1 := tr*shpTile, min((tr+1)*shpTile, rows)
			for j := j0; j < j1; j++ {
				drow := d[j*rows+i0 : j*rows+i1]
				o := i0*cols + j
				for q := range drow {
					drow[q] = s[o]
					o += cols
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Fill.

func fillKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	dt, vt := in[0], in[1]
	// TensorFlow still accepts a scalar dims (legacy) and a one-element
	// vector value.
	if len(dt.Shape()) > 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 0, "Fill: dims must represent a vector, got shape %s", shpDebug(dt.Shape()))
	}
	if vs := vt.Shape(); !(len(vs) == 0 || (len(vs) == 1 && vs[0] == 1)) {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "Fill: value must represent a scalar, got shape %s", shpDebug(vs))
	}
	var dbuf [tensorx.MaxRank]int
	dims, err := shpIndexInput(dbuf[:0], "Fill", 0, dt)
	if err != nil {
		return nil, err
	}
	for _, d := range dims {
		if d < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Fill: Dimension %d must be >= 0", d)
		}
	}
	if _, err := tensorx.Numel(dims); err != nil {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "Fill: %v", err)
	}
	out, err := kc.Output(vt.Dtype(), dims...)
	if err != nil {
		return nil, err
	}
	v := data[T](vt)[0]
	o := data[T](out)
	if threads := kc.NumThreads(); serial(threads, len(o), shpGrain) {
		fill(o, v)
	} else {
		parallel.For(threads, len(o), shpGrain, func(lo, hi int) { fill(o[lo:hi], v) })
	}
	return kc.Results(out), nil
}

// ---------------------------------------------------------------------------
// InvertPermutation.

func invertPermutationKernel[T int32 | int64](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	x := in[0]
	if len(x.Shape()) != 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 0, "InvertPermutation: invert_permutation expects a 1D vector.")
	}
	src := data[T](x)
	n := len(src)
	out, err := kc.Output(x.Dtype(), n)
	if err != nil {
		return nil, err
	}
	dst := data[T](out)
	for i := range dst {
		dst[i] = -1
	}
	for i, d := range src {
		if d < 0 || int64(d) >= int64(n) {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "InvertPermutation: %d is not between 0 and %d", d, n)
		}
		if dst[d] != -1 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "InvertPermutation: %d is duplicated in the input.", d)
		}
		dst[d] = T(i)
	}
	return kc.Results(out), nil
}
