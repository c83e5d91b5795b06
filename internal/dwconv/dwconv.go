// Package dwconv holds the loops of depthwise 2-D convolution
// (TensorFlow's DepthwiseConv2dNative and its two backprops): Forward,
// BackpropInput and BackpropFilter over slices for float32 and float64,
// any window and multiplier, NHWC or NCHW (depthwise.go, loops.go), and
// the float32 kernels their 3x3 paths run (paths.go, this file).
//
// The kernels cover 3x3 filters, unit column dilation and depth
// multiplier 1, in NHWC with the channels contiguous, in three tiers
// (cpu.Tier, capped by TAPEGRAD_ISA): AVX-512 assembly on amd64 CPUs that
// have it (avx512_amd64.s), AVX2/FMA assembly on the others that have
// that (avx2_amd64.s), both written by asmgen from one description, and
// the portable Go loops of kernel_go.go; Go twins of the assembly
// routines (kernel_noasm.go) stand in for them on other architectures and
// under the noasm, gccgo and safe build tags.
//
// The kernels vectorise over channels: every operand is a row of pixels
// of c channels (pixel stride c), and a call covers the channels [0, w)
// of its slices, 8 ≤ w ≤ c. AVX-512 takes them in blocks of 16, the last
// w mod 16 under a lane mask. AVX2 (and the Go loops, which mirror it)
// takes blocks of 8 and the w mod 8 tail channels by a second pass on
// slices shifted by w−8: the storing kernels recompute the overlapping
// channels with the same operations and store the same values; the
// accumulating ones (Filter3x3, AxpyTaps) write packed tap sums in
// blocks (accLen, accIndex), whose extra block keeps the tail's sums
// apart. Every tier does the same operations per channel in the same
// order, so the assembly tiers give the same bits.
//
// A filter here is a [3][3][c] slice: tap (p, q) of a channel starts at
// (3p+q)·c. Sums start from zero and add their terms with fused
// multiply-adds in a fixed order (stated per kernel): for the storing
// kernels it does not depend on how a row is cut into calls, for
// Filter3x3 it depends on where calls start (pairs of pixels), so callers
// cut rows the same way whatever the thread count. The Go loops round
// each product separately and may differ in the last bits.
//
// Calls take a region to prefetch into the L2 cache while they run (the
// data of the caller's next call): the workloads are memory-bound, and
// spreading the prefetches over a call's iterations overlaps the next
// row's transfer with this row's arithmetic.
//
// Every function checks the bounds it relies on and panics on a slice
// too short for its arguments (a caller's bug).
package dwconv

import (
	"fmt"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// Block is the channel block of the AVX2 kernels: 8 float32, one YMM
// register; the least channels a kernel call covers.
const Block = 8

// taps is the most taps a DotTaps or AxpyTaps call takes.
const taps = 9

// need panics unless s holds n elements.
func need(what string, s []float32, n int) {
	if len(s) < n {
		panic(fmt.Sprintf("dwconv: %s has %d elements, needs %d", what, len(s), n))
	}
}

// checkChans validates the channel count w of a call and the pixel
// stride c.
func checkChans(w, c int) {
	if w < Block || w > c {
		panic(fmt.Sprintf("dwconv: %d channels of %d per pixel (at least %d)", w, c, Block))
	}
}

// wide reports whether the kernels run the AVX-512 tier.
func wide() bool { return useAsm && tier >= cpu.AVX512 }

// wideBlocks returns the full blocks of 16 of w channels and the lane
// mask of the rest (0 if none), the channel arguments of the AVX-512
// kernels, and how many blocks they run.
func wideBlocks(w int) (nz, tail, n int) {
	nz, tail = w/16, 1<<(w%16)-1
	n = nz
	if tail != 0 {
		n++
	}
	return nz, tail, n
}

// accLanes returns the lanes of a block of packed tap sums: 16 on the
// AVX-512 tier, 8 otherwise.
func accLanes() int {
	if wide() {
		return 16
	}
	return Block
}

// accLen returns the elements of the packed tap sums of Filter3x3 and
// AxpyTaps for w channels: blocks of accLanes() channels, each the nine
// taps' sums in turn. Block b holds channels [b·lanes, (b+1)·lanes),
// except on the 8-lane tiers, when 8 does not divide w, the last one,
// which holds [w−8, w) (the shifted tail pass).
func accLen(w int) int {
	l := accLanes()
	return 9 * l * ((w + l - 1) / l)
}

// accIndex returns the index of tap k of channel ch < w in the packed
// tap sums of w channels.
func accIndex(w, k, ch int) int {
	l := accLanes()
	if l == Block {
		if nb := w / Block; ch >= Block*nb {
			return 72*nb + 8*k + ch - (w - Block)
		}
	}
	return 9*l*(ch/l) + l*k + ch%l
}

// shift3 returns the rows of x each shifted by off elements.
func shift3(x *[3][]float32, off int) *[3][]float32 {
	return &[3][]float32{x[0][off:], x[1][off:], x[2][off:]}
}

// Fwd3x3 computes npix ≥ 1 output pixels of one row at column stride s
// (1 or 2): for j < npix and ch < w,
//
//	o[j·c+ch] = Σ_{p<3} Σ_{q<3} x[p][(s·j+q)·c+ch] · t[(3p+q)·c+ch],
//
// summed in (p, q) order. x[p] starts at the first pixel's window in
// input row p. It is the forward convolution of an output row, and the
// stride-1 input gradient with the filter's columns reversed.
//
// The call also prefetches pf, a region the caller uses next (a hint: nil
// for none), spread over its iterations. With stream set it writes o with
// non-temporal stores where the tier and o's alignment allow (streamable),
// for outputs not read again soon.
func Fwd3x3(o []float32, x *[3][]float32, t []float32, npix, w, c, s int, pf []float32, stream bool) {
	checkChans(w, c)
	if npix < 1 || (s != 1 && s != 2) {
		panic(fmt.Sprintf("dwconv: Fwd3x3 with %d pixels at stride %d", npix, s))
	}
	need("output", o, (npix-1)*c+w)
	need("filter", t, 8*c+w)
	for p := range x {
		need("input row", x[p], ((npix-1)*s+2)*c+w)
	}
	nt := stream && streamable(o, w, c)
	switch {
	case !useAsm:
		fwd3x3Go(o, x, t, npix, w, c, s)
	case wide():
		nz, tail, n := wideBlocks(w)
		kern := [2][2]func(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int){
			{fwd3x3S1AVX512, fwd3x3S1NTAVX512}, {fwd3x3S2AVX512, fwd3x3S2NTAVX512}}[s-1][b2i(nt)]
		p, e, k := spread(pf, blocks(npix, [2]int{pixS1AVX512, pixS2AVX512}[s-1])*n)
		kern(&o[0], &x[0][0], &x[1][0], &x[2][0], &t[0], npix, nz, tail, 4*c, p, e, k)
	default:
		fwd3x3AVX2(o, x, t, npix, w/Block, c, s, pf, nt)
		if w%Block != 0 {
			off := w - Block
			fwd3x3AVX2(o[off:], shift3(x, off), t[off:], npix, 1, c, s, nil, false)
		}
	}
}

// fwd3x3AVX2 runs the AVX2 kernel of Fwd3x3 on nb blocks of 8 channels,
// with non-temporal stores if nt.
func fwd3x3AVX2(o []float32, x *[3][]float32, t []float32, npix, nb, c, s int, pf []float32, nt bool) {
	kern := [2][2]func(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int){
		{fwd3x3S1AVX2, fwd3x3S1NTAVX2}, {fwd3x3S2AVX2, fwd3x3S2NTAVX2}}[s-1][b2i(nt)]
	p, e, k := spread(pf, blocks(npix, [2]int{pixS1AVX2, pixS2AVX2}[s-1])*nb)
	kern(&o[0], &x[0][0], &x[1][0], &x[2][0], &t[0], npix, nb, 4*c, p, e, k)
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// streamable reports whether a storing kernel of the current tier can
// write o, w of every c channels, with non-temporal stores: whole vectors
// (no masked or shifted tail) at addresses aligned to the vector width.
func streamable(o []float32, w, c int) bool {
	if !useAsm {
		return false
	}
	lanes := Block
	if wide() {
		lanes = 16
	}
	return w%lanes == 0 && c%lanes == 0 && uintptr(unsafe.Pointer(&o[0]))%uintptr(4*lanes) == 0
}

// BwdInput3x3S2 computes npairs ≥ 1 pairs of input-gradient pixels of a
// convolution at column stride 2: for m < npairs and ch < w, with d[p]
// the out_backprop row of filter row p starting at the pixel before pair
// 0's (pixel m of d[p] is the pair's left neighbour),
//
//	o[2m·c+ch]     = Σ_p d[p][m·c+ch]·t[(3p+2)·c+ch] + d[p][(m+1)·c+ch]·t[3p·c+ch]
//	o[(2m+1)·c+ch] = Σ_p d[p][(m+1)·c+ch]·t[(3p+1)·c+ch]
//
// summed in p order, the q = 2 term before the q = 0 term. pf and stream
// are as for Fwd3x3.
func BwdInput3x3S2(o []float32, d *[3][]float32, t []float32, npairs, w, c int, pf []float32, stream bool) {
	checkChans(w, c)
	if npairs < 1 {
		panic(fmt.Sprintf("dwconv: BwdInput3x3S2 with %d pairs", npairs))
	}
	need("output", o, (2*npairs-1)*c+w)
	need("filter", t, 8*c+w)
	for p := range d {
		need("out_backprop row", d[p], npairs*c+w)
	}
	nt := stream && streamable(o, w, c)
	switch {
	case !useAsm:
		bwd3x3S2Go(o, d, t, npairs, w, c)
	case wide():
		nz, tail, n := wideBlocks(w)
		kern := bwd3x3S2AVX512
		if nt {
			kern = bwd3x3S2NTAVX512
		}
		p, e, k := spread(pf, blocks(npairs, pairsAVX512)*n)
		kern(&o[0], &d[0][0], &d[1][0], &d[2][0], &t[0], npairs, nz, tail, 4*c, p, e, k)
	default:
		nb := w / Block
		kern := bwd3x3S2AVX2
		if nt {
			kern = bwd3x3S2NTAVX2
		}
		p, e, k := spread(pf, blocks(npairs, pairsAVX2)*nb)
		kern(&o[0], &d[0][0], &d[1][0], &d[2][0], &t[0], npairs, nb, 4*c, p, e, k)
		if w%Block != 0 {
			off := w - Block
			bwd3x3S2AVX2(&o[off], &d[0][off], &d[1][off], &d[2][off], &t[off], npairs, 1, 4*c, 0, 0, 1)
		}
	}
}

// Filter3x3 adds to the packed filter-gradient sums acc (accLen(w)
// elements, tap k of channel ch at accIndex(w, k, ch)) the products of
// npix ≥ 1 out_backprop pixels dy with the input pixels their windows
// read at column stride s (1 or 2): for ch < w and tap k = 3p+q,
//
//	acc[accIndex(w, k, ch)] += Σ_{j<npix} dy[j·c+ch] · x[p][(s·j+q)·c+ch],
//
// in j order, by pairs of pixels (j, j+1) from j = 0 (each pair's two
// products summed first, then added), the last pixel alone if npix is
// odd. x[p] starts at pixel 0's window in input row p.
//
// The call also prefetches pf, a region the caller reads next (a hint:
// nil for none), spread over its iterations.
func Filter3x3(acc, dy []float32, x *[3][]float32, npix, w, c, s int, pf []float32) {
	checkChans(w, c)
	if npix < 1 || (s != 1 && s != 2) {
		panic(fmt.Sprintf("dwconv: Filter3x3 with %d pixels at stride %d", npix, s))
	}
	need("accumulators", acc, accLen(w))
	need("out_backprop", dy, (npix-1)*c+w)
	for p := range x {
		need("input row", x[p], ((npix-1)*s+2)*c+w)
	}
	nb := w / Block
	switch {
	case !useAsm:
		filter3x3Go(acc, dy, x, npix, Block*nb, c, s, Block)
		if w%Block != 0 {
			off := w - Block
			filter3x3Go(acc[72*nb:], dy[off:], shift3(x, off), npix, Block, c, s, Block)
		}
	case wide():
		nz, tail, n := wideBlocks(w)
		p, e, k := spread(pf, n*(npix/2))
		if s == 1 {
			filt3x3S1AVX512(&acc[0], &dy[0], &x[0][0], &x[1][0], &x[2][0], npix, nz, tail, 4*c, p, e, k)
		} else {
			filt3x3S2AVX512(&acc[0], &dy[0], &x[0][0], &x[1][0], &x[2][0], npix, nz, tail, 4*c, p, e, k)
		}
	default:
		filt3x3AVX2(acc, dy, x, npix, nb, c, s, pf)
		if w%Block != 0 {
			off := w - Block
			filt3x3AVX2(acc[72*nb:], dy[off:], shift3(x, off), npix, 1, c, s, nil)
		}
	}
}

// filt3x3AVX2 runs the AVX2 kernel of Filter3x3 on nb blocks of 8
// channels.
func filt3x3AVX2(acc, dy []float32, x *[3][]float32, npix, nb, c, s int, pf []float32) {
	p, e, k := spread(pf, nb*(npix/2))
	if s == 1 {
		filt3x3S1AVX2(&acc[0], &dy[0], &x[0][0], &x[1][0], &x[2][0], npix, nb, 4*c, p, e, k)
	} else {
		filt3x3S2AVX2(&acc[0], &dy[0], &x[0][0], &x[1][0], &x[2][0], npix, nb, 4*c, p, e, k)
	}
}

// DotTaps computes one pixel from a list of 1 to 9 taps: for ch < w,
//
//	o[ch] = Σ_i xs[i][ch] · ts[i][ch]
//
// in list order. It serves the pixels whose window crosses the border.
func DotTaps(o []float32, xs, ts [][]float32, w int) {
	n := len(xs)
	if n < 1 || n > taps || len(ts) != n || w < Block {
		panic(fmt.Sprintf("dwconv: DotTaps with %d inputs, %d taps, %d channels", n, len(ts), w))
	}
	need("output", o, w)
	var xp, tp [taps]*float32
	for i := range n {
		need("input", xs[i], w)
		need("tap", ts[i], w)
		xp[i], tp[i] = &xs[i][0], &ts[i][0]
	}
	switch {
	case !useAsm:
		dotTapsGo(o, xs, ts, w)
	case wide():
		nz, tail, _ := wideBlocks(w)
		dotTapsAVX512(&o[0], &xp[0], &tp[0], n, nz, tail)
	default:
		dotTapsAVX2(&o[0], &xp[0], &tp[0], n, w/Block)
		if w%Block != 0 {
			off := w - Block
			for i := range n {
				xp[i], tp[i] = &xs[i][off], &ts[i][off]
			}
			dotTapsAVX2(&o[off], &xp[0], &tp[0], n, 1)
		}
	}
}

// AxpyTaps adds one out_backprop pixel's products to the packed
// filter-gradient sums acc (as Filter3x3's) of a list of 1 to 9 distinct
// taps: for i < len(ks) and ch < w,
//
//	acc[accIndex(w, ks[i], ch)] += dy[ch] · xs[i][ch]
//
// It serves the pixels whose window crosses the border.
func AxpyTaps(acc []float32, ks []int, xs [][]float32, dy []float32, w int) {
	n := len(xs)
	if n < 1 || n > taps || len(ks) != n || w < Block {
		panic(fmt.Sprintf("dwconv: AxpyTaps with %d inputs, %d taps, %d channels", n, len(ks), w))
	}
	need("accumulators", acc, accLen(w))
	need("out_backprop", dy, w)
	l := accLanes()
	var ap, xp [taps]*float32
	for i := range n {
		if ks[i] < 0 || ks[i] >= 9 {
			panic(fmt.Sprintf("dwconv: AxpyTaps tap %d", ks[i]))
		}
		need("input", xs[i], w)
		ap[i], xp[i] = &acc[l*ks[i]], &xs[i][0]
	}
	nb := w / Block
	switch {
	case !useAsm:
		axpyTapsGo(acc, ks, xs, dy, Block*nb, Block)
		if w%Block != 0 {
			off := w - Block
			var xo [taps][]float32
			for i := range n {
				xo[i] = xs[i][off:]
			}
			axpyTapsGo(acc[72*nb:], ks, xo[:n], dy[off:], Block, Block)
		}
	case wide():
		nz, tail, _ := wideBlocks(w)
		axpyTapsAVX512(&ap[0], &xp[0], n, &dy[0], nz, tail)
	default:
		axpyTapsAVX2(&ap[0], &xp[0], n, &dy[0], nb)
		if w%Block != 0 {
			off := w - Block
			for i := range n {
				ap[i], xp[i] = &acc[72*nb+Block*ks[i]], &xs[i][off]
			}
			axpyTapsAVX2(&ap[0], &xp[0], n, &dy[off], 1)
		}
	}
}

// AddF64 adds src, widened to float64, to dst: dst[i] += float64(src[i]).
func AddF64(dst []float64, src []float32) {
	n := len(src)
	if len(dst) < n {
		panic(fmt.Sprintf("dwconv: AddF64 into %d elements from %d", len(dst), n))
	}
	m := 0
	if useAsm {
		m = n &^ 7
		if m > 0 {
			addF64(&dst[0], &src[0], m)
		}
	}
	dst = dst[:n]
	for i := m; i < n; i++ {
		dst[i] += float64(src[i])
	}
}

// Prefetch asks the CPU to bring s into its L2 cache (a hint; no effect
// without assembly).
func Prefetch(s []float32) {
	if useAsm && len(s) > 0 {
		prefetch(&s[0], 4*len(s))
	}
}

// blocks returns the pixel blocks of size b the kernels run for n pixels
// (the last one overlapping the previous one), 0 when n < b (one pixel at a
// time, without prefetching).
func blocks(n, b int) int {
	if n < b {
		return 0
	}
	return (n + b - 1) / b
}

// spread returns the bounds of the prefetch region pf and the groups of
// four lines to prefetch per iteration to cover it in iters iterations.
// Without iterations to spread over, it prefetches the region at once.
func spread(pf []float32, iters int) (p, e uintptr, k int) {
	if len(pf) == 0 || iters < 1 {
		Prefetch(pf)
		return 0, 0, 1
	}
	p = uintptr(unsafe.Pointer(&pf[0]))
	e = p + uintptr(4*len(pf))
	groups := (4*len(pf) + 255) / 256
	return p, e, (groups + iters - 1) / iters
}
