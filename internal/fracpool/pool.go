package fracpool

import (
	"math"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/parallel"
)

// ---------------------------------------------------------------------
// Average pooling.

// AvgPool pools x [n,h,w,c] over the cells of rows/cols (oh+1 and ow+1
// entries) into dst [n,oh,ow,c]: per cell, a sum in T in row-major order
// starting from 0, divided by the element count in T (an integer division
// truncating toward zero for int32 and int64).
func AvgPool[T Num](dst, x []T, n, h, w, c int, rows, cols []int64, overlapping bool, threads int) {
	pool(dst, x, n, h, w, c, rows, cols, overlapping, false, threads)
}

// pool runs the average (isMax false) or the max pooling of x [n,h,w,c]
// over the cells of rows/cols into out [n,oh,ow,c], rows of cells in
// parallel. Cells of at most maxFused pixels are combined in one pass
// over the channels.
func pool[T Num](out, x []T, n, h, w, c int, rows, cols []int64, overlapping, isMax bool, threads int) {
	oh := len(rows) - 1
	if g := grain(h*w*c/oh + 1); serial(threads, n*oh, g) {
		poolRows(x, h, w, c, rows, cols, overlapping, isMax, out, 0, n*oh)
	} else {
		parallel.For(threads, n*oh, g, func(lo, hi int) {
			poolRows(x, h, w, c, rows, cols, overlapping, isMax, out, lo, hi)
		})
	}
}

// poolRows does pool's rows of cells [lo, hi) (row i of image i/oh).
func poolRows[T Num](x []T, h, w, c int, rows, cols []int64, overlapping, isMax bool, out []T, lo, hi int) {
	oh, ow := len(rows)-1, len(cols)-1
	var offs [maxFused]int
	for i := lo; i < hi; i++ {
		b, a := i/oh, i%oh
		r0, r1 := Cell(rows, a, h, overlapping)
		for j := 0; j < ow; j++ {
			c0, c1 := Cell(cols, j, w, overlapping)
			dst := out[(i*ow+j)*c:][:c]
			cnt := max(0, int(r1-r0+1)*int(c1-c0+1))
			fused := cnt <= maxFused
			if fused {
				cellOffsets(offs[:cnt], b, h, w, c, r0, r1, c0, c1)
			}
			switch {
			case isMax && fused:
				maxCell(dst, x, offs[:cnt])
			case isMax:
				maxCellLarge(dst, x, b, h, w, c, r0, r1, c0, c1)
			case fused:
				sumCell(dst, x, offs[:cnt])
				divide(dst, cnt)
			default:
				sumCellLarge(dst, x, b, h, w, c, r0, r1, c0, c1)
				divide(dst, cnt)
			}
		}
	}
}

// maxFused is the largest cell whose elements are combined in one pass
// over the channels (their offsets in a stack array).
const maxFused = 16

// cellOffsets writes the flat offsets of the cell's pixels (channel 0)
// in row-major order into offs, which has exactly the cell's size.
func cellOffsets(offs []int, b, h, w, c int, r0, r1, c0, c1 int64) {
	k := 0
	for r := int(r0); r <= int(r1); r++ {
		base := (b*h + r) * w
		for cc := int(c0); cc <= int(c1); cc++ {
			offs[k] = (base + cc) * c
			k++
		}
	}
}

// sumCell sets dst to 0 + x[offs[0]:] + x[offs[1]:] + ... elementwise,
// adding in the order of offs. The leading 0 + turns −0 into +0, as
// TensorFlow's zero-initialised accumulator does. An empty cell gives 0.
func sumCell[T Num](dst, x []T, offs []int) {
	var zero T
	switch len(offs) {
	case 0:
		clear(dst)
	case 1:
		s0 := x[offs[0]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k]
		}
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k] + s1[k]
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k] + s1[k] + s2[k]
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = zero + s0[k] + s1[k] + s2[k] + s3[k]
		}
		for rest := offs[4:]; len(rest) > 0; {
			m := min(len(rest), 4)
			addCell(dst, x, rest[:m])
			rest = rest[m:]
		}
	}
}

// addCell adds x[offs[0]:], x[offs[1]:], ... (1 to 4 of them) into dst
// elementwise, in the order of offs.
func addCell[T Num](dst, x []T, offs []int) {
	switch len(offs) {
	case 1:
		addTo(dst, x[offs[0]:][:len(dst)])
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = dst[k] + s0[k] + s1[k]
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = dst[k] + s0[k] + s1[k] + s2[k]
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = dst[k] + s0[k] + s1[k] + s2[k] + s3[k]
		}
	}
}

// sumCellLarge is sumCell for cells of more than maxFused pixels.
func sumCellLarge[T Num](dst, x []T, b, h, w, c int, r0, r1, c0, c1 int64) {
	var zero T
	first := true
	for r := int(r0); r <= int(r1); r++ {
		base := (b*h + r) * w
		for cc := int(c0); cc <= int(c1); cc++ {
			src := x[(base+cc)*c:][:len(dst)]
			if first {
				for k, v := range src {
					dst[k] = zero + v
				}
				first = false
				continue
			}
			addTo(dst, src)
		}
	}
}

// addTo adds src into dst elementwise.
func addTo[T Num](dst, src []T) {
	src = src[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := src[i : i+4 : i+4]
		d[0] += s[0]
		d[1] += s[1]
		d[2] += s[2]
		d[3] += s[3]
	}
	for ; i < len(dst); i++ {
		dst[i] += src[i]
	}
}

// divide divides dst by the cell count cnt in T (float division, or
// integer division truncating toward zero). A power-of-two count is
// applied as an exact multiplication by its reciprocal, which rounds
// identically.
func divide[T Num](dst []T, cnt int) {
	switch d := any(dst).(type) {
	case []float32:
		divideFloat(d, cnt)
		return
	case []float64:
		divideFloat(d, cnt)
		return
	}
	if cnt <= 0 {
		clear(dst) // an empty cell (impossible for validated sequences)
		return
	}
	if cnt == 1 {
		return
	}
	ct := T(cnt)
	for i := range dst {
		dst[i] /= ct
	}
}

func divideFloat[F float32 | float64](d []F, cnt int) {
	switch {
	case cnt == 1:
	case cnt > 0 && cnt&(cnt-1) == 0:
		rc := 1 / F(cnt)
		for i := range d {
			d[i] *= rc
		}
	default:
		ct := F(cnt)
		for i := range d {
			d[i] /= ct
		}
	}
}

// Max pooling.

// lowest returns the lowest finite value of T.
func lowest[T Num]() T {
	var z T
	switch p := any(&z).(type) {
	case *float32:
		*p = -math.MaxFloat32
	case *float64:
		*p = -math.MaxFloat64
	case *int32:
		*p = math.MinInt32
	case *int64:
		*p = math.MinInt64
	}
	return z
}

// MaxPool pools x [n,h,w,c] over the cells of rows/cols into dst
// [n,oh,ow,c]: the cell's first element, replaced by every later greater
// one in row-major order.
func MaxPool[T Num](dst, x []T, n, h, w, c int, rows, cols []int64, overlapping bool, threads int) {
	pool(dst, x, n, h, w, c, rows, cols, overlapping, true, threads)
}

// maxCellLarge is maxCell for cells of more than maxFused pixels.
func maxCellLarge[T Num](dst, x []T, b, h, w, c int, r0, r1, c0, c1 int64) {
	first := true
	for r := int(r0); r <= int(r1); r++ {
		base := (b*h + r) * w
		for cc := int(c0); cc <= int(c1); cc++ {
			src := x[(base+cc)*c:][:len(dst)]
			if first {
				copy(dst, src)
				first = false
				continue
			}
			for k, v := range src {
				dst[k] = greater(v, dst[k])
			}
		}
	}
}

// greater returns v if v > m, else m: the max-pooling scan's step
// (equal values and NaNs keep m). It selects the bits without a branch
// (a compare and a conditional move), because max pooling random data
// mispredicts about every other branch.
func greater[T Num](v, m T) T {
	var mask uint64
	if v > m {
		mask = ^uint64(0)
	}
	if unsafe.Sizeof(v) == 4 {
		vb, mb := *(*uint32)(unsafe.Pointer(&v)), *(*uint32)(unsafe.Pointer(&m))
		r := mb ^ (mb^vb)&uint32(mask)
		return *(*T)(unsafe.Pointer(&r))
	}
	vb, mb := *(*uint64)(unsafe.Pointer(&v)), *(*uint64)(unsafe.Pointer(&m))
	r := mb ^ (mb^vb)&mask
	return *(*T)(unsafe.Pointer(&r))
}

// maxCell sets dst to the max-pooling scan over x[offs[0]:],
// x[offs[1]:], ... elementwise (first element, then every greater one).
// An empty cell gives T's lowest value, as TensorFlow's initialisation.
// It and maxInto unroll like sumCell and addCell with another
// operation: near-copies on purpose, the operation inlined in the inner
// loops (a function value there would cost a call per element).
func maxCell[T Num](dst, x []T, offs []int) {
	switch len(offs) {
	case 0:
		low := lowest[T]()
		for k := range dst {
			dst[k] = low
		}
	case 1:
		copy(dst, x[offs[0]:][:len(dst)])
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s1[k], s0[k])
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s2[k], greater(s1[k], s0[k]))
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s3[k], greater(s2[k], greater(s1[k], s0[k])))
		}
		for rest := offs[4:]; len(rest) > 0; {
			m := min(len(rest), 4)
			maxInto(dst, x, rest[:m])
			rest = rest[m:]
		}
	}
}

// maxInto continues the max-pooling scan of dst over x[offs[0]:],
// x[offs[1]:], ... (1 to 4 of them), in the order of offs.
func maxInto[T Num](dst, x []T, offs []int) {
	switch len(offs) {
	case 1:
		s0 := x[offs[0]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s0[k], dst[k])
		}
	case 2:
		s0, s1 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s1[k], greater(s0[k], dst[k]))
		}
	case 3:
		s0, s1, s2 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s2[k], greater(s1[k], greater(s0[k], dst[k])))
		}
	default:
		s0, s1, s2, s3 := x[offs[0]:][:len(dst)], x[offs[1]:][:len(dst)], x[offs[2]:][:len(dst)], x[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = greater(s3[k], greater(s2[k], greater(s1[k], greater(s0[k], dst[k]))))
		}
	}
}
