package dwconv

import "github.com/tapegrad/tapegrad/internal/parallel"

// The float32 paths of the assembly kernels: multiplier 1, 3x3 filters,
// unit column dilation, column stride 1 or 2, at least 8 channels; any
// row stride, row dilation and padding.
//
// The kernels take three input rows and a [3][3][c] filter. A filter row
// whose input row falls into the padding reads a zeroed row with zeroed
// taps instead (0·0 adds nothing, whatever the filter holds), so every
// output row of the interior columns is one kernel call; the filters
// with zeroed rows are prepared once per call, one per pattern of valid
// rows. Border columns take only their valid taps (DotTaps, AxpyTaps).
// Channels past the last block of 8 are covered by a second call on
// slices shifted by c−8 (see the package comment).

// asmFits reports whether the assembly kernels cover problem g.
func asmFits(g *Geom) bool {
	return useAsm && g.M == 1 && g.KH == 3 && g.KW == 3 && g.DW == 1 &&
		(g.SW == 1 || g.SW == 2) && g.C >= Block
}

// rowMask returns as bits the filter rows p < 3 whose input row
// start + p·d lies in [0, size).
func rowMask(start, d, size int) int {
	lo, hi := axisRange(start, d, 3, size)
	return (1<<hi - 1) &^ (1<<lo - 1)
}

// asmTapsWork returns the scratch asmTaps needs for the row masks in
// need: taps elements for the filter copies, and rowLen for a zeroed row
// if some mask leaves a row out (0 otherwise).
func asmTapsWork(c int, flip bool, need *[8]bool, rowLen int) (taps, zero int) {
	copies, partial := 0, false
	for mask, ok := range need {
		if !ok || mask == 0 {
			continue
		}
		if mask != 7 || flip {
			copies++
		}
		partial = partial || mask != 7
	}
	if partial {
		zero = rowLen
	}
	return copies * 9 * c, zero
}

// asmTaps returns, for each row mask in need, the filter f [3][3][c]
// with the rows outside the mask zeroed and, with flip, each row's
// columns reversed (mask 7 without flip is f itself), written into buf
// (asmTapsWork's taps elements).
func asmTaps(f []float32, c int, flip bool, need *[8]bool, buf []float32) (taps [8][]float32) {
	fsz := 9 * c
	for mask, ok := range need {
		if !ok || mask == 0 {
			continue
		}
		if mask == 7 && !flip {
			taps[mask] = f[:fsz]
			continue
		}
		t := buf[:fsz]
		buf = buf[fsz:]
		for p := range 3 {
			for q := range 3 {
				dst := t[(3*p+q)*c : (3*p+q+1)*c]
				switch {
				case mask>>p&1 == 0:
					clear(dst)
				case flip:
					copy(dst, f[(3*p+2-q)*c:(3*p+3-q)*c])
				default:
					copy(dst, f[(3*p+q)*c:(3*p+q+1)*c])
				}
			}
		}
		taps[mask] = t
	}
	return taps
}

// forwardMasks returns the row masks of forward's output rows (and of
// the filter gradient's).
func forwardMasks(g *Geom) (need [8]bool) {
	for i := range g.OH {
		need[rowMask(i*g.SH-g.PT, g.DH, g.H)] = true
	}
	return need
}

// inputMasks returns the row masks of the input gradient's rows.
func inputMasks(g *Geom) (need [8]bool) {
	for y := range g.H {
		need[inputRowMask(g, y)] = true
	}
	return need
}

// asmBlock returns the rows per block of the assembly paths' loops,
// which goroutines take in order, each from its own share first
// (parallel.Blocks: a goroutine that starts late, waking an idle CPU took ~70 µs on the
// project's VM, a fifth of a W6 op, or runs on a busy CPU takes fewer
// blocks): about 16 blocks per thread (small enough to balance a late
// start, large enough that few rows miss their prefetch at a block's
// start), at least grain.
func asmBlock(rows, threads, grain int) int {
	return max(grain, rows/(16*max(1, threads)))
}

// dwStreamBytes is the output size from which the forward and the input
// gradient write with non-temporal stores (where the tier and alignment
// allow, streamable). Both stream an input and an output of about the
// same size once; from 8 MiB each, the two take half the 32 MiB L3 cache
// of the project's machine or more, so the output is unlikely to stay
// cached for the op that reads it next (the backward pass in between, or
// the other passes of a training step), and writing it through the cache
// costs a read of every line first and evicts the inputs. Measured on
// W5's and W6's shapes (12.25 MiB outputs, AVX-512, one thread, the
// machine shared with training runs): forward, input gradient and the
// three passes in a row 6–18% faster, the forward still faster when a
// read of its output follows. bnkern streams from 16 MiB (elementwise
// passes, whose input is as large as their output). A variable so that
// tests can lower it.
var dwStreamBytes = 8 << 20

// streamOut reports whether a storing pass should write out with
// non-temporal stores (dwStreamBytes).
func streamOut(out []float32) bool { return 4*len(out) >= dwStreamBytes }

// asmRows fills rows with the input rows of the filter rows in mask
// (row p is src[base(p)·rowLen:], at most rowLen long) and zero for the
// others.
func asmRows(rows *[3][]float32, mask int, src, zero []float32, rowLen int, base func(p int) int) {
	for p := range 3 {
		if mask>>p&1 == 0 {
			rows[p] = zero
			continue
		}
		y := base(p)
		rows[p] = src[y*rowLen : (y+1)*rowLen]
	}
}

// fwdBlock, bwdBlock return the pixels (pairs) per block of the forward
// and stride-2 input-gradient kernels of the current tier at stride s.
func fwdBlock(s int) int {
	switch {
	case wide() && s == 1:
		return pixS1AVX512
	case wide():
		return pixS2AVX512
	case s == 1:
		return pixS1AVX2
	}
	return pixS2AVX2
}

func bwdBlock() int {
	if wide() {
		return pairsAVX512
	}
	return pairsAVX2
}

// asmDot computes pixel o (c channels) as the sum of n products
// xs[i]·ts[i]; no taps stores zeros.
func asmDot(o []float32, xs, ts *[9][]float32, n, c int) {
	if n == 0 {
		clear(o[:c])
		return
	}
	DotTaps(o, xs[:n], ts[:n], c)
}

// forwardAsm is forwardNHWC for the problems of asmFits.
// taps and zero are the scratch of forwardAsmWork.
func forwardAsm(threads int, g *Geom, x, f, out, taps, zero []float32) {
	need := forwardMasks(g)
	a := asmJob{g: *g, x: x, f: f, out: out, zero: zero, stream: streamOut(out)}
	a.taps = asmTaps(f, g.C, false, &need, taps)
	a.jlo, a.jhi = interior(g.OW, g.W, 3, g.SW, 1, g.PL)
	n := g.N * g.OH
	grain := asmBlock(n, threads, rowGrainFor(g.OW*g.C*9))
	if serial(threads, n, grain) {
		a.forwardRows(0, n)
	} else {
		parallel.Blocks(threads, n, grain, a.heap().forwardRows)
	}
}

// forwardAsmWork returns the scratch forwardAsm needs: filter copies and
// a zeroed input row.
func forwardAsmWork(g *Geom) (taps, zero int) {
	need := forwardMasks(g)
	return asmTapsWork(g.C, false, &need, g.W*g.C)
}

// asmJob is the state the assembly paths share across their rows: the
// geometry, the operands (x the input, or out_backprop for the input
// gradient; f the filter; out the output, or the input gradient; dy
// out_backprop for the filter gradient), the
// filters with zeroed rows per row mask and the zeroed row (asmTaps),
// the interior columns [jlo, jhi) and, for the input gradient at stride
// 2, the first interior pair ulo.
type asmJob struct {
	g        Geom
	x, f     []float32
	out      []float32
	taps     [8][]float32
	zero     []float32
	jlo, jhi int
	ulo      int
	// stream: the storing kernels write out with non-temporal stores
	// (streamOut).
	stream bool
	// The filter gradient: out_backprop, the chunks' float64 partial
	// filters and float32 accumulators (pk elements each), rpc output
	// rows per chunk, nseg interior segments per row.
	dy            []float32
	parts         []float64
	accs          []float32
	pk, rpc, nseg int
}

// heap returns a copy of a on the heap, for the loops that run on
// several goroutines (a itself stays in its caller's frame).
func (a *asmJob) heap() *asmJob {
	h := new(asmJob)
	*h = *a
	return h
}

// forwardRows computes forwardAsm's output rows [lo, hi) (row r of image
// r/oh), in groups of asmGroup rows of one image (rowGroup).
func (a *asmJob) forwardRows(lo, hi int) {
	if a.stream {
		// The non-temporal stores are ordered before whatever signals
		// the rows done.
		defer sfence()
	}
	g := &a.g
	var grp rowGroup
	for r := lo; r < hi; r += grp.n {
		grp.n = min(asmGroup, hi-r, g.OH-r%g.OH)
		a.forwardGroup(&grp, r, hi)
	}
}

// asmGroup is the most rows the assembly paths compute together: their
// kernel calls alternate between the rows segment by segment, so that
// the input rows the group's rows share are read into the L1 cache once
// (a call's inputs, at most asmSegSpan bytes, are still there for the
// next row's call). Each group prefetches the next one's new rows into
// L2 while it runs. Measured on W5 and W6 (one thread, AVX-512 and AVX2,
// the machine shared with training runs): forward and input gradient
// 15–30% faster than row by row; 4 rows were no better than 2 (the
// shared rows no longer stay in L1), the filter gradient about even.
const asmGroup = 2

// asmSegSpan bounds the input bytes one kernel call of a row group reads
// (three rows of the segment's pixels).
const asmSegSpan = 28 << 10

// rowGroup is the state of one group of output rows: n rows, each with
// its row mask and input rows.
type rowGroup struct {
	n     int
	mask  [asmGroup]int
	rows  [asmGroup][3][]float32
	xs, t [9][]float32
}

// segments returns the segment length (pixels or pairs) of the kernel
// calls over n interior units of block pixels, s input pixels per unit:
// whole blocks, about asmSegSpan bytes of input per call.
func segments(n, block, s, c int) int {
	seg := (asmSegSpan/(12*c) - 2) / s / block * block
	return min(n, max(block, seg))
}

// forwardGroup computes the grp.n output rows from row r on; hi bounds
// the rows of the next group, whose new input rows it prefetches.
func (a *asmJob) forwardGroup(grp *rowGroup, r, hi int) {
	g, x, f, out, zero := &a.g, a.x, a.f, a.out, a.zero
	taps, jlo, jhi := &a.taps, a.jlo, a.jhi
	c := g.C
	rowIn, rowOut := g.W*c, g.OW*c
	b, i0 := r/g.OH, r%g.OH
	live := 0
	for k := range grp.n {
		y0 := (i0+k)*g.SH - g.PT
		grp.mask[k] = rowMask(y0, g.DH, g.H)
		if grp.mask[k] == 0 {
			clear(out[(r+k)*rowOut : (r+k+1)*rowOut])
			continue
		}
		live++
		asmRows(&grp.rows[k], grp.mask[k], x, zero, rowIn, func(p int) int { return b*g.H + y0 + p*g.DH })
	}
	if live == 0 {
		return
	}
	// The next group's new input rows, prefetched while this group runs
	// (not its output rows: on W6, prefetching them too, in the second
	// half of the calls, made the forward 20% slower).
	var pf [2][]float32
	if n := min(grp.n, hi-r-grp.n, g.OH-i0-grp.n); n > 0 {
		cur := (i0+grp.n-1)*g.SH - g.PT + 2*g.DH // last input row this group reads
		ylo := max(cur+1, (i0+grp.n)*g.SH-g.PT, 0)
		yhi := min(g.H, (i0+grp.n+n-1)*g.SH-g.PT+2*g.DH+1)
		if ylo < yhi {
			pf[0] = x[(b*g.H+ylo)*rowIn : (b*g.H+yhi)*rowIn]
		}
	}
	if n := jhi - jlo; n > 0 {
		block := fwdBlock(g.SW)
		seg := segments(n, block, g.SW, c)
		grp.calls(n, unitSegs(n, seg, block), &pf, func(k, j0, j1 int, pf []float32) {
			win := shift3(&grp.rows[k], ((jlo+j0)*g.SW-g.PL)*c)
			o := out[(r+k)*rowOut+(jlo+j0)*c:]
			Fwd3x3(o, win, taps[grp.mask[k]], j1-j0, c, c, g.SW, pf, a.stream)
		})
	} else {
		Prefetch(pf[0])
		Prefetch(pf[1])
	}
	for k := range grp.n {
		mask := grp.mask[k]
		if mask == 0 {
			continue
		}
		rows, orow := &grp.rows[k], out[(r+k)*rowOut:(r+k+1)*rowOut]
		xs, ts := &grp.xs, &grp.t
		for j := 0; j < g.OW; j++ {
			if j == jlo && jlo < jhi {
				if j = jhi; j >= g.OW {
					break
				}
			}
			x0 := j*g.SW - g.PL
			qlo, qhi := axisRange(x0, 1, 3, g.W)
			n := 0
			for p := range 3 {
				if mask>>p&1 == 0 {
					continue
				}
				for q := qlo; q < qhi; q++ {
					xs[n], ts[n] = rows[p][(x0+q)*c:], f[(3*p+q)*c:]
					n++
				}
			}
			asmDot(orow[j*c:], xs, ts, n, c)
		}
	}
}

// unitSegs returns the segments of n units: seg units each (a whole
// number of blocks), the last one longer rather than shorter than a block.
func unitSegs(n, seg, block int) func(k int) (u0, u1 int, ok bool) {
	return func(k int) (int, int, bool) {
		u0 := k * seg
		if u0 >= n || k > 0 && n-u0 < block {
			return 0, 0, false
		}
		u1 := min(n, u0+seg)
		if n-u1 < block {
			u1 = n
		}
		return u0, u1, true
	}
}

// calls runs the kernel calls of the group's live rows over segments of
// the row's units: for each segment k (segs(k) its units [u0, u1), until
// it reports none), fn(row, u0, u1, pf) for the rows in turn, each call
// taking its piece of the prefetch regions pf (prefetchPiece).
func (grp *rowGroup) calls(n int, segs func(k int) (u0, u1 int, ok bool), pf *[2][]float32, fn func(k, u0, u1 int, pf []float32)) {
	nseg := 0
	for ; ; nseg++ {
		if _, _, ok := segs(nseg); !ok {
			break
		}
	}
	live := 0
	for k := range grp.n {
		if grp.mask[k] != 0 {
			live++
		}
	}
	total, call := nseg*live, 0
	for sk := range nseg {
		u0, u1, _ := segs(sk)
		for k := range grp.n {
			if grp.mask[k] == 0 {
				continue
			}
			fn(k, u0, u1, prefetchPiece(pf, call, total))
			call++
		}
	}
}

// prefetchPiece returns the part of the prefetch regions pf that call i
// of n takes: the first half of the calls share pf[0], the others pf[1]
// (all of them pf[0] if pf[1] is empty), in equal pieces.
func prefetchPiece(pf *[2][]float32, i, n int) []float32 {
	if n == 1 {
		Prefetch(pf[1])
		return pf[0]
	}
	if len(pf[1]) == 0 {
		reg := pf[0]
		return reg[i*len(reg)/n : (i+1)*len(reg)/n]
	}
	h := n / 2
	reg, piece, pieces := pf[0], i, h
	if i >= h {
		reg, piece, pieces = pf[1], i-h, n-h
	}
	return reg[piece*len(reg)/pieces : (piece+1)*len(reg)/pieces]
}

// backpropInputAsm is backpropInputNHWC for the problems of
// asmFits. Input-gradient row y gathers the out_backprop rows
// i = (y + pt − p·dh)/sh of the filter rows p where that division is
// exact and i is in range. Along a row, stride 1 is the forward kernel
// with each filter row reversed; stride 2 computes pixel pairs
// (BwdInput3x3S2). taps and zero are the scratch of backpropInputAsmWork.
func backpropInputAsm(threads int, g *Geom, f, dy, dx, taps, zero []float32) {
	need := inputMasks(g)
	a := asmJob{g: *g, x: dy, f: f, out: dx, zero: zero, stream: streamOut(dx)}
	a.taps = asmTaps(f, g.C, g.SW == 1, &need, taps)
	// Interior input pixels [xlo, xhi): every tap's out_backprop pixel
	// exists. Stride 1: x + pl − 2 ≥ 0 and x + pl < ow. Stride 2: pairs
	// t = x + pl = 2u, 2u+1 with 1 ≤ u < ow, 2u − pl ≥ 0, 2u + 1 − pl < w.
	if g.SW == 1 {
		a.jlo = min(g.W, max(0, 2-g.PL))
		a.jhi = max(a.jlo, min(g.W, g.OW-g.PL))
	} else {
		a.ulo = max(1, (g.PL+1)/2)
		uhi := a.ulo
		if last := g.W - 2 + g.PL; last >= 0 {
			uhi = max(a.ulo, min(g.OW, last/2+1))
		}
		a.jlo, a.jhi = 2*a.ulo-g.PL, 2*uhi-g.PL
		if a.ulo >= uhi {
			a.jlo, a.jhi = 0, 0
		}
	}
	n := g.N * g.H
	grain := asmBlock(n, threads, rowGrainFor(g.W*g.C*9/g.SH/g.SW))
	if serial(threads, n, grain) {
		a.inputRows(0, n)
	} else {
		parallel.Blocks(threads, n, grain, a.heap().inputRows)
	}
}

// backpropInputAsmWork returns the scratch backpropInputAsm needs: filter
// copies (reversed at stride 1) and a zeroed out_backprop row.
func backpropInputAsmWork(g *Geom) (taps, zero int) {
	need := inputMasks(g)
	return asmTapsWork(g.C, g.SW == 1, &need, g.OW*g.C)
}

// inputRowMask returns as bits the filter rows p < 3 whose out_backprop
// row (y + pt − p·dh)/sh exists for input-gradient row y.
func inputRowMask(g *Geom, y int) int {
	mask := 0
	for p := range 3 {
		t := y + g.PT - p*g.DH
		if t >= 0 && t%g.SH == 0 && t/g.SH < g.OH {
			mask |= 1 << p
		}
	}
	return mask
}

// inputRows computes backpropInputAsm's input-gradient rows [lo, hi)
// (row r of image r/h) in groups of asmGroup rows of one image.
func (a *asmJob) inputRows(lo, hi int) {
	if a.stream {
		// The non-temporal stores are ordered before whatever signals
		// the rows done.
		defer sfence()
	}
	g := &a.g
	var grp rowGroup
	for r := lo; r < hi; r += grp.n {
		grp.n = min(asmGroup, hi-r, g.H-r%g.H)
		a.inputGroup(&grp, r, hi)
	}
}

// lastDyRow returns the last out_backprop row input-gradient row y reads,
// or one more (at most oh): the bound of the rows a group prefetches.
func lastDyRow(g *Geom, y int) int {
	return min(g.OH, (y+g.PT)/g.SH)
}

// inputGroup computes the grp.n input-gradient rows from row r on; a.x is
// out_backprop, a.out the input gradient and [a.jlo, a.jhi) the interior
// input pixels; hi bounds the rows of the next group, whose new
// out_backprop rows it prefetches.
func (a *asmJob) inputGroup(grp *rowGroup, r, hi int) {
	g, dy, f, dx, zero := &a.g, a.x, a.f, a.out, a.zero
	taps, xlo, xhi, ulo := &a.taps, a.jlo, a.jhi, a.ulo
	c := g.C
	rowIn, rowOut := g.W*c, g.OW*c
	b, y0 := r/g.H, r%g.H
	live := 0
	for k := range grp.n {
		y := y0 + k
		grp.mask[k] = inputRowMask(g, y)
		if grp.mask[k] == 0 {
			clear(dx[(r+k)*rowIn : (r+k+1)*rowIn])
			continue
		}
		live++
		asmRows(&grp.rows[k], grp.mask[k], dy, zero, rowOut, func(p int) int { return b*g.OH + (y+g.PT-p*g.DH)/g.SH })
	}
	if live == 0 {
		return
	}
	// The next group's new out_backprop rows, prefetched while this group
	// runs (as in forwardGroup, not its output rows).
	var pf [2][]float32
	if n := min(grp.n, hi-r-grp.n, g.H-y0-grp.n); n > 0 {
		ilo := max(0, lastDyRow(g, y0+grp.n-1)+1)
		ihi := min(g.OH, lastDyRow(g, y0+grp.n+n-1)+1)
		if ilo < ihi {
			pf[0] = dy[(b*g.OH+ilo)*rowOut : (b*g.OH+ihi)*rowOut]
		}
	}
	switch {
	case xlo >= xhi:
		Prefetch(pf[0])
		Prefetch(pf[1])
	case g.SW == 1:
		n, block := xhi-xlo, fwdBlock(1)
		grp.calls(n, unitSegs(n, segments(n, block, 1, c), block), &pf, func(k, j0, j1 int, pf []float32) {
			win := shift3(&grp.rows[k], (xlo+j0+g.PL-2)*c)
			Fwd3x3(dx[(r+k)*rowIn+(xlo+j0)*c:], win, taps[grp.mask[k]], j1-j0, c, c, 1, pf, a.stream)
		})
	default:
		n, block := (xhi-xlo)/2, bwdBlock()
		grp.calls(n, unitSegs(n, segments(n, block, 1, c), block), &pf, func(k, m0, m1 int, pf []float32) {
			win := shift3(&grp.rows[k], (ulo-1+m0)*c)
			BwdInput3x3S2(dx[(r+k)*rowIn+(xlo+2*m0)*c:], win, taps[grp.mask[k]], m1-m0, c, c, pf, a.stream)
		})
	}
	for k := range grp.n {
		mask := grp.mask[k]
		if mask == 0 {
			continue
		}
		rows, dxrow := &grp.rows[k], dx[(r+k)*rowIn:(r+k+1)*rowIn]
		xs, ts := &grp.xs, &grp.t
		for xc := 0; xc < g.W; xc++ {
			if xc == xlo && xlo < xhi {
				if xc = xhi; xc >= g.W {
					break
				}
			}
			n := 0
			for p := range 3 {
				if mask>>p&1 == 0 {
					continue
				}
				for q := range 3 {
					t := xc + g.PL - q
					if t < 0 || t%g.SW != 0 || t/g.SW >= g.OW {
						continue
					}
					xs[n], ts[n] = rows[p][t/g.SW*c:], f[(3*p+q)*c:]
					n++
				}
			}
			asmDot(dxrow[xc*c:], xs, ts, n, c)
		}
	}
}

// asmFilterSpan bounds the input and out_backprop bytes one Filter3x3
// call spans: its channel blocks sweep them in turn, so they should stay
// in the L1 cache (the prefetches go to L2). On W5, 8–16 KiB (segments of
// 4–8 pixels) ran ~1.5× faster than 32–96 KiB; W6 (4 channel blocks) is
// less sensitive.
const asmFilterSpan = 16 << 10

// backpropFilterAsm is backpropFilterNHWC for the problems of
// asmFits, with the same fixed chunks of output rows. A chunk sums each
// row (all filter rows at once) in float32 into packed accumulators
// (Filter3x3's, accLen(c) elements), adds them to its float64 partial,
// and the partials are added in chunk order, so results do not depend on
// the thread count. parts (zeroed), accs and zero (a
// zeroed input row) are the scratch of backpropFilterAsmWork.
func backpropFilterAsm(threads int, g *Geom, x, dy, df []float32, parts []float64, accs, zero []float32) {
	c := g.C
	pk, rpc, nch := asmFilterChunks(g)
	parts, accs = parts[:nch*pk], accs[:nch*asmGroup*pk]
	a := asmJob{g: *g, x: x, dy: dy, zero: zero, parts: parts, accs: accs, pk: pk, rpc: rpc}
	a.jlo, a.jhi = interior(g.OW, g.W, 3, g.SW, 1, g.PL)
	// Interior segments: at least two (half of them prefetch one of the
	// next row's two new regions, half the other), balanced.
	if n := a.jhi - a.jlo; n > 0 {
		seg := max(2, asmFilterSpan/(4*c*(3*g.SW+1)))
		a.nseg = max(min(2, n/2), (n+seg-1)/seg)
	}
	if serial(threads, nch, 1) {
		a.filterChunks(0, nch)
	} else {
		parallel.Blocks(threads, nch, 1, a.heap().filterChunks)
	}
	al := accLen(c)
	sum := parts[:al]
	for ci := 1; ci < nch; ci++ {
		part := parts[ci*pk : ci*pk+al]
		for k, v := range part {
			sum[k] += v
		}
	}
	for k := range 9 {
		dk := df[k*c : (k+1)*c]
		for ch := range dk {
			dk[ch] = float32(sum[accIndex(c, k, ch)])
		}
	}
}

// asmFilterChunks returns the sizes of backpropFilterAsm: the space pk
// of one chunk's packed accumulators (room for every tier's layout), the
// output rows per chunk rpc and the chunk count nch. The chunk bounds
// depend only on the shapes, not on the tier.
func asmFilterChunks(g *Geom) (pk, rpc, nch int) {
	pk8 := 72 * ((g.C + Block - 1) / Block)
	pk = max(pk8, 144*((g.C+15)/16))
	rows := g.N * g.OH
	rpc = max(1, filterChunkWork/max(1, g.OW*g.C*9))
	maxChunks := min(maxFilterChunks, max(1, partialElems/pk8))
	if parallel.Chunks(rows, rpc) > maxChunks {
		rpc = (rows + maxChunks - 1) / maxChunks
	}
	return pk, rpc, parallel.Chunks(rows, rpc)
}

// backpropFilterAsmWork returns the scratch backpropFilterAsm needs: the
// chunks' float64 partial filters and float32 accumulators (asmGroup per
// chunk), and a zeroed
// input row if some output row's window leaves a filter row out.
func backpropFilterAsmWork(g *Geom) (parts, accs, zero int) {
	pk, _, nch := asmFilterChunks(g)
	need := forwardMasks(g)
	for mask, ok := range need {
		if ok && mask != 0 && mask != 7 {
			zero = g.W * g.C
		}
	}
	return nch * pk, nch * asmGroup * pk, zero
}

// filterChunks sums backpropFilterAsm's chunks [c0, c1) of output rows
// into their partial filters.
func (a *asmJob) filterChunks(c0, c1 int) {
	rows := a.g.N * a.g.OH
	for ci := c0; ci < c1; ci++ {
		a.filterChunk(ci, ci*a.rpc, min((ci+1)*a.rpc, rows))
	}
}

// filterChunk sums the output rows [lo, hi) of chunk ci into its partial
// filter parts[ci·pk:ci·pk+al], in groups of asmGroup rows of one image,
// each row in turn through its own packed float32 accumulator (of the
// chunk's asmGroup in accs); a.x is the input, a.dy out_backprop.
func (a *asmJob) filterChunk(ci, lo, hi int) {
	g := &a.g
	var grp rowGroup
	for r := lo; r < hi; r += grp.n {
		grp.n = min(asmGroup, hi-r, g.OH-r%g.OH)
		a.filterGroup(&grp, ci, r)
	}
}

// filterGroup adds the grp.n output rows from row r on to the partial
// filter of chunk ci, prefetching the next group's out_backprop and new
// input rows (across chunks too: chunks run in order on each goroutine).
func (a *asmJob) filterGroup(grp *rowGroup, ci, r int) {
	g, x, dy, zero := &a.g, a.x, a.dy, a.zero
	pk, nseg, jlo, jhi := a.pk, a.nseg, a.jlo, a.jhi
	c := g.C
	rowIn, rowOut := g.W*c, g.OW*c
	al, lanes := accLen(c), accLanes()
	rows := g.N * g.OH
	part := a.parts[ci*pk : ci*pk+al]
	var acc [asmGroup][]float32
	b, i0 := r/g.OH, r%g.OH
	live := 0
	for k := range grp.n {
		y0 := (i0+k)*g.SH - g.PT
		grp.mask[k] = rowMask(y0, g.DH, g.H)
		if grp.mask[k] == 0 {
			continue
		}
		live++
		asmRows(&grp.rows[k], grp.mask[k], x, zero, rowIn, func(p int) int { return b*g.H + y0 + p*g.DH })
		acc[k] = a.accs[(ci*asmGroup+k)*pk:][:al]
		clear(acc[k])
	}
	if live == 0 {
		return
	}
	var pf [2][]float32
	if n := min(grp.n, rows-r-grp.n); n > 0 {
		pf[0] = dy[(r+grp.n)*rowOut : (r+grp.n+n)*rowOut]
		if n = min(n, g.OH-i0-grp.n); n > 0 {
			cur := (i0+grp.n-1)*g.SH - g.PT + 2*g.DH // last input row this group reads
			ylo := max(cur+1, (i0+grp.n)*g.SH-g.PT, 0)
			yhi := min(g.H, (i0+grp.n+n-1)*g.SH-g.PT+2*g.DH+1)
			if ylo < yhi {
				pf[1] = x[(b*g.H+ylo)*rowIn : (b*g.H+yhi)*rowIn]
			}
		}
	}
	if nseg == 0 {
		Prefetch(pf[0])
		Prefetch(pf[1])
	}
	// The interior segments, fixed by the shapes (the pair scheme of
	// Filter3x3 makes the sums depend on them).
	n := jhi - jlo
	grp.calls(n, func(k int) (int, int, bool) {
		return k * n / max(nseg, 1), (k + 1) * n / max(nseg, 1), k < nseg
	}, &pf, func(k, j0, j1 int, pf []float32) {
		win := shift3(&grp.rows[k], ((jlo+j0)*g.SW-g.PL)*c)
		Filter3x3(acc[k], dy[(r+k)*rowOut+(jlo+j0)*c:], win, j1-j0, c, c, g.SW, pf)
	})
	var ks [9]int
	xs := &grp.xs
	for k := range grp.n {
		mask := grp.mask[k]
		if mask == 0 {
			continue
		}
		xr, dyrow := &grp.rows[k], dy[(r+k)*rowOut:(r+k+1)*rowOut]
		for j := 0; j < g.OW; j++ {
			if j == jlo && jlo < jhi {
				if j = jhi; j >= g.OW {
					break
				}
			}
			x0 := j*g.SW - g.PL
			qlo, qhi := axisRange(x0, 1, 3, g.W)
			nt := 0
			for p := range 3 {
				if mask>>p&1 == 0 {
					continue
				}
				for q := qlo; q < qhi; q++ {
					ks[nt], xs[nt] = 3*p+q, xr[p][(x0+q)*c:]
					nt++
				}
			}
			if nt == 0 {
				continue
			}
			AxpyTaps(acc[k], ks[:nt], xs[:nt], dyrow[j*c:], c)
		}
		if mask != 7 {
			// The zeroed rows' sums are not part of the gradient.
			for blk := 0; blk < al; blk += 9 * lanes {
				for p := range 3 {
					if mask>>p&1 == 0 {
						clear(acc[k][blk+3*lanes*p : blk+3*lanes*(p+1)])
					}
				}
			}
		}
		AddF64(part, acc[k])
	}
}
