// Package dwconv holds the loops of depthwise 2-D convolution
// (TensorFlow's DepthwiseConv2dNative and its two backprops): Forward,
// BackpropInput and BackpropFilter over slices for float32 and float64,
// any window and multiplier, NHWC or NCHW (depthwise.go, loops.go), and
// the float32 kernels their 3x3 paths run (paths.go, this file).
//
// The kernels cover 3x3 filters, unit column dilation and depth
// multiplier 1, in NHWC with the channels contiguous: AVX2/FMA assembly
// on amd64 CPUs that have it (avx2_amd64.s, written by asmgen), the
// portable Go loops of kernel_go.go on other CPUs, and Go twins of the
// assembly routines (kernel_noasm.go) on other architectures and under
// the noasm, gccgo and safe build tags.
//
// The kernels vectorise over channels: every operand is a row of pixels
// of c channels (pixel stride c), and a call covers the channel blocks
// [0, 8·nb) of its slices, so 8·nb ≤ c. Callers handle the c mod 8 tail
// channels by a second call on slices shifted by c−8 with nb = 1: the
// storing kernels recompute the overlapping channels with the same
// operations and store the same values; the accumulating ones
// (Filter3x3, AxpyTaps) write packed [block][9][8] buffers, whose extra
// block keeps the tail's sums apart.
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
)

// Block is the channel block of the kernels: 8 float32, one YMM register.
const Block = 8

// taps is the most taps a DotTaps or AxpyTaps call takes.
const taps = 9

// need panics unless s holds n elements.
func need(what string, s []float32, n int) {
	if len(s) < n {
		panic(fmt.Sprintf("dwconv: %s has %d elements, needs %d", what, len(s), n))
	}
}

// checkBlocks validates the channel blocks and pixel stride.
func checkBlocks(nb, c int) {
	if nb < 1 || Block*nb > c {
		panic(fmt.Sprintf("dwconv: %d channel blocks do not fit %d channels", nb, c))
	}
}

// Fwd3x3 computes npix ≥ 1 output pixels of one row at column stride s
// (1 or 2): for j < npix and ch < 8·nb,
//
//	o[j·c+ch] = Σ_{p<3} Σ_{q<3} x[p][(s·j+q)·c+ch] · t[(3p+q)·c+ch],
//
// summed in (p, q) order. x[p] starts at the first pixel's window in
// input row p. It is the forward convolution of an output row, and the
// stride-1 input gradient with the filter's columns reversed.
//
// The call also prefetches pf, a region the caller uses next (a hint: nil
// for none), spread over its iterations.
func Fwd3x3(o []float32, x *[3][]float32, t []float32, npix, nb, c, s int, pf []float32) {
	checkBlocks(nb, c)
	if npix < 1 || (s != 1 && s != 2) {
		panic(fmt.Sprintf("dwconv: Fwd3x3 with %d pixels at stride %d", npix, s))
	}
	w := Block * nb
	need("output", o, (npix-1)*c+w)
	need("filter", t, 8*c+w)
	for p := range x {
		need("input row", x[p], ((npix-1)*s+2)*c+w)
	}
	if !useAsm {
		fwd3x3Go(o, x, t, npix, nb, c, s)
		return
	}
	if s == 1 {
		p, e, k := spread(pf, blocks(npix, 6)*nb)
		fwd3x3S1AVX2(&o[0], &x[0][0], &x[1][0], &x[2][0], &t[0], npix, nb, 4*c, p, e, k)
	} else {
		p, e, k := spread(pf, blocks(npix, 4)*nb)
		fwd3x3S2AVX2(&o[0], &x[0][0], &x[1][0], &x[2][0], &t[0], npix, nb, 4*c, p, e, k)
	}
}

// BwdInput3x3S2 computes npairs ≥ 1 pairs of input-gradient pixels of a
// convolution at column stride 2: for m < npairs and ch < 8·nb, with
// d[p] the out_backprop row of filter row p starting at the pixel before
// pair 0's (pixel m of d[p] is the pair's left neighbour),
//
//	o[2m·c+ch]     = Σ_p d[p][m·c+ch]·t[(3p+2)·c+ch] + d[p][(m+1)·c+ch]·t[3p·c+ch]
//	o[(2m+1)·c+ch] = Σ_p d[p][(m+1)·c+ch]·t[(3p+1)·c+ch]
//
// summed in p order, the q = 2 term before the q = 0 term. pf is
// prefetched as by Fwd3x3.
func BwdInput3x3S2(o []float32, d *[3][]float32, t []float32, npairs, nb, c int, pf []float32) {
	checkBlocks(nb, c)
	if npairs < 1 {
		panic(fmt.Sprintf("dwconv: BwdInput3x3S2 with %d pairs", npairs))
	}
	w := Block * nb
	need("output", o, (2*npairs-1)*c+w)
	need("filter", t, 8*c+w)
	for p := range d {
		need("out_backprop row", d[p], npairs*c+w)
	}
	if !useAsm {
		bwd3x3S2Go(o, d, t, npairs, nb, c)
		return
	}
	p, e, k := spread(pf, blocks(npairs, 4)*nb)
	bwd3x3S2AVX2(&o[0], &d[0][0], &d[1][0], &d[2][0], &t[0], npairs, nb, 4*c, p, e, k)
}

// Filter3x3 adds to the packed filter-gradient sums acc [nb][9][8] the
// products of npix ≥ 1 out_backprop pixels dy with the input pixels their
// windows read at column stride s (1 or 2): for b < nb, tap k = 3p+q and
// lane l, with ch = 8b+l,
//
//	acc[72b+8k+l] += Σ_{j<npix} dy[j·c+ch] · x[p][(s·j+q)·c+ch],
//
// in j order, by pairs of pixels (j, j+1) from j = 0 (each pair's two
// products summed first, then added), the last pixel alone if npix is
// odd. x[p] starts at pixel 0's window in input row p.
//
// The call also prefetches pf, a region the caller reads next (a hint:
// nil for none), spread over its iterations.
func Filter3x3(acc, dy []float32, x *[3][]float32, npix, nb, c, s int, pf []float32) {
	checkBlocks(nb, c)
	if npix < 1 || (s != 1 && s != 2) {
		panic(fmt.Sprintf("dwconv: Filter3x3 with %d pixels at stride %d", npix, s))
	}
	w := Block * nb
	need("accumulators", acc, 9*w)
	need("out_backprop", dy, (npix-1)*c+w)
	for p := range x {
		need("input row", x[p], ((npix-1)*s+2)*c+w)
	}
	if !useAsm {
		filter3x3Go(acc, dy, x, npix, nb, c, s)
		return
	}
	p, e, k := spread(pf, nb*(npix/2))
	if s == 1 {
		filt3x3S1AVX2(&acc[0], &dy[0], &x[0][0], &x[1][0], &x[2][0], npix, nb, 4*c, p, e, k)
	} else {
		filt3x3S2AVX2(&acc[0], &dy[0], &x[0][0], &x[1][0], &x[2][0], npix, nb, 4*c, p, e, k)
	}
}

// DotTaps computes one pixel from a list of 1 to 9 taps: for ch < 8·nb,
//
//	o[ch] = Σ_i xs[i][ch] · ts[i][ch]
//
// in list order. It serves the pixels whose window crosses the border.
func DotTaps(o []float32, xs, ts [][]float32, nb int) {
	n := len(xs)
	if n < 1 || n > taps || len(ts) != n || nb < 1 {
		panic(fmt.Sprintf("dwconv: DotTaps with %d inputs, %d taps, %d blocks", n, len(ts), nb))
	}
	w := Block * nb
	need("output", o, w)
	var xp, tp [taps]*float32
	for i := range n {
		need("input", xs[i], w)
		need("tap", ts[i], w)
		xp[i], tp[i] = &xs[i][0], &ts[i][0]
	}
	if !useAsm {
		dotTapsGo(o, xs, ts, nb)
		return
	}
	dotTapsAVX2(&o[0], &xp[0], &tp[0], n, nb)
}

// AxpyTaps adds one out_backprop pixel's products to the packed
// filter-gradient sums acc [nb][9][8] of a list of 1 to 9 taps: for
// i < len(ks), b < nb and lane l, with ch = 8b+l,
//
//	acc[72b+8·ks[i]+l] += dy[ch] · xs[i][ch]
//
// in list order. It serves the pixels whose window crosses the border.
func AxpyTaps(acc []float32, ks []int, xs [][]float32, dy []float32, nb int) {
	n := len(xs)
	if n < 1 || n > taps || len(ks) != n || nb < 1 {
		panic(fmt.Sprintf("dwconv: AxpyTaps with %d inputs, %d taps, %d blocks", n, len(ks), nb))
	}
	w := Block * nb
	need("accumulators", acc, 9*w)
	need("out_backprop", dy, w)
	var ap, xp [taps]*float32
	for i := range n {
		if ks[i] < 0 || ks[i] >= 9 {
			panic(fmt.Sprintf("dwconv: AxpyTaps tap %d", ks[i]))
		}
		need("input", xs[i], w)
		ap[i], xp[i] = &acc[Block*ks[i]], &xs[i][0]
	}
	if !useAsm {
		axpyTapsGo(acc, ks, xs, dy, nb)
		return
	}
	axpyTapsAVX2(&ap[0], &xp[0], n, &dy[0], nb)
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
