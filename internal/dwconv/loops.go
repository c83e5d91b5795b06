package dwconv

import (
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// The portable Go loops of Forward, BackpropInput and BackpropFilter, for
// any float type, multiplier and window.

const (
	// rowGrain is the work (multiply-adds) below which rows are not
	// split further across goroutines.
	rowGrain = 1 << 15
	// filterChunkWork is the work (multiply-adds) per chunk of the
	// filter gradient; chunk bounds depend only on the shapes.
	filterChunkWork = 1 << 18
	// maxFilterChunks bounds the chunk count of the filter gradient.
	maxFilterChunks = 64
	// partialElems bounds the float64 partial filters held at once.
	partialElems = 1 << 22
)

// axisRange returns the taps [lo, hi) of one axis whose position
// start + t·d lies in [0, size), for t in [0, k).
func axisRange(start, d, k, size int) (lo, hi int) {
	if start < 0 {
		lo = min(k, (-start+d-1)/d)
	}
	if last := size - 1 - start; last >= 0 {
		hi = min(k, last/d+1)
	}
	return lo, max(lo, hi)
}

// interior returns the output columns [lo, hi) whose whole filter
// window (taps x = j·s − p + q·d, q < k) lies in [0, size). p ≥ 0.
func interior(out, size, k, s, d, p int) (lo, hi int) {
	lo = min(out, (p+s-1)/s)
	if last := size - 1 + p - (k-1)*d; last >= 0 {
		hi = min(out, last/s+1)
	}
	return lo, max(lo, hi)
}

// rowGrainFor returns the rows per scheduling chunk for rows of the
// given work.
func rowGrainFor(rowWork int) int {
	return max(1, rowGrain/max(1, rowWork))
}

// ---------------------------------------------------------------------
// Channel loops. m == 1 unless stated; "set" stores, otherwise adds.

// dot1 computes o (=|+=) a0·g0 elementwise.
func dot1[T tensorx.Float](o, a0, g0 []T, set bool) {
	n := len(o)
	a0, g0 = a0[:n], g0[:n]
	if set {
		for k := range o {
			o[k] = a0[k] * g0[k]
		}
		return
	}
	for k := range o {
		o[k] += a0[k] * g0[k]
	}
}

// dot2 computes o (=|+=) a0·g0 + a1·g1 elementwise.
func dot2[T tensorx.Float](o, a0, g0, a1, g1 []T, set bool) {
	n := len(o)
	a0, g0, a1, g1 = a0[:n], g0[:n], a1[:n], g1[:n]
	if set {
		for k := range o {
			o[k] = a0[k]*g0[k] + a1[k]*g1[k]
		}
		return
	}
	for k := range o {
		o[k] += a0[k]*g0[k] + a1[k]*g1[k]
	}
}

// dot3 computes o (=|+=) a0·g0 + a1·g1 + a2·g2 elementwise.
func dot3[T tensorx.Float](o, a0, g0, a1, g1, a2, g2 []T, set bool) {
	n := len(o)
	a0, g0, a1, g1, a2, g2 = a0[:n], g0[:n], a1[:n], g1[:n], a2[:n], g2[:n]
	if set {
		for k := range o {
			o[k] = a0[k]*g0[k] + a1[k]*g1[k] + a2[k]*g2[k]
		}
		return
	}
	for k := range o {
		o[k] += a0[k]*g0[k] + a1[k]*g1[k] + a2[k]*g2[k]
	}
}

// tapQueue collects up to three taps of one pixel (input slice, filter
// slice) for a fused multiplier-1 pass.
type tapQueue[T tensorx.Float] struct {
	a, g [3][]T
	n    int
	set  bool // the next pass stores
}

// add queues a tap and flushes three of them into o.
func (t *tapQueue[T]) add(o, a, g []T) {
	t.a[t.n], t.g[t.n] = a, g
	t.n++
	if t.n == 3 {
		t.flush(o)
	}
}

// flush applies the queued taps to o.
func (t *tapQueue[T]) flush(o []T) {
	switch t.n {
	case 0:
		return
	case 1:
		dot1(o, t.a[0], t.g[0], t.set)
	case 2:
		dot2(o, t.a[0], t.g[0], t.a[1], t.g[1], t.set)
	default:
		dot3(o, t.a[0], t.g[0], t.a[1], t.g[1], t.a[2], t.g[2], t.set)
	}
	t.set = false
	t.n = 0
}

// finish flushes and zeroes o if no tap reached a pixel that had to be
// stored (a pass that adds leaves o as it is).
func (t *tapQueue[T]) finish(o []T) {
	t.flush(o)
	if t.set {
		clear(o)
	}
}

// expand computes o[c·m+k] (=|+=) x[c]·f[c·m+k] (forward, multiplier m).
func expand[T tensorx.Float](o, x, f []T, m int, set bool) {
	for c, xv := range x {
		oc := o[c*m : (c+1)*m]
		fc := f[c*m : (c+1)*m]
		fc = fc[:len(oc)]
		if set {
			for k := range oc {
				oc[k] = xv * fc[k]
			}
		} else {
			for k := range oc {
				oc[k] += xv * fc[k]
			}
		}
	}
}

// reduce computes o[c] (=|+=) Σ_k y[c·m+k]·f[c·m+k] (input gradient,
// multiplier m).
func reduce[T tensorx.Float](o, y, f []T, m int, set bool) {
	for c := range o {
		yc := y[c*m : (c+1)*m]
		fc := f[c*m : (c+1)*m]
		fc = fc[:len(yc)]
		var s T
		for k := range yc {
			s += yc[k] * fc[k]
		}
		if set {
			o[c] = s
		} else {
			o[c] += s
		}
	}
}

// pair3S1 computes two adjacent output pixels o = [o0 | o1] of a 3-tap
// row at stride 1: o0 = Σ_q a_q·g_q, o1 = Σ_q a_{q+1}·g_q, where a_0..a_3
// are the consecutive input pixels of x.
func pair3S1[T tensorx.Float](o, x, g0, g1, g2 []T, c int, set bool) {
	o0 := o[:c]
	n := len(o0)
	o1 := o[c : c+n]
	a0, a1, a2, a3 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n]
	g0, g1, g2 = g0[:n], g1[:n], g2[:n]
	if set {
		for k := range o0 {
			w0, w1, w2 := g0[k], g1[k], g2[k]
			x1, x2 := a1[k], a2[k]
			o0[k] = a0[k]*w0 + x1*w1 + x2*w2
			o1[k] = x1*w0 + x2*w1 + a3[k]*w2
		}
		return
	}
	for k := range o0 {
		w0, w1, w2 := g0[k], g1[k], g2[k]
		x1, x2 := a1[k], a2[k]
		o0[k] += a0[k]*w0 + x1*w1 + x2*w2
		o1[k] += x1*w0 + x2*w1 + a3[k]*w2
	}
}

// pair3S2 is pair3S1 at stride 2: o1 reads input pixels 2..4.
func pair3S2[T tensorx.Float](o, x, g0, g1, g2 []T, c int, set bool) {
	o0 := o[:c]
	n := len(o0)
	o1 := o[c : c+n]
	a0, a1, a2, a3, a4 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n], x[4*c:][:n]
	g0, g1, g2 = g0[:n], g1[:n], g2[:n]
	if set {
		for k := range o0 {
			w0, w1, w2 := g0[k], g1[k], g2[k]
			x2 := a2[k]
			o0[k] = a0[k]*w0 + a1[k]*w1 + x2*w2
			o1[k] = x2*w0 + a3[k]*w1 + a4[k]*w2
		}
		return
	}
	for k := range o0 {
		w0, w1, w2 := g0[k], g1[k], g2[k]
		x2 := a2[k]
		o0[k] += a0[k]*w0 + a1[k]*w1 + x2*w2
		o1[k] += x2*w0 + a3[k]*w1 + a4[k]*w2
	}
}

// row3 computes npix consecutive output pixels of a 3-tap row with
// taps g0..g2 on consecutive input pixels, input stride s (1 or 2); x
// starts at the first pixel's window.
func row3[T tensorx.Float](o, x, g0, g1, g2 []T, c, npix, s int, set bool) {
	j := 0
	if s == 1 {
		for ; j+2 <= npix; j += 2 {
			pair3S1(o[j*c:(j+2)*c], x[j*c:(j+4)*c], g0, g1, g2, c, set)
		}
	} else {
		for ; j+2 <= npix; j += 2 {
			pair3S2(o[j*c:(j+2)*c], x[2*j*c:(2*j+5)*c], g0, g1, g2, c, set)
		}
	}
	if j < npix {
		b := s * j * c
		dot3(o[j*c:(j+1)*c], x[b:b+c], g0, x[b+c:b+2*c], g1, x[b+2*c:b+3*c], g2, set)
	}
}

// ---------------------------------------------------------------------
// Forward, NHWC.

// forwardNHWC computes out [n, oh, ow, c·m] from x [n, h, w, c] and f
// [kh, kw, c, m]; every element of out is written. float32 problems the
// assembly kernels cover take forwardAsm.
func forwardNHWC[T tensorx.Float](threads int, g *Geom, x, f, out []T, w *Work[T]) {
	if x32, ok := any(x).([]float32); ok && asmFits(g) {
		forwardAsm(threads, g, x32, any(f).([]float32), any(out).([]float32), any(w.Taps).([]float32), any(w.Zero).([]float32))
		return
	}
	forwardGo(threads, g, x, f, out)
}

// forwardGo is forwardNHWC in Go. Output rows are independent and
// split across goroutines.
func forwardGo[T tensorx.Float](threads int, g *Geom, x, f, out []T) {
	n, grain := g.N*g.OH, rowGrainFor(g.OW*g.OC()*g.KH*g.KW)
	if serial(threads, n, grain) {
		forwardGoRows(g, x, f, out, 0, n)
		return
	}
	gc := *g // the closure's own copy: g may point into the caller's frame
	parallel.For(threads, n, grain, func(lo, hi int) { forwardGoRows(&gc, x, f, out, lo, hi) })
}

// forwardGoRows computes forwardGo's output rows [lo, hi) (row r of
// image r/oh).
func forwardGoRows[T tensorx.Float](g *Geom, x, f, out []T, lo, hi int) {
	oc := g.OC()
	rowOut, rowIn := g.OW*oc, g.W*g.C
	jlo, jhi := interior(g.OW, g.W, g.KW, g.SW, g.DW, g.PL)
	for r := lo; r < hi; r++ {
		b, i := r/g.OH, r%g.OH
		orow := out[r*rowOut : (r+1)*rowOut]
		y0 := i*g.SH - g.PT
		plo, phi := axisRange(y0, g.DH, g.KH, g.H)
		if plo >= phi {
			clear(orow)
			continue
		}
		for p := plo; p < phi; p++ {
			yy := b*g.H + y0 + p*g.DH
			forwardRow(g, orow, x[yy*rowIn:(yy+1)*rowIn], f[p*g.KW*oc:(p+1)*g.KW*oc], p == plo, jlo, jhi)
		}
	}
}

// forwardRow applies one filter row frow [kw, c·m] to the input row
// xrow [w, c], storing (set) or adding into the output row orow [ow, c·m].
func forwardRow[T tensorx.Float](g *Geom, orow, xrow, frow []T, set bool, jlo, jhi int) {
	c, oc := g.C, g.OC()
	for j := 0; j < jlo; j++ {
		forwardPixel(g, orow[j*oc:(j+1)*oc], xrow, frow, j, set)
	}
	for j := jhi; j < g.OW; j++ {
		forwardPixel(g, orow[j*oc:(j+1)*oc], xrow, frow, j, set)
	}
	if jlo >= jhi {
		return
	}
	if g.M == 1 && g.KW == 3 && g.DW == 1 && (g.SW == 1 || g.SW == 2) {
		x0 := jlo*g.SW - g.PL
		row3(orow[jlo*c:jhi*c], xrow[x0*c:], frow[:c], frow[c:2*c], frow[2*c:3*c], c, jhi-jlo, g.SW, set)
		return
	}
	for j := jlo; j < jhi; j++ {
		forwardPixel(g, orow[j*oc:(j+1)*oc], xrow, frow, j, set)
	}
}

// forwardPixel applies the taps of one filter row that fall inside the
// image to output pixel j (o, c·m values).
func forwardPixel[T tensorx.Float](g *Geom, o, xrow, frow []T, j int, set bool) {
	c, m, oc := g.C, g.M, g.OC()
	x0 := j*g.SW - g.PL
	qlo, qhi := axisRange(x0, g.DW, g.KW, g.W)
	if m != 1 {
		if qlo >= qhi {
			if set {
				clear(o)
			}
			return
		}
		for q := qlo; q < qhi; q++ {
			xp := (x0 + q*g.DW) * c
			expand(o, xrow[xp:xp+c], frow[q*oc:(q+1)*oc], m, set && q == qlo)
		}
		return
	}
	t := tapQueue[T]{set: set}
	for q := qlo; q < qhi; q++ {
		xp := (x0 + q*g.DW) * c
		t.add(o, xrow[xp:xp+c], frow[q*c:(q+1)*c])
	}
	t.finish(o)
}

// ---------------------------------------------------------------------
// Input gradient, NHWC.

// backpropInputNHWC computes dx [n, h, w, c] from f and dy [n, oh, ow,
// c·m]; every element of dx is written. float32 problems the assembly
// kernels cover take backpropInputAsm.
func backpropInputNHWC[T tensorx.Float](threads int, g *Geom, f, dy, dx []T, w *Work[T]) {
	if f32, ok := any(f).([]float32); ok && asmFits(g) {
		backpropInputAsm(threads, g, f32, any(dy).([]float32), any(dx).([]float32), any(w.Taps).([]float32), any(w.Zero).([]float32))
		return
	}
	backpropInputGo(threads, g, f, dy, dx)
}

// backpropInputGo is backpropInputNHWC in Go. Each input row gathers
// from the output rows i with i·sh − pt + p·dh = y.
func backpropInputGo[T tensorx.Float](threads int, g *Geom, f, dy, dx []T) {
	n, grain := g.N*g.H, rowGrainFor(g.W*g.C*g.M*g.KH*g.KW/max(1, g.SH*g.SW))
	if serial(threads, n, grain) {
		backpropInputGoRows(g, f, dy, dx, 0, n)
		return
	}
	gc := *g // the closure's own copy: g may point into the caller's frame
	parallel.For(threads, n, grain, func(lo, hi int) { backpropInputGoRows(&gc, f, dy, dx, lo, hi) })
}

// backpropInputGoRows computes backpropInputGo's input-gradient rows
// [lo, hi) (row r of image r/h).
func backpropInputGoRows[T tensorx.Float](g *Geom, f, dy, dx []T, lo, hi int) {
	oc := g.OC()
	rowIn, rowOut := g.W*g.C, g.OW*oc
	for r := lo; r < hi; r++ {
		b, y := r/g.H, r%g.H
		dxrow := dx[r*rowIn : (r+1)*rowIn]
		set := true
		for p := 0; p < g.KH; p++ {
			t := y + g.PT - p*g.DH
			if t < 0 || t%g.SH != 0 {
				continue
			}
			i := t / g.SH
			if i >= g.OH {
				continue
			}
			yy := b*g.OH + i
			backpropInputRow(g, dxrow, dy[yy*rowOut:(yy+1)*rowOut], f[p*g.KW*oc:(p+1)*g.KW*oc], set)
			set = false
		}
		if set {
			clear(dxrow)
		}
	}
}

// backpropInputRow adds (or stores) into the input-gradient row dxrow
// [w, c] the contributions of the output-gradient row dyrow [ow, c·m]
// through the filter row frow [kw, c·m]: dx[x] += Σ dy[j]·f[q] over the
// taps with j·sw − pl + q·dw = x.
func backpropInputRow[T tensorx.Float](g *Geom, dxrow, dyrow, frow []T, set bool) {
	c := g.C
	if g.M == 1 && g.DW == 1 && g.KW == 3 {
		f0, f1, f2 := frow[:c], frow[c:2*c], frow[2*c:3*c]
		switch g.SW {
		case 1:
			// dx[x] = Σ_q dy[x + pl − q]·f[q]: the forward 3-tap row with
			// the taps reversed, on the window starting at dy pixel
			// x + pl − 2. Interior: x + pl − 2 ≥ 0 and x + pl < ow.
			lo := min(g.W, max(0, 2-g.PL))
			hi := max(lo, min(g.W, g.OW-g.PL))
			backpropInputPixels(g, dxrow, dyrow, frow, 0, lo, set)
			backpropInputPixels(g, dxrow, dyrow, frow, hi, g.W, set)
			if lo < hi {
				row3(dxrow[lo*c:hi*c], dyrow[(lo+g.PL-2)*c:], f2, f1, f0, c, hi-lo, 1, set)
			}
			return
		case 2:
			// With t = x + pl: dx at t = 2u is dy[u]·f0 + dy[u−1]·f2, at
			// t = 2u+1 it is dy[u]·f1. Interior pairs: 1 ≤ u < ow,
			// 2u − pl ≥ 0, 2u + 1 − pl < w.
			ulo := max(1, (g.PL+1)/2)
			uhi := ulo
			if last := g.W - 2 + g.PL; last >= 0 {
				uhi = max(ulo, min(g.OW, last/2+1))
			}
			if ulo >= uhi {
				break
			}
			x0, x1 := 2*ulo-g.PL, 2*uhi-g.PL
			backpropInputPixels(g, dxrow, dyrow, frow, 0, x0, set)
			backpropInputPixels(g, dxrow, dyrow, frow, x1, g.W, set)
			backpropInputPairsS2(dxrow[x0*c:x1*c], dyrow[(ulo-1)*c:uhi*c], f0, f1, f2, c, set)
			return
		}
	}
	backpropInputPixels(g, dxrow, dyrow, frow, 0, g.W, set)
}

// backpropInputPairsS2 computes pairs of input-gradient pixels
// o = [o0 | o1]... of a 3-tap row at stride 2: o0 = y_{u}·f0 + y_{u−1}·f2,
// o1 = y_u·f1, for consecutive u; y starts at pixel u−1 of the first pair.
func backpropInputPairsS2[T tensorx.Float](o, y, f0, f1, f2 []T, c int, set bool) {
	for u := 0; 2*u*c < len(o); u++ {
		o0 := o[2*u*c:][:c]
		n := len(o0)
		o1 := o[(2*u+1)*c:][:n]
		y0, y1 := y[u*c:][:n], y[(u+1)*c:][:n]
		g0, g1, g2 := f0[:n], f1[:n], f2[:n]
		if set {
			for k := range o0 {
				v := y1[k]
				o0[k] = v*g0[k] + y0[k]*g2[k]
				o1[k] = v * g1[k]
			}
			continue
		}
		for k := range o0 {
			v := y1[k]
			o0[k] += v*g0[k] + y0[k]*g2[k]
			o1[k] += v * g1[k]
		}
	}
}

// backpropInputPixels handles the input-gradient pixels [x0, x1) of a
// row one by one: the taps q reaching pixel x read dy pixel
// j = (x + pl − q·dw)/sw when that division is exact and j is in range.
func backpropInputPixels[T tensorx.Float](g *Geom, dxrow, dyrow, frow []T, x0, x1 int, set bool) {
	c, m, oc := g.C, g.M, g.OC()
	for x := x0; x < x1; x++ {
		o := dxrow[x*c : (x+1)*c]
		t0 := x + g.PL
		if m != 1 {
			s := set
			for q := 0; q < g.KW; q++ {
				t := t0 - q*g.DW
				if t < 0 {
					break
				}
				j := t / g.SW
				if t%g.SW != 0 || j >= g.OW {
					continue
				}
				reduce(o, dyrow[j*oc:(j+1)*oc], frow[q*oc:(q+1)*oc], m, s)
				s = false
			}
			if s {
				clear(o)
			}
			continue
		}
		tp := tapQueue[T]{set: set}
		for q := 0; q < g.KW; q++ {
			t := t0 - q*g.DW
			if t < 0 {
				break
			}
			j := t / g.SW
			if t%g.SW != 0 || j >= g.OW {
				continue
			}
			tp.add(o, dyrow[j*c:(j+1)*c], frow[q*c:(q+1)*c])
		}
		tp.finish(o)
	}
}

// ---------------------------------------------------------------------
// Filter gradient, NHWC.

// backpropFilterNHWC computes df [kh, kw, c, m] = Σ over batch and
// output pixels of dy ⊗ the input pixel each tap read; every element of
// df is written. Output rows are cut into fixed chunks, each summed into
// its own float64 partial filter (row sums in T first); the partials are
// added in chunk order. float32 problems the assembly kernels cover take
// backpropFilterAsm.
func backpropFilterNHWC[T tensorx.Float](threads int, g *Geom, x, dy, df []T, w *Work[T]) {
	if x32, ok := any(x).([]float32); ok && asmFits(g) {
		backpropFilterAsm(threads, g, x32, any(dy).([]float32), any(df).([]float32), w.Parts, any(w.Accs).([]float32), any(w.Zero).([]float32))
		return
	}
	fsz, racc, rpc, nch := goFilterChunks(g)
	rows := g.N * g.OH
	parts, accs := w.Parts[:nch*fsz], w.Accs[:nch*racc]
	if serial(threads, nch, 1) {
		for ci := range nch {
			filterChunkGo(g, x, dy, parts[ci*fsz:(ci+1)*fsz], accs[ci*racc:(ci+1)*racc], ci*rpc, min((ci+1)*rpc, rows))
		}
	} else {
		gc := *g // the closure's own copy: g may point into the caller's frame
		parallel.ForChunks(threads, rows, rpc, func(ci, lo, hi int) {
			filterChunkGo(&gc, x, dy, parts[ci*fsz:(ci+1)*fsz], accs[ci*racc:(ci+1)*racc], lo, hi)
		})
	}
	sum := parts[:fsz]
	for ci := 1; ci < nch; ci++ {
		part := parts[ci*fsz : (ci+1)*fsz]
		part = part[:len(sum)]
		for k, v := range part {
			sum[k] += v
		}
	}
	df = df[:len(sum)]
	for k, v := range sum {
		df[k] = T(v)
	}
}

// goFilterChunks returns the sizes of backpropFilterNHWC's Go path: the
// filter size fsz, the accumulator size racc of one chunk, the output
// rows per chunk rpc and the chunk count nch. The chunk bounds depend
// only on the shapes.
func goFilterChunks(g *Geom) (fsz, racc, rpc, nch int) {
	oc := g.OC()
	rowOut := g.OW * oc
	fsz, racc = g.KH*g.KW*oc, g.KW*oc
	rows := g.N * g.OH
	rpc = max(1, filterChunkWork/max(1, rowOut*g.KH*g.KW))
	maxChunks := min(maxFilterChunks, max(1, partialElems/max(1, fsz)))
	if parallel.Chunks(rows, rpc) > maxChunks {
		rpc = (rows + maxChunks - 1) / maxChunks
	}
	return fsz, racc, rpc, parallel.Chunks(rows, rpc)
}

// filterChunkGo sums the filter-gradient contributions of the output rows
// [lo, hi) into the float64 partial filter part, row by row through the
// accumulator acc [kw, c·m] (sums in T).
func filterChunkGo[T tensorx.Float](g *Geom, x, dy []T, part []float64, acc []T, lo, hi int) {
	oc := g.OC()
	rowIn, rowOut := g.W*g.C, g.OW*oc
	racc := g.KW * oc
	jlo, jhi := interior(g.OW, g.W, g.KW, g.SW, g.DW, g.PL)
	for r := lo; r < hi; r++ {
		b, i := r/g.OH, r%g.OH
		dyrow := dy[r*rowOut : (r+1)*rowOut]
		y0 := i*g.SH - g.PT
		plo, phi := axisRange(y0, g.DH, g.KH, g.H)
		for p := plo; p < phi; p++ {
			yy := b*g.H + y0 + p*g.DH
			clear(acc)
			filterRow(g, acc, x[yy*rowIn:(yy+1)*rowIn], dyrow, jlo, jhi)
			pp := part[p*racc : (p+1)*racc]
			pp = pp[:len(acc)]
			for k, v := range acc {
				pp[k] += float64(v)
			}
		}
	}
}

// filterRow adds into acc [kw, c·m] the products of the output-gradient
// row dyrow [ow, c·m] with the input row xrow [w, c] for each tap of one
// filter row.
func filterRow[T tensorx.Float](g *Geom, acc, xrow, dyrow []T, jlo, jhi int) {
	c := g.C
	for j := 0; j < jlo; j++ {
		filterPixel(g, acc, xrow, dyrow, j)
	}
	for j := jhi; j < g.OW; j++ {
		filterPixel(g, acc, xrow, dyrow, j)
	}
	if jlo >= jhi {
		return
	}
	if g.M == 1 && g.KW == 3 && g.DW == 1 && (g.SW == 1 || g.SW == 2) {
		a0, a1, a2 := acc[:c], acc[c:2*c], acc[2*c:3*c]
		j := jlo
		if g.SW == 1 {
			for ; j+2 <= jhi; j += 2 {
				x0 := (j - g.PL) * c
				filterPair3S1(a0, a1, a2, dyrow[j*c:(j+2)*c], xrow[x0:x0+4*c], c)
			}
		} else {
			for ; j+2 <= jhi; j += 2 {
				x0 := (2*j - g.PL) * c
				filterPair3S2(a0, a1, a2, dyrow[j*c:(j+2)*c], xrow[x0:x0+5*c], c)
			}
		}
		if j < jhi {
			filterPixel(g, acc, xrow, dyrow, j)
		}
		return
	}
	for j := jlo; j < jhi; j++ {
		filterPixel(g, acc, xrow, dyrow, j)
	}
}

// filterPixel adds the contributions of output pixel j to acc.
func filterPixel[T tensorx.Float](g *Geom, acc, xrow, dyrow []T, j int) {
	c, m, oc := g.C, g.M, g.OC()
	x0 := j*g.SW - g.PL
	qlo, qhi := axisRange(x0, g.DW, g.KW, g.W)
	d := dyrow[j*oc : (j+1)*oc]
	for q := qlo; q < qhi; q++ {
		xp := (x0 + q*g.DW) * c
		a := acc[q*oc : (q+1)*oc]
		xs := xrow[xp : xp+c]
		if m == 1 {
			dot1(a, d, xs, false)
			continue
		}
		for ch, xv := range xs {
			ac := a[ch*m : (ch+1)*m]
			dc := d[ch*m : (ch+1)*m]
			dc = dc[:len(ac)]
			for k := range ac {
				ac[k] += dc[k] * xv
			}
		}
	}
}

// filterPair3S1 adds two adjacent output pixels' contributions to the
// three tap accumulators a0..a2 (multiplier 1, stride 1): d holds the two
// pixels' gradients, x the four input pixels their windows cover.
func filterPair3S1[T tensorx.Float](a0, a1, a2, d, x []T, c int) {
	n := len(a0)
	a1, a2 = a1[:n], a2[:n]
	d0, d1 := d[:n], d[c:][:n]
	x0, x1, x2, x3 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n]
	for k := range a0 {
		e0, e1 := d0[k], d1[k]
		v1, v2 := x1[k], x2[k]
		a0[k] += e0*x0[k] + e1*v1
		a1[k] += e0*v1 + e1*v2
		a2[k] += e0*v2 + e1*x3[k]
	}
}

// filterPair3S2 is filterPair3S1 at stride 2 (five input pixels).
func filterPair3S2[T tensorx.Float](a0, a1, a2, d, x []T, c int) {
	n := len(a0)
	a1, a2 = a1[:n], a2[:n]
	d0, d1 := d[:n], d[c:][:n]
	x0, x1, x2, x3, x4 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n], x[4*c:][:n]
	for k := range a0 {
		e0, e1 := d0[k], d1[k]
		v2 := x2[k]
		a0[k] += e0*x0[k] + e1*v2
		a1[k] += e0*x1[k] + e1*x3[k]
		a2[k] += e0*v2 + e1*x4[k]
	}
}
