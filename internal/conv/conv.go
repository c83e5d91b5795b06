package conv

import (
	"github.com/tapegrad/tapegrad/internal/gemm"
	"github.com/tapegrad/tapegrad/internal/parallel"
)

// Callers guarantee non-empty input, filter and output (the ops handle
// empty tensors before calling in), and slices of the geometry's sizes.

// Forward computes out = conv(x, f) in NHWC with threads threads; every
// element of out is written. The im2col matrix is never materialised:
// the GEMM reads its rows from x in place. It equals, per group grp and
// output position r (image b, row i, column j) and channel grp·OG+o,
//
//	out[r·O + grp·OG + o] = Σ_{p, q, k} x[b, i·SH-PT+p·DH, j·SW-PL+q·DW, grp·CF+k] · f[((p·KW+q)·CF+k)·O + grp·OG+o]
//
// over the taps that fall inside the input, summed in the GEMM's order.
func Forward[T Float](out, x, f []T, g *Geom, threads int) {
	kcol := g.KCol()
	rows := g.N * g.OH * g.OW
	if lda, ok := g.Direct(); ok {
		for grp := 0; grp < g.G; grp++ {
			gemm.Gemm(false, false, rows, g.OG, kcol, 1, x[grp*g.CF:], lda, f[grp*g.OG:], g.O, 0, out[grp*g.OG:], g.O, threads)
		}
		return
	}
	m := getRowsMap(g)
	defer putRowsMap(m)
	for grp := 0; grp < g.G; grp++ {
		gemm.GemmRowsA(rows, g.OG, kcol, rowsOf(g, x, grp, 0, m), false, f[grp*g.OG:], g.O, 0, out[grp*g.OG:], g.O, threads)
	}
}

// BackpropInputScratch returns the number of scratch elements
// BackpropInput needs for g with threads threads (0: none).
func BackpropInputScratch(g *Geom, threads int) int {
	kcol := g.KCol()
	if _, ok := g.Direct(); ok || kcol == 0 {
		return 0
	}
	if g.SH == 1 && g.SW == 1 {
		return g.KH * g.KW * g.CF * g.O // the flipped filter
	}
	if g.DH == 1 && g.DW == 1 {
		// The phases' flipped sub-filters (at most the whole filter) and
		// the largest phase's output.
		return g.KH*g.KW*g.CF*g.O + g.N*ceilDiv(g.H, g.SH)*ceilDiv(g.W, g.SW)*g.C
	}
	ch := planChunks(g.N, g.OH*g.OW, kcol)
	items := ch.count
	if !ch.whole {
		items = g.N
	}
	nw, _ := workers(threads, items)
	return nw*ch.rows*kcol + kcol*g.O // im2col buffers, the transposed filter
}

// BackpropInput computes the input gradient dx of a convolution from the
// filter f and the output gradient dy in NHWC with threads threads;
// every element of dx is written. scratch holds at least
// BackpropInputScratch(g, threads) elements (contents unspecified). It
// equals
//
//	dx[b, y, x, grp·CF+k] = Σ dy[b, i, j, grp·OG+o] · f[((p·KW+q)·CF+k)·O + grp·OG+o]
//
// over the output positions (i, j), taps (p, q) and channels o with
// y = i·SH-PT+p·DH, x = j·SW-PL+q·DW. With unit strides it is a forward
// convolution of dy with the flipped filter; with larger strides and no
// dilation, one such convolution per phase of the input positions
// (backpropInputPhases); with strides and dilations, the output
// positions are cut into chunks that depend only on the shapes, whose
// im2col rows dy·fᵀ are scattered back into dx image by image in chunk
// order. The result does not depend on the thread count.
func BackpropInput[T Float](dx, f, dy []T, g *Geom, threads int, scratch []T) {
	kcol := g.KCol()
	if lda, ok := g.Direct(); ok {
		// Every input element receives exactly one product row.
		m := g.N * g.OH * g.OW
		for grp := 0; grp < g.G; grp++ {
			gemm.Gemm(false, true, m, kcol, g.OG, 1, dy[grp*g.OG:], g.O, f[grp*g.OG:], g.O, 0, dx[grp*g.CF:], lda, threads)
		}
		return
	}
	if kcol == 0 {
		clear(dx)
		return
	}
	if g.SH == 1 && g.SW == 1 {
		backpropInputStride1(dx, f, dy, g, threads, scratch)
		return
	}
	if g.DH == 1 && g.DW == 1 {
		backpropInputPhases(dx, f, dy, g, threads, scratch)
		return
	}
	clear(dx)
	ch := planChunks(g.N, g.OH*g.OW, kcol)
	// Work items: whole-image chunks, or whole images of several chunks,
	// so that each image is accumulated by one worker in chunk order.
	items, per := ch.count, 1
	if !ch.whole {
		items, per = g.N, ch.perImg
	}
	nw, gt := workers(threads, items)
	// The filter transposed once, [O][kcol]: every chunk's GEMM then packs
	// its B panels from contiguous rows (the same panels, so the same
	// bits, as from f with transB).
	ft := scratch[nw*ch.rows*kcol:][:kcol*g.O]
	transpose(ft, f, kcol, g.O)
	job := col2imJob[T]{g: *g, f: ft, dy: dy, dx: dx, buf: scratch[:nw*ch.rows*kcol], ch: ch, per: per, gt: gt}
	if nw <= 1 {
		for i := range items {
			job.item(0, i)
		}
		return
	}
	j := job // only this copy moves to the heap, with the closure
	parallel.Each(nw, items, func(w, i int) { j.item(w, i) })
}

// col2imJob is the strided input gradient's work: per item, the im2col
// rows dy·filterᵀ of its chunks, scattered back into dx.
type col2imJob[T Float] struct {
	g         Geom // a copy: a pointer would move the caller's to the heap
	f, dy, dx []T  // f transposed: [O][kcol]
	buf       []T  // one im2col buffer per worker
	ch        chunks
	per, gt   int
}

// item processes item i's chunks with worker w's buffer.
func (j *col2imJob[T]) item(w, i int) {
	g, kcol := &j.g, j.g.KCol()
	col := j.buf[w*j.ch.rows*kcol : (w+1)*j.ch.rows*kcol]
	for c := i * j.per; c < (i+1)*j.per; c++ {
		r0, r1 := j.ch.bounds(c)
		for grp := 0; grp < g.G; grp++ {
			gemm.Gemm(false, false, r1-r0, kcol, g.OG, 1, j.dy[r0*g.O+grp*g.OG:], g.O, j.f[grp*g.OG*kcol:], kcol, 0, col, kcol, j.gt)
			col2im(g, col, grp, r0, r1, j.dx)
		}
	}
}

// transpose writes src [rows][cols] transposed into dst [cols][rows],
// converting each element, in blocks of 16×16 so that both sides stay in
// cache: a filter f [kcol][o] into ft [o][kcol], a filter gradient's
// float64 sum dfᵀ [o][kcol] into df [kcol][o].
func transpose[D, S Float](dst []D, src []S, rows, cols int) {
	transposeRows(dst, src, rows, cols, 0, rows)
}

// transposeBlock is the side of transpose's blocks.
const transposeBlock = 16

// transposeRows is transpose of the rows [lo, hi) of src alone: it writes
// dst[c·rows+r] for r in [lo, hi).
func transposeRows[D, S Float](dst []D, src []S, rows, cols, lo, hi int) {
	const blk = transposeBlock
	_, _ = dst[:rows*cols], src[:rows*cols]
	for r0 := lo; r0 < hi; r0 += blk {
		r1 := min(r0+blk, hi)
		for c0 := 0; c0 < cols; c0 += blk {
			c1 := min(c0+blk, cols)
			for r := r0; r < r1; r++ {
				row := src[r*cols : (r+1)*cols]
				for c := c0; c < c1; c++ {
					dst[c*rows+r] = D(row[c])
				}
			}
		}
	}
}

// ceilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// phaseTaps describes the input rows (or columns) a+s·i' of one phase a
// of a stride-s, undilated convolution with k taps and leading padding
// pad: the taps that reach them are p0, p0+s, … (u of them, below k), and
// tap p0+s·t connects input row a+s·i' with output row i'+d0-t.
func phaseTaps(a, s, k, pad int) (p0, u, d0 int) {
	p0 = ((a+pad)%s + s) % s
	if p0 < k {
		u = (k - p0 + s - 1) / s
	}
	return p0, u, (a + pad - p0) / s
}

// backpropInputPhases computes dx for strides above 1 without dilation,
// phase by phase: the input positions (a+SH·i', b+SW·j') of one phase
// (a, b) receive dy through the taps p ≡ a+PT (mod SH), q ≡ b+PL (mod
// SW) only, which makes their gradient a unit-stride forward convolution
// of dy with those taps flipped and transposed (as backpropInputStride1
// does for the whole filter), written to a dense buffer and then copied
// to the phase's positions. Positions no tap reaches are zero. Every
// element of dx is written, in an order that depends only on g.
func backpropInputPhases[T Float](dx, f, dy []T, g *Geom, threads int, scratch []T) {
	nf := g.KH * g.KW * g.CF * g.O
	ft, tmp := scratch[:nf], scratch[nf:]
	for a := 0; a < g.SH; a++ {
		ha := ceilDiv(g.H-a, g.SH)
		if ha <= 0 {
			continue
		}
		p0, u, d0 := phaseTaps(a, g.SH, g.KH, g.PT)
		for b := 0; b < g.SW; b++ {
			wb := ceilDiv(g.W-b, g.SW)
			if wb <= 0 {
				continue
			}
			q0, v, e0 := phaseTaps(b, g.SW, g.KW, g.PL)
			out := tmp[:g.N*ha*wb*g.C]
			if u == 0 || v == 0 {
				clear(out)
			} else {
				t := Geom{
					N: g.N, H: g.OH, W: g.OW, C: g.O,
					KH: u, KW: v, CF: g.OG, O: g.C,
					G: g.G, OG: g.CF,
					OH: ha, OW: wb,
					SH: 1, SW: 1, DH: 1, DW: 1,
					PT: u - 1 - d0, PL: v - 1 - e0,
				}
				t.PB, t.PR = ha-g.OH-t.PT+u-1, wb-g.OW-t.PL+v-1
				sub := ft[:u*v*g.CF*g.O]
				for pp := 0; pp < u; pp++ {
					for qq := 0; qq < v; qq++ {
						p, q := p0+g.SH*(u-1-pp), q0+g.SW*(v-1-qq)
						flipTap(sub[(pp*v+qq)*g.OG*g.C:][:g.OG*g.C], f[(p*g.KW+q)*g.CF*g.O:][:g.CF*g.O], g)
					}
				}
				Forward(out, dy, sub, &t, threads)
			}
			scatterPhase(dx, out, g, a, b, ha, wb, threads)
		}
	}
}

// flipTap writes one filter tap src [CF][O] transposed per group into dst
// [OG][C]: row o is group grp's input channel o of the transposed
// problem, column grp·CF+k its output channel.
func flipTap[T Float](dst, src []T, g *Geom) {
	for grp := 0; grp < g.G; grp++ {
		for k := 0; k < g.CF; k++ {
			s := src[k*g.O+grp*g.OG:][:g.OG]
			c := grp*g.CF + k
			for o, v := range s {
				dst[o*g.C+c] = v
			}
		}
	}
}

// scatterPhase copies the phase output src [N, ha, wb, C] to the input
// positions (a+SH·i', b+SW·j') of dx, rows of src split over threads.
func scatterPhase[T Float](dx, src []T, g *Geom, a, b, ha, wb, threads int) {
	job := phaseJob[T]{dx: dx, src: src, h: g.H, w: g.W, c: g.C, sh: g.SH, sw: g.SW, a: a, b: b, ha: ha, wb: wb}
	rows := g.N * ha
	grain := max(1, scatterGrain/max(1, wb*g.C))
	if threads <= 1 || rows <= grain {
		job.rows(0, rows)
		return
	}
	j := job // only this copy moves to the heap, with the closure
	parallel.For(threads, rows, grain, func(r0, r1 int) { j.rows(r0, r1) })
}

// phaseJob copies one phase of the strided input gradient into place.
type phaseJob[T Float] struct {
	dx, src                       []T
	h, w, c, sh, sw, a, b, ha, wb int
}

// rows copies rows [r0, r1) of the phase output (image r/ha, phase row
// r%ha).
func (j *phaseJob[T]) rows(r0, r1 int) {
	c := j.c
	for r := r0; r < r1; r++ {
		n, i := r/j.ha, r%j.ha
		d := j.dx[((n*j.h+j.a+j.sh*i)*j.w+j.b)*c:]
		s := j.src[r*j.wb*c : (r+1)*j.wb*c]
		for x := range j.wb {
			copy(d[x*j.sw*c:x*j.sw*c+c], s[x*c:(x+1)*c])
		}
	}
}

// backpropInputStride1 computes dx for unit strides as a forward
// convolution of dy with the flipped filter f'[p, q, o, k] =
// f[KH-1-p, KW-1-q, k, o] (per group: OG input and CF output channels,
// built in ft, len(f) elements), the same dilations, and paddings E-1-P
// on each side (negative when the forward padding exceeds the effective
// filter: a crop, which im2col handles like padding). Its GEMM runs over
// KH·KW·OG instead of OG and no col2im scatter is needed; every element
// of dx is written.
func backpropInputStride1[T Float](dx, f, dy []T, g *Geom, threads int, ft []T) {
	eh, ew := (g.KH-1)*g.DH+1, (g.KW-1)*g.DW+1
	t := Geom{
		N: g.N, H: g.OH, W: g.OW, C: g.O,
		KH: g.KH, KW: g.KW, CF: g.OG, O: g.C,
		G: g.G, OG: g.CF,
		OH: g.H, OW: g.W,
		SH: 1, SW: 1, DH: g.DH, DW: g.DW,
		PT: eh - 1 - g.PT, PB: eh - 1 - g.PB, PL: ew - 1 - g.PL, PR: ew - 1 - g.PR,
	}
	ft = ft[:len(f)]
	for p := 0; p < g.KH; p++ {
		for q := 0; q < g.KW; q++ {
			src := f[((g.KH-1-p)*g.KW+(g.KW-1-q))*g.CF*g.O:][:g.CF*g.O]
			flipTap(ft[(p*g.KW+q)*g.OG*g.C:][:g.OG*g.C], src, g)
		}
	}
	Forward(dx, dy, ft, &t, threads)
}

// BackpropFilterScratch returns the scratch BackpropFilter needs for g:
// acc float64 elements, which must hold zeros, and parts elements of the
// element type (contents unspecified); both are 0 when there are no
// output positions.
func BackpropFilterScratch(g *Geom) (acc, parts int) {
	total := g.N * g.OH * g.OW
	if total == 0 {
		return 0, 0
	}
	fsz := g.KCol() * g.O
	count := filterChunks(total)
	round := max(1, min(maxPartials, partialElems/max(1, fsz), count))
	return fsz, round * fsz
}

// BackpropFilter computes the filter gradient df = Σ im2col(x)ᵀ·dy of a
// convolution in NHWC with threads threads; every element of df is
// written. acc and parts are scratch of the sizes BackpropFilterScratch
// gives, acc zeroed. It equals
//
//	df[((p·KW+q)·CF+k)·O + grp·OG+o] = Σ x[b, i·SH-PT+p·DH, j·SW-PL+q·DW, grp·CF+k] · dy[b, i, j, grp·OG+o]
//
// over the output positions whose tap falls inside the input. The output
// positions are cut into chunks that depend only on the shapes
// (filterChunks); each chunk gives a partial dfᵀ = dyᵀ·im2col(x) (the
// im2col rows gathered from x straight into the GEMM's packed panels, dyᵀ
// packed once per k block), and the partials are added in chunk order in
// float64, so the result does not depend on the thread count.
func BackpropFilter[T Float](df, x, dy []T, g *Geom, threads int, acc []float64, parts []T) {
	kcol := g.KCol()
	fsz := kcol * g.O
	total := g.N * g.OH * g.OW
	if total == 0 {
		clear(df)
		return
	}
	count := filterChunks(total)
	round := max(1, min(maxPartials, partialElems/max(1, fsz), count))
	sum, ps := acc[:fsz], parts[:round*fsz]
	job := filterJob[T]{g: *g, x: x, dy: dy, parts: ps, total: total, count: count}
	if lda, ok := g.Direct(); ok {
		job.lda = lda
	} else {
		job.m = getRowsMap(g)
		defer putRowsMap(job.m)
	}
	for s := 0; s < count; s += round {
		e := min(s+round, count)
		nw, gt := workers(threads, e-s)
		job.first, job.gt = s, gt
		if nw <= 1 {
			for c := s; c < e; c++ {
				job.chunk(0, c-s)
			}
		} else {
			j := job // only this copy moves to the heap, with the closure
			parallel.Each(nw, e-s, func(w, i int) { j.chunk(w, i) })
		}
		// sum holds dfᵀ (row o: output channel o's kcol taps), like the
		// partials; each element adds its partials in chunk order.
		n := e - s
		if e < count {
			if serial(threads, fsz, sumGrain) {
				addPartials(sum, ps, fsz, n, 0, fsz)
			} else {
				parallel.For(threads, fsz, sumGrain, func(lo, hi int) {
					addPartials(sum, ps, fsz, n, lo, hi)
				})
			}
			continue
		}
		// The last round adds its partials and writes df in bands of
		// transposeBlock rows of dfᵀ, each band transposed while its sums
		// are cached, the bands shared among the threads.
		o := g.O // the closure must not capture g (it would move the caller's to the heap)
		bands := ceilDiv(o, transposeBlock)
		if grain := max(1, sumGrain/(transposeBlock*kcol)); serial(threads, bands, grain) {
			finishFilter(df, sum, ps, o, kcol, n, 0, bands)
		} else {
			parallel.For(threads, bands, grain, func(b0, b1 int) {
				finishFilter(df, sum, ps, o, kcol, n, b0, b1)
			})
		}
	}
}

// finishFilter adds the n partials of the bands [b0, b1) of
// transposeBlock rows of the sum dfᵀ [o][kcol] (in chunk order, after
// what sum holds) and writes them transposed into df [kcol][o].
func finishFilter[T Float](df []T, sum []float64, ps []T, o, kcol, n, b0, b1 int) {
	r0, r1 := b0*transposeBlock, min(b1*transposeBlock, o)
	addPartials(sum, ps, o*kcol, n, r0*kcol, r1*kcol)
	transposeRows(df, sum, o, kcol, r0, r1)
}

// filterJob is the filter gradient's work: the partial dfᵀ of each chunk
// of output positions.
type filterJob[T Float] struct {
	g            Geom // a copy: a pointer would move the caller's to the heap
	x, dy, parts []T
	total, count int
	m            *rowsMap // im2col rows, or nil for a direct input
	lda          int      // the direct input's row stride
	first, gt    int      // the round's first chunk; threads per GEMM
}

// chunk computes chunk first+i's partial into parts[i].
func (j *filterJob[T]) chunk(_, i int) {
	g := &j.g
	kcol := g.KCol()
	fsz := kcol * g.O
	c := j.first + i
	r0, r1 := j.total*c/j.count, j.total*(c+1)/j.count
	// The partial holds dfᵀ: the groups' og×kcol blocks in order.
	part := j.parts[i*fsz : (i+1)*fsz]
	for grp := 0; grp < g.G; grp++ {
		pg := part[grp*g.OG*kcol : (grp+1)*g.OG*kcol]
		dyg := j.dy[r0*g.O+grp*g.OG:]
		if j.m == nil {
			gemm.Gemm(true, false, g.OG, kcol, r1-r0, 1, dyg, g.O, j.x[r0*j.lda+grp*g.CF:], j.lda, 0, pg, kcol, j.gt)
			continue
		}
		gemm.GemmRowsB(true, g.OG, kcol, r1-r0, dyg, g.O, rowsOf(g, j.x, grp, r0, j.m), 0, pg, kcol, j.gt)
	}
}

// addPartials adds elements [lo, hi) of n partials of fsz elements, in
// order, to acc. It goes through them in pieces of partialPiece elements,
// each piece of acc kept in L1 while every partial is added to it (rather
// than one pass over all of acc per partial); each element still gets its
// partials in order.
func addPartials[T Float](acc []float64, parts []T, fsz, n, lo, hi int) {
	for p0 := lo; p0 < hi; p0 += partialPiece {
		p1 := min(p0+partialPiece, hi)
		a := acc[p0:p1]
		for c := range n {
			for i, v := range parts[c*fsz+p0 : c*fsz+p1] {
				a[i] += float64(v)
			}
		}
	}
}

// partialPiece is the piece of addPartials: 8 KiB of float64 sums.
const partialPiece = 1024

// ToNHWC copies an NCHW tensor src [n, c, h, w] into dst as NHWC:
// dst[((b·h+y)·w+x)·c+ch] = src[((b·c+ch)·h+y)·w+x].
func ToNHWC[T Float](dst, src []T, n, c, h, w int) {
	hw := h * w
	for b := 0; b < n; b++ {
		s := src[b*c*hw : (b+1)*c*hw]
		d := dst[b*c*hw : (b+1)*c*hw]
		for ch := 0; ch < c; ch++ {
			plane := s[ch*hw : (ch+1)*hw]
			for i, v := range plane {
				d[i*c+ch] = v
			}
		}
	}
}

// ToNCHW copies an NHWC tensor src [n, h, w, c] into dst as NCHW (the
// inverse of ToNHWC).
func ToNCHW[T Float](dst, src []T, n, c, h, w int) {
	hw := h * w
	for b := 0; b < n; b++ {
		s := src[b*c*hw : (b+1)*c*hw]
		d := dst[b*c*hw : (b+1)*c*hw]
		for ch := 0; ch < c; ch++ {
			plane := d[ch*hw : (ch+1)*hw]
			for i := range plane {
				plane[i] = s[i*c+ch]
			}
		}
	}
}
