// Package slicekern holds the copy loops of the slicing family: Slice,
// StridedSlice and their gradients, Pad and ConcatV2 (packages forward and
// backward keep the semantics and call these).
//
// A box is a strided sub-array of a big row-major array of shape big:
// along dimension d it starts at start[d] and takes counts[d] elements
// step[d] apart (step may be negative). Gather copies a box out into a
// dense array of shape counts; Scatter writes a dense array into a box.
// Work is split across threads by rows of the dense array, in chunks whose
// bounds depend only on the shapes; the results do not depend on the
// thread count (every element is copied once).
package slicekern

import (
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Grain is the number of elements per parallel chunk.
const Grain = 1 << 15

// box is a box prepared for its loops: the dense shape, and for each
// dimension the big array's element stride times the step.
type box struct {
	rank   int
	counts [tensorx.MaxRank]int
	jump   [tensorx.MaxRank]int // big-array stride of one step along d
	base   int                  // big-array offset of the box's first element
}

// newBox prepares the box (start, step, counts) of an array of shape big.
// All four slices have the same length, at most tensorx.MaxRank.
func newBox(big, start, step, counts []int) box {
	var b box
	b.rank = len(big)
	s := 1
	for d := len(big) - 1; d >= 0; d-- {
		b.counts[d] = counts[d]
		b.jump[d] = s * step[d]
		b.base += s * start[d]
		s *= big[d]
	}
	return b
}

// rows returns the number of rows (products of all but the last dense
// dimension) and the row length.
func (b *box) rows() (rows, inner int) {
	if b.rank == 0 {
		return 1, 1
	}
	rows = 1
	for d := 0; d < b.rank-1; d++ {
		rows *= b.counts[d]
	}
	return rows, b.counts[b.rank-1]
}

// Gather copies the box (start, step, counts) of src, an array of shape
// big, into dst (shape counts, row-major): dst[i] = src[start + i·step].
func Gather[T any](threads int, dst, src []T, big, start, step, counts []int) {
	b := newBox(big, start, step, counts)
	run(threads, &b, dst, src, false)
}

// Scatter writes src (shape counts, row-major) into the box (start, step,
// counts) of dst, an array of shape big: dst[start + i·step] = src[i]. The
// other elements of dst are left alone.
func Scatter[T any](threads int, dst, src []T, big, start, step, counts []int) {
	b := newBox(big, start, step, counts)
	run(threads, &b, dst, src, true)
}

// run walks the box row by row: gathering from big into dense (scatter
// false: big = src, dense = dst) or scattering dense into big (scatter
// true: big = dst, dense = src).
func run[T any](threads int, b *box, dst, src []T, scatter bool) {
	rows, inner := b.rows()
	if rows*inner == 0 {
		return
	}
	grain := max(1, Grain/inner)
	if threads <= 1 || rows <= grain {
		rowRange(b, dst, src, scatter, 0, rows)
		return
	}
	bc := *b // the closure's copy, so that b can stay on the caller's stack
	parallel.For(threads, rows, grain, func(lo, hi int) { rowRange(&bc, dst, src, scatter, lo, hi) })
}

// rowRange copies the rows [lo, hi) of the box.
func rowRange[T any](b *box, dst, src []T, scatter bool, lo, hi int) {
	r := b.rank
	if r == 0 {
		if scatter {
			dst[b.base] = src[0]
		} else {
			dst[0] = src[b.base]
		}
		return
	}
	var idx [tensorx.MaxRank]int
	off := b.base
	rem := lo
	for d := r - 2; d >= 0; d-- {
		idx[d] = rem % b.counts[d]
		rem /= b.counts[d]
		off += idx[d] * b.jump[d]
	}
	inner, step := b.counts[r-1], b.jump[r-1]
	for row := lo; row < hi; row++ {
		dense := row * inner
		switch {
		case step == 1 && scatter:
			copy(dst[off:off+inner], src[dense:dense+inner])
		case step == 1:
			copy(dst[dense:dense+inner], src[off:off+inner])
		case scatter:
			o := off
			for _, v := range src[dense : dense+inner] {
				dst[o] = v
				o += step
			}
		default:
			o := off
			d := dst[dense : dense+inner]
			for i := range d {
				d[i] = src[o]
				o += step
			}
		}
		// Advance the odometer over the leading dimensions.
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			off += b.jump[d]
			if idx[d] < b.counts[d] {
				break
			}
			off -= idx[d] * b.jump[d]
			idx[d] = 0
		}
	}
}

// CopyColumns copies src, outer rows of width w, into columns
// [col, col+w) of dst, outer rows of width dstW: ConcatV2's loop, called
// once per input with the input's offset along the concatenation axis
// (times the inner size) as col.
func CopyColumns[T any](threads int, dst []T, dstW, col int, src []T, outer, w int) {
	if outer == 0 || w == 0 {
		return
	}
	grain := max(1, Grain/w)
	if threads <= 1 || outer <= grain {
		copyColumns(dst, dstW, col, src, w, 0, outer)
		return
	}
	parallel.For(threads, outer, grain, func(lo, hi int) { copyColumns(dst, dstW, col, src, w, lo, hi) })
}

func copyColumns[T any](dst []T, dstW, col int, src []T, w, lo, hi int) {
	for o := lo; o < hi; o++ {
		copy(dst[o*dstW+col:o*dstW+col+w], src[o*w:(o+1)*w])
	}
}

// Fill sets every element of dst to v.
func Fill[T any](threads int, dst []T, v T) {
	if threads <= 1 || len(dst) <= Grain {
		fill(dst, v)
		return
	}
	parallel.For(threads, len(dst), Grain, func(lo, hi int) { fill(dst[lo:hi], v) })
}

func fill[T any](s []T, v T) {
	for i := range s {
		s[i] = v
	}
}
