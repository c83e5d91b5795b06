package conv

import (
	"sync"

	"github.com/tapegrad/tapegrad/internal/ewkern"
	"github.com/tapegrad/tapegrad/internal/gemm"
)

// rowsOf describes the im2col matrix of group grp, from output position r0
// on, as GEMM rows gathered from x through m (getRowsMap of g): row r is
// the receptive field of position r0+r in filter order [kh, kw, cf], one
// segment of cf channels per filter tap, zero where the tap falls in the
// padding. The segments are read from x[grp·cf:], so one map serves every
// group and row range.
func rowsOf[T Float](g *Geom, x []T, grp, r0 int, m *rowsMap) gemm.Rows[T] {
	return gemm.Rows[T]{Data: x[grp*g.CF:], Seg: g.CF, First: r0, Map: m}
}

// rowsMap computes the segment offsets of im2col rows (rowsOf): it is the
// gemm.Offsetter of their gemm.Rows. Maps are pooled (getRowsMap), so
// that a call hands the GEMM an Offsetter without allocating one.
type rowsMap struct {
	h, kh, dh, sh, pt int
	oh, ow, kw        int
	img, rowLen       int   // image and input row strides
	tmpl              []int // [kw][ow]: offset within an input row of tap q's pixel at output column j, or noTap
}

// noTap marks a tap in the padding in rowsMap.tmpl: negative by so much
// that adding any offset of the input keeps it negative.
const noTap = -1 << 62

// maps is the free list of rowsMap.
var maps struct {
	sync.Mutex
	free []*rowsMap
}

// getRowsMap returns a map for g's im2col rows, from the free list when
// it has one; putRowsMap gives it back.
func getRowsMap(g *Geom) *rowsMap {
	maps.Lock()
	var m *rowsMap
	if n := len(maps.free); n > 0 {
		m = maps.free[n-1]
		maps.free[n-1] = nil
		maps.free = maps.free[:n-1]
	}
	maps.Unlock()
	if m == nil {
		m = new(rowsMap)
	}
	*m = rowsMap{
		h: g.H, kh: g.KH, dh: g.DH, sh: g.SH, pt: g.PT,
		oh: g.OH, ow: g.OW, kw: g.KW,
		img: g.H * g.W * g.C, rowLen: g.W * g.C,
		tmpl: resizeInts(m.tmpl, g.KW*g.OW),
	}
	for q := range g.KW {
		// Column j reads input column x = j·sw + x0 with x0 = q·dw - pl;
		// 0 <= x < w for j in [lo, hi).
		x0 := q*g.DW - g.PL
		lo, hi := tapRange(x0, g.SW, g.OW, g.W)
		t := m.tmpl[q*g.OW : (q+1)*g.OW]
		fillInts(t[:lo], noTap)
		for j := lo; j < hi; j++ {
			t[j] = (j*g.SW + x0) * g.C
		}
		fillInts(t[hi:], noTap)
	}
	return m
}

// putRowsMap returns m to the free list (which keeps a few maps).
func putRowsMap(m *rowsMap) {
	maps.Lock()
	if len(maps.free) < 2*maxWorkers {
		maps.free = append(maps.free, m)
	}
	maps.Unlock()
}

// fillInts sets every element of s to v.
func fillInts(s []int, v int) {
	for i := range s {
		s[i] = v
	}
}

// resizeInts returns s with length n, reusing its storage when it can.
func resizeInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// Offsets writes the offsets of positions [pos, pos+n) to dst[s*ld+r], one
// tap and one output row at a time: -1 for a kernel row in the padding,
// else the row's base plus the map's per-column template (which stays
// negative for the columns in the padding).
func (m *rowsMap) Offsets(pos, n int, dst []int, ld int) {
	p := m.oh * m.ow
	b, rem := pos/p, pos%p
	i, j := rem/m.ow, rem%m.ow
	for r := 0; r < n; {
		l := min(m.ow-j, n-r) // positions left in this output row
		for a := 0; a < m.kh; a++ {
			y := i*m.sh - m.pt + a*m.dh
			s := a * m.kw
			if y < 0 || y >= m.h {
				for q := 0; q < m.kw; q++ {
					fillInts(dst[(s+q)*ld+r:(s+q)*ld+r+l], -1)
				}
				continue
			}
			base := b*m.img + y*m.rowLen
			for q := 0; q < m.kw; q++ {
				gemm.AddOffsets(dst[(s+q)*ld+r:(s+q)*ld+r+l], m.tmpl[q*m.ow+j:q*m.ow+j+l], base)
			}
		}
		r += l
		j += l
		if j == m.ow {
			j = 0
			if i++; i == m.oh {
				i = 0
				b++
			}
		}
	}
}

// col2im adds the im2col rows of positions [r0, r1) for group grp back
// into dx (the adjoint of the im2col gather of rowsOf).
func col2im[T Float](g *Geom, col []T, grp, r0, r1 int, dx []T) {
	kcol, p := g.KCol(), g.OH*g.OW
	img, rowLen, seg := g.H*g.W*g.C, g.W*g.C, g.KW*g.CF
	whole := g.DW == 1 && g.CF == g.C
	b, rem := r0/p, r0%p
	i, j := rem/g.OW, rem%g.OW
	for r := r0; r < r1; r++ {
		row := col[(r-r0)*kcol : (r-r0+1)*kcol]
		xb := dx[b*img : (b+1)*img]
		y0, x0 := i*g.SH-g.PT, j*g.SW-g.PL
		qlo, qhi := tapRange(x0, g.DW, g.KW, g.W)
		for kh := 0; kh < g.KH; kh++ {
			yy := y0 + kh*g.DH
			if yy < 0 || yy >= g.H {
				continue
			}
			src := row[kh*seg : (kh+1)*seg]
			base := yy*rowLen + grp*g.CF
			if whole {
				if qhi > qlo {
					s := src[qlo*g.C : qhi*g.C]
					ewkern.AddTo(xb[base+(x0+qlo)*g.C:][:len(s)], s)
				}
				continue
			}
			for q := qlo; q < qhi; q++ {
				o := base + (x0+q*g.DW)*g.C
				ewkern.AddTo(xb[o:o+g.CF], src[q*g.CF:(q+1)*g.CF])
			}
		}
		if j++; j == g.OW {
			j = 0
			if i++; i == g.OH {
				i = 0
				b++
			}
		}
	}
}
