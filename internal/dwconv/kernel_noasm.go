//go:build !amd64 || noasm || gccgo || safe

package dwconv

import (
	"math/bits"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// tier is cpu.Tier() (Go in these builds), so that tests can switch it:
// the Go twins below stand in for every tier's kernels.
var tier = cpu.Tier()

// useAsm is false without the assembly kernels: the exported kernels run
// their portable Go loops (kernel_go.go), and Forward, BackpropInput and
// BackpropFilter their Go paths (loops.go). Tests switch it on to run the
// twins below.
var useAsm = false

// Go twins of the assembly kernels of avx2_amd64.s and avx512_amd64.s,
// with their names and signatures (px = c·4 the pixel stride in bytes;
// nb ≥ 1 channel blocks of 8 on AVX2, nz blocks of 16 and the lanes of
// the mask tail on AVX-512; the bounds are checked by the exported
// wrappers in dwconv.go). Each rebuilds the slices its pointers span and
// runs the Go loop the kernel equals, up to the rounding of fused
// multiply-adds. The prefetch arguments are hints and are ignored.

// f32s returns the n float32 starting at p.
func f32s(p *float32, n int) []float32 { return unsafe.Slice(p, n) }

// wideChans returns the channels of nz blocks of 16 and a tail mask.
func wideChans(nz, tail int) int { return 16*nz + bits.OnesCount16(uint16(tail)) }

// fwd3x3S1AVX2 is fwd3x3Go at stride 1 on nb blocks of 8 channels.
func fwd3x3S1AVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	fwd3x3Twin(o, x0, x1, x2, t, npix, Block*nb, px, 1)
}

// fwd3x3S2AVX2 is fwd3x3Go at stride 2 on nb blocks of 8 channels.
func fwd3x3S2AVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	fwd3x3Twin(o, x0, x1, x2, t, npix, Block*nb, px, 2)
}

// fwd3x3S1AVX512 is fwd3x3Go at stride 1 on nz blocks of 16 channels and
// a tail.
func fwd3x3S1AVX512(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	fwd3x3Twin(o, x0, x1, x2, t, npix, wideChans(nz, tail), px, 1)
}

// fwd3x3S2AVX512 is fwd3x3Go at stride 2 on nz blocks of 16 channels and
// a tail.
func fwd3x3S2AVX512(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	fwd3x3Twin(o, x0, x1, x2, t, npix, wideChans(nz, tail), px, 2)
}

// fwd3x3S1NTAVX2, fwd3x3S2NTAVX2, fwd3x3S1NTAVX512 and fwd3x3S2NTAVX512
// are the kernels above (the assembly writes with non-temporal stores).
func fwd3x3S1NTAVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	fwd3x3S1AVX2(o, x0, x1, x2, t, npix, nb, px, pf, pfend, pfk)
}

func fwd3x3S2NTAVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	fwd3x3S2AVX2(o, x0, x1, x2, t, npix, nb, px, pf, pfend, pfk)
}

func fwd3x3S1NTAVX512(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	fwd3x3S1AVX512(o, x0, x1, x2, t, npix, nz, tail, px, pf, pfend, pfk)
}

func fwd3x3S2NTAVX512(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	fwd3x3S2AVX512(o, x0, x1, x2, t, npix, nz, tail, px, pf, pfend, pfk)
}

// fwd3x3Twin runs fwd3x3Go at stride s on w channels of the slices of
// fwd3x3S1AVX2's arguments.
func fwd3x3Twin(o, x0, x1, x2, t *float32, npix, w, px, s int) {
	c := px / 4
	n := ((npix-1)*s+2)*c + w
	x := [3][]float32{f32s(x0, n), f32s(x1, n), f32s(x2, n)}
	fwd3x3Go(f32s(o, (npix-1)*c+w), &x, f32s(t, 8*c+w), npix, w, c, s)
}

// bwd3x3S2AVX2 is bwd3x3S2Go on npix pixel pairs and nb blocks of 8
// channels, the out_backprop rows in x0..x2.
func bwd3x3S2AVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	bwd3x3S2Twin(o, x0, x1, x2, t, npix, Block*nb, px)
}

// bwd3x3S2AVX512 is bwd3x3S2Go on npix pixel pairs, nz blocks of 16
// channels and a tail, the out_backprop rows in x0..x2.
func bwd3x3S2AVX512(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	bwd3x3S2Twin(o, x0, x1, x2, t, npix, wideChans(nz, tail), px)
}

// bwd3x3S2NTAVX2 and bwd3x3S2NTAVX512 are the kernels above (the assembly
// writes with non-temporal stores).
func bwd3x3S2NTAVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	bwd3x3S2AVX2(o, x0, x1, x2, t, npix, nb, px, pf, pfend, pfk)
}

func bwd3x3S2NTAVX512(o, x0, x1, x2, t *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	bwd3x3S2AVX512(o, x0, x1, x2, t, npix, nz, tail, px, pf, pfend, pfk)
}

// bwd3x3S2Twin runs bwd3x3S2Go on w channels of the slices of
// bwd3x3S2AVX2's arguments.
func bwd3x3S2Twin(o, x0, x1, x2, t *float32, npix, w, px int) {
	c := px / 4
	n := npix*c + w
	d := [3][]float32{f32s(x0, n), f32s(x1, n), f32s(x2, n)}
	bwd3x3S2Go(f32s(o, (2*npix-1)*c+w), &d, f32s(t, 8*c+w), npix, w, c)
}

// filt3x3S1AVX2 is filter3x3Go at stride 1 on nb blocks of 8 channels.
func filt3x3S1AVX2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	filt3x3Twin(acc, dy, x0, x1, x2, npix, Block*nb, px, 1, Block)
}

// filt3x3S2AVX2 is filter3x3Go at stride 2 on nb blocks of 8 channels.
func filt3x3S2AVX2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	filt3x3Twin(acc, dy, x0, x1, x2, npix, Block*nb, px, 2, Block)
}

// filt3x3S1AVX512 is filter3x3Go at stride 1 on nz blocks of 16 channels
// and a tail, sums packed by 16.
func filt3x3S1AVX512(acc, dy, x0, x1, x2 *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	filt3x3Twin(acc, dy, x0, x1, x2, npix, wideChans(nz, tail), px, 1, 16)
}

// filt3x3S2AVX512 is filter3x3Go at stride 2 on nz blocks of 16 channels
// and a tail, sums packed by 16.
func filt3x3S2AVX512(acc, dy, x0, x1, x2 *float32, npix, nz, tail, px int, pf, pfend uintptr, pfk int) {
	filt3x3Twin(acc, dy, x0, x1, x2, npix, wideChans(nz, tail), px, 2, 16)
}

// filt3x3Twin runs filter3x3Go at stride s on w channels of the slices of
// filt3x3S1AVX2's arguments, the sums packed by lanes.
func filt3x3Twin(acc, dy, x0, x1, x2 *float32, npix, w, px, s, lanes int) {
	c := px / 4
	n := ((npix-1)*s+2)*c + w
	x := [3][]float32{f32s(x0, n), f32s(x1, n), f32s(x2, n)}
	filter3x3Go(f32s(acc, 9*lanes*((w+lanes-1)/lanes)), f32s(dy, (npix-1)*c+w), &x, npix, w, c, s, lanes)
}

// dotTapsAVX2 is dotTapsGo on the n inputs and taps at xs and ts, nb
// blocks of 8 channels.
func dotTapsAVX2(o *float32, xs, ts **float32, n, nb int) {
	dotTapsTwin(o, xs, ts, n, Block*nb)
}

// dotTapsAVX512 is dotTapsGo on the n inputs and taps at xs and ts, nz
// blocks of 16 channels and a tail.
func dotTapsAVX512(o *float32, xs, ts **float32, n, nz, tail int) {
	dotTapsTwin(o, xs, ts, n, wideChans(nz, tail))
}

// dotTapsTwin runs dotTapsGo on w channels of the slices of dotTapsAVX2's
// arguments.
func dotTapsTwin(o *float32, xs, ts **float32, n, w int) {
	xp, tp := unsafe.Slice(xs, n), unsafe.Slice(ts, n)
	var xa, ta [taps][]float32
	for i := range n {
		xa[i], ta[i] = f32s(xp[i], w), f32s(tp[i], w)
	}
	dotTapsGo(f32s(o, w), xa[:n], ta[:n], w)
}

// axpyTapsAVX2 is axpyTapsGo on nb blocks of 8 channels with the
// accumulators of tap i at acc[i] (the packed sums of tap k of block 0,
// blocks 72 elements apart) and its inputs at xs[i].
func axpyTapsAVX2(acc, xs **float32, n int, dy *float32, nb int) {
	axpyTapsTwin(acc, xs, n, dy, Block*nb, Block)
}

// axpyTapsAVX512 is axpyTapsGo on nz blocks of 16 channels and a tail,
// with the accumulators of tap i at acc[i] (the packed sums of tap k of
// block 0, blocks 144 elements apart) and its inputs at xs[i].
func axpyTapsAVX512(acc, xs **float32, n int, dy *float32, nz, tail int) {
	axpyTapsTwin(acc, xs, n, dy, wideChans(nz, tail), 16)
}

// axpyTapsTwin is axpyTapsGo on w channels for the pointers of
// axpyTapsAVX2, the sums packed by lanes.
func axpyTapsTwin(acc, xs **float32, n int, dy *float32, w, lanes int) {
	ap, xp := unsafe.Slice(acc, n), unsafe.Slice(xs, n)
	d := f32s(dy, w)
	for ch := range w {
		off := 9*lanes*(ch/lanes) + ch%lanes
		for i := range n {
			a := f32s(ap[i], off+1)
			a[off] += d[ch] * f32s(xp[i], w)[ch]
		}
	}
}

// addF64 adds the n float32 at src, widened, to the n float64 at dst.
func addF64(dst *float64, src *float32, n int) {
	d, s := unsafe.Slice(dst, n), f32s(src, n)
	for i := range d {
		d[i] += float64(s[i])
	}
}

// prefetch is a hint with nothing to do without assembly.
func prefetch(p *float32, n int) {}

// sfence has nothing to order without non-temporal stores.
func sfence() {}
