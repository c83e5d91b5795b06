package fracpool

import "github.com/tapegrad/tapegrad/internal/parallel"

// ---------------------------------------------------------------------
// Average pooling gradient.

// AvgGradDisjoint is FractionalAvgPoolGrad without overlapping: the
// cells (validated, strictly increasing sequences) are disjoint, so every
// input position receives at most one contribution, 0 + double(dy)/count
// converted to T, and is written once; positions outside every cell get 0.
// Rows of cells are independent and run in parallel. dy is [nd,oh,ow,c];
// AvgGradDisjoint writes the first nd images of dst [n,h,w,c] (the
// caller clears the others).
func AvgGradDisjoint[T Num](dst, dy []T, nd, h, w, c int, rows, cols []int64, threads int) {
	oh := len(rows) - 1
	if g := grain(h*w*c/oh + 1); serial(threads, nd*oh, g) {
		avgGradDisjointRows(dst, dy, h, w, c, rows, cols, 0, nd*oh)
	} else {
		parallel.For(threads, nd*oh, g, func(lo, hi int) {
			avgGradDisjointRows(dst, dy, h, w, c, rows, cols, lo, hi)
		})
	}
}

// avgGradDisjointRows does AvgGradDisjoint's rows of cells [lo, hi).
func avgGradDisjointRows[T Num](o, dy []T, h, w, c int, rows, cols []int64, lo, hi int) {
	oh, ow := len(rows)-1, len(cols)-1
	cFirst, _ := Cell(cols, 0, w, false)
	_, cLast := Cell(cols, ow-1, w, false)
	for i := lo; i < hi; i++ {
		b, a := i/oh, i%oh
		img := o[b*h*w*c : (b+1)*h*w*c]
		r0, r1 := Cell(rows, a, h, false)
		if a == 0 {
			clear(img[:int(r0)*w*c])
		}
		if a == oh-1 {
			clear(img[int(r1+1)*w*c:])
		}
		for r := int(r0); r <= int(r1); r++ {
			row := img[r*w*c : (r+1)*w*c]
			clear(row[:int(cFirst)*c])
			clear(row[int(cLast+1)*c:])
			for j := 0; j < ow; j++ {
				c0, c1 := Cell(cols, j, w, false)
				cnt := int(r1-r0+1) * int(c1-c0+1)
				src := dy[(i*ow+j)*c:][:c]
				for cc := int(c0); cc <= int(c1); cc++ {
					spreadTo(row[cc*c:][:c], src, cnt)
				}
			}
		}
	}
}

// AvgGradOverlap is FractionalAvgPoolGrad with overlapping cells: every
// input position sums its contributions double(dy)/count in float64 in
// TensorFlow's order (cells by output row, then column), starting from 0,
// and is converted to T once. The contributions are computed once per
// output element (v, float64 scratch); input rows then run in parallel,
// each chunk of rows with its own float64 accumulator of one pixel's
// channels for positions covered by more than four cells. dy is
// [nd,oh,ow,c]; AvgGradOverlap writes the first nd images of dst [n,h,w,c]
// (the caller clears the others). The scratch slices v, cover and accs
// have the lengths AvgGradOverlapScratch gives; their contents on entry
// do not matter.
func AvgGradOverlap[T Num](dst, dy []T, nd, h, w, c int, rows, cols []int64, v []float64, cover []int64, accs []float64, threads int) {
	oh, ow := len(rows)-1, len(cols)-1
	if g := grain(ow * c); serial(threads, nd*oh, g) {
		overlapContribs(v, dy, h, w, c, rows, cols, 0, nd*oh)
	} else {
		parallel.For(threads, nd*oh, g, func(lo, hi int) { overlapContribs(v, dy, h, w, c, rows, cols, lo, hi) })
	}
	rlo, rhi, clo, chi := cover[:h], cover[h:2*h], cover[2*h:2*h+w], cover[2*h+w:]
	Cover(rlo, rhi, rows, h, true)
	Cover(clo, chi, cols, w, true)
	g := grain(w * c)
	nch := parallel.Chunks(nd*h, g)
	cv := coverage{rlo: rlo, rhi: rhi, clo: clo, chi: chi}
	if serial(threads, nch, 1) {
		for ci := range nch {
			overlapGather(dst, v, accs, cv, h, w, c, oh, ow, ci, ci*g, min((ci+1)*g, nd*h))
		}
	} else {
		parallel.ForChunks(threads, nd*h, g, func(ci, lo, hi int) { overlapGather(dst, v, accs, cv, h, w, c, oh, ow, ci, lo, hi) })
	}
}

// AvgGradOverlapScratch returns the lengths of AvgGradOverlap's scratch
// slices for dy [nd,oh,ow,c] and an input of h rows and w columns: the
// float64 contributions v (one per dy element), the int64 coverage
// ranges (2·(h+w)) and the float64 accumulators (c per chunk of input
// rows).
func AvgGradOverlapScratch(nd, h, w, c, oh, ow int) (nv, ncover, naccs int) {
	return nd * oh * ow * c, 2 * (h + w), parallel.Chunks(nd*h, grain(w*c)) * c
}

// overlapContribs computes AvgGradOverlap's contributions v of the
// rows of cells [lo, hi) (row i of image i/oh).
func overlapContribs[T Num](v []float64, dy []T, h, w, c int, rows, cols []int64, lo, hi int) {
	oh, ow := len(rows)-1, len(cols)-1
	for i := lo; i < hi; i++ {
		r0, r1 := Cell(rows, i%oh, h, true)
		for j := 0; j < ow; j++ {
			c0, c1 := Cell(cols, j, w, true)
			p := (i*ow + j) * c
			contrib(v[p:p+c], dy[p:p+c], int(r1-r0+1)*int(c1-c0+1))
		}
	}
}

// coverage holds the ranges of cells covering each input row (rlo,
// rhi) and column (clo, chi), lo = −1 for none (Cover).
type coverage struct {
	rlo, rhi, clo, chi []int64
}

// overlapGather sums AvgGradOverlap's contributions into the input
// rows [lo, hi) (row i of image i/h) of chunk ci, whose accumulator is
// accs[ci·c:(ci+1)·c].
func overlapGather[T Num](o []T, v, accs []float64, cv coverage, h, w, c, oh, ow, ci, lo, hi int) {
	rlo, rhi, clo, chi := cv.rlo, cv.rhi, cv.clo, cv.chi
	acc := accs[ci*c : (ci+1)*c]
	var offs [4]int
	for i := lo; i < hi; i++ {
		b, r := i/h, i%h
		a0, a1 := int(rlo[r]), int(rhi[r])
		if a0 < 0 {
			clear(o[i*w*c : (i+1)*w*c])
			continue
		}
		for cc := 0; cc < w; cc++ {
			dst := o[(i*w+cc)*c:][:c]
			b0, b1 := int(clo[cc]), int(chi[cc])
			if b0 < 0 {
				clear(dst)
				continue
			}
			if (a1-a0+1)*(b1-b0+1) <= len(offs) {
				k := 0
				for aa := a0; aa <= a1; aa++ {
					for bb := b0; bb <= b1; bb++ {
						offs[k] = ((b*oh+aa)*ow + bb) * c
						k++
					}
				}
				gatherCell(dst, v, offs[:k])
				continue
			}
			clear(acc)
			for aa := a0; aa <= a1; aa++ {
				for bb := b0; bb <= b1; bb++ {
					src := v[((b*oh+aa)*ow+bb)*c:][:c]
					for k, x := range src {
						acc[k] += x
					}
				}
			}
			for k, x := range acc {
				dst[k] = T(x)
			}
		}
	}
}

// contrib sets v = double(dy)/cnt elementwise (a power-of-two count as
// an exact multiplication by its reciprocal).
func contrib[T Num](v []float64, dy []T, cnt int) {
	dy = dy[:len(v)]
	if cnt > 0 && cnt&(cnt-1) == 0 {
		rc := 1 / float64(cnt)
		for k, x := range dy {
			v[k] = float64(float64(x) * rc)
		}
		return
	}
	ct := float64(cnt)
	for k, x := range dy {
		v[k] = float64(x) / ct
	}
}

// gatherCell sets dst = T(0 + v[offs[0]:] + v[offs[1]:] + ...)
// elementwise, adding in float64 in the order of offs (1 to 4 of them).
func gatherCell[T Num](dst []T, v []float64, offs []int) {
	var zero float64
	switch len(offs) {
	case 1:
		s0 := v[offs[0]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k])
		}
	case 2:
		s0, s1 := v[offs[0]:][:len(dst)], v[offs[1]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k] + s1[k])
		}
	case 3:
		s0, s1, s2 := v[offs[0]:][:len(dst)], v[offs[1]:][:len(dst)], v[offs[2]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k] + s1[k] + s2[k])
		}
	default:
		s0, s1, s2, s3 := v[offs[0]:][:len(dst)], v[offs[1]:][:len(dst)], v[offs[2]:][:len(dst)], v[offs[3]:][:len(dst)]
		for k := range dst {
			dst[k] = T(zero + s0[k] + s1[k] + s2[k] + s3[k])
		}
	}
}

// spreadTo sets dst = T(0 + double(src)/cnt) elementwise (a
// power-of-two count as an exact multiplication by its reciprocal; the
// explicit conversions keep the rounding points TensorFlow has).
func spreadTo[T Num](dst, src []T, cnt int) {
	var zero float64
	src = src[:len(dst)]
	if cnt > 0 && cnt&(cnt-1) == 0 {
		rc := 1 / float64(cnt)
		for k, x := range src {
			dst[k] = T(zero + float64(float64(x)*rc))
		}
		return
	}
	ct := float64(cnt)
	for k, x := range src {
		dst[k] = T(zero + float64(x)/ct)
	}
}

// ---------------------------------------------------------------------
// Max pooling gradient.

// argmax runs the max-pooling scan of batch b and calls visit for every
// cell with the cell's output offset and, per channel, the flat input
// index of the cell's first maximum. It returns false if the maxima differ
// from y (two NaNs compare equal).
func argmax[T Num](am []int64, m []T, x, y []T, b, h, w, c int, rows, cols []int64, overlapping bool, visit func(o int, am []int64)) bool {
	oh, ow := len(rows)-1, len(cols)-1
	for a := 0; a < oh; a++ {
		r0, r1 := Cell(rows, a, h, overlapping)
		for j := 0; j < ow; j++ {
			c0, c1 := Cell(cols, j, w, overlapping)
			first := true
			for r := int(r0); r <= int(r1); r++ {
				base := (b*h + r) * w
				for cc := int(c0); cc <= int(c1); cc++ {
					p := (base + cc) * c
					src := x[p:][:c]
					if first {
						copy(m, src)
						for k := range am {
							am[k] = int64(p + k)
						}
						first = false
						continue
					}
					for k, v := range src {
						if m[k] < v {
							m[k] = v
							am[k] = int64(p + k)
						}
					}
				}
			}
			o := ((b*oh+a)*ow + j) * c
			for k, v := range y[o:][:c] {
				if m[k] != v && (m[k] == m[k] || v == v) {
					return false
				}
			}
			visit(o, am)
		}
	}
	return true
}

// MaxScratch holds the scratch of MaxGrad and MaxGradGrad for an input
// [n,h,w,c]: Argmax and Max of n·c entries, Bad of n (their contents on
// entry do not matter).
type MaxScratch[T Num] struct {
	Argmax []int64
	Max    []T
	Bad    []bool
}

// maxScan runs argmax over every batch in parallel (one scratch slot per
// batch) and reports whether every maximum equals y's.
func maxScan[T Num](x, y []T, n, h, w, c int, rows, cols []int64, overlapping bool, s MaxScratch[T], threads int,
	visit func(b, o int, am []int64)) bool {
	am, m, bad := s.Argmax, s.Max, s.Bad
	parallel.For(threads, n, grain(h*w*c), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			ok := argmax(am[b*c:(b+1)*c], m[b*c:(b+1)*c], x, y, b, h, w, c, rows, cols, overlapping,
				func(o int, idx []int64) { visit(b, o, idx) })
			bad[b] = !ok
		}
	})
	for _, v := range bad {
		if v {
			return false
		}
	}
	return true
}

// MaxGrad adds each dy value (dy shaped like y [n,oh,ow,c]) into dst
// (shaped like x [n,h,w,c], zeroed by the caller) at the input position
// of its cell's first maximum in x, in output order. y must be the max
// pooling of x over the cells: MaxGrad returns false if a maximum differs
// from y (two NaNs compare equal), dst then being incomplete.
func MaxGrad[T Num](dst, dy, x, y []T, n, h, w, c int, rows, cols []int64, overlapping bool, s MaxScratch[T], threads int) bool {
	return maxScan(x, y, n, h, w, c, rows, cols, overlapping, s, threads, func(_, o int, am []int64) {
		for k, v := range dy[o:][:len(am)] {
			dst[am[k]] += v
		}
	})
}

// MaxGradGrad sets dst (shaped like y [n,oh,ow,c]) to g (shaped like x
// [n,h,w,c]) at each cell's first maximum in x: the adjoint of MaxGrad in
// dy. It returns false, as MaxGrad, if y is not the max pooling of x.
func MaxGradGrad[T Num](dst, g, x, y []T, n, h, w, c int, rows, cols []int64, overlapping bool, s MaxScratch[T], threads int) bool {
	return maxScan(x, y, n, h, w, c, rows, cols, overlapping, s, threads, func(_, o int, am []int64) {
		for k, idx := range am {
			dst[o+k] = g[idx]
		}
	})
}
