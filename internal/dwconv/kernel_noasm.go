//go:build !amd64 || noasm || gccgo || safe

package dwconv

import "unsafe"

// useAsm is false without the assembly kernels: the exported kernels run
// their portable Go loops (kernel_go.go), and Forward, BackpropInput and
// BackpropFilter their Go paths (loops.go).
var useAsm = false

// Go twins of the assembly kernels of avx2_amd64.s, with their names
// and signatures (px = c·4 the pixel stride in bytes, nb ≥ 1 channel
// blocks of 8; the bounds are checked by the exported wrappers in
// dwconv.go). Each rebuilds the slices its pointers span and runs the Go
// loop the kernel equals, up to the rounding of fused multiply-adds. The
// prefetch arguments are hints and are ignored.

// f32s returns the n float32 starting at p.
func f32s(p *float32, n int) []float32 { return unsafe.Slice(p, n) }

// fwd3x3S1AVX2 is fwd3x3Go at stride 1.
func fwd3x3S1AVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	fwd3x3Twin(o, x0, x1, x2, t, npix, nb, px, 1)
}

// fwd3x3S2AVX2 is fwd3x3Go at stride 2.
func fwd3x3S2AVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	fwd3x3Twin(o, x0, x1, x2, t, npix, nb, px, 2)
}

// fwd3x3Twin runs fwd3x3Go at stride s on the slices of fwd3x3S1's
// arguments.
func fwd3x3Twin(o, x0, x1, x2, t *float32, npix, nb, px, s int) {
	c, w := px/4, Block*nb
	n := ((npix-1)*s+2)*c + w
	x := [3][]float32{f32s(x0, n), f32s(x1, n), f32s(x2, n)}
	fwd3x3Go(f32s(o, (npix-1)*c+w), &x, f32s(t, 8*c+w), npix, nb, c, s)
}

// bwd3x3S2AVX2 is bwd3x3S2Go on npix pixel pairs, the out_backprop rows in
// x0..x2.
func bwd3x3S2AVX2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	c, w := px/4, Block*nb
	n := npix*c + w
	d := [3][]float32{f32s(x0, n), f32s(x1, n), f32s(x2, n)}
	bwd3x3S2Go(f32s(o, (2*npix-1)*c+w), &d, f32s(t, 8*c+w), npix, nb, c)
}

// filt3x3S1AVX2 is filter3x3Go at stride 1.
func filt3x3S1AVX2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	filt3x3Twin(acc, dy, x0, x1, x2, npix, nb, px, 1)
}

// filt3x3S2AVX2 is filter3x3Go at stride 2.
func filt3x3S2AVX2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	filt3x3Twin(acc, dy, x0, x1, x2, npix, nb, px, 2)
}

// filt3x3Twin runs filter3x3Go at stride s on the slices of filt3x3S1's
// arguments.
func filt3x3Twin(acc, dy, x0, x1, x2 *float32, npix, nb, px, s int) {
	c, w := px/4, Block*nb
	n := ((npix-1)*s+2)*c + w
	x := [3][]float32{f32s(x0, n), f32s(x1, n), f32s(x2, n)}
	filter3x3Go(f32s(acc, 9*w), f32s(dy, (npix-1)*c+w), &x, npix, nb, c, s)
}

// dotTapsAVX2 is dotTapsGo on the n inputs and taps at xs and ts.
func dotTapsAVX2(o *float32, xs, ts **float32, n, nb int) {
	w := Block * nb
	xp, tp := unsafe.Slice(xs, n), unsafe.Slice(ts, n)
	var xa, ta [taps][]float32
	for i := range n {
		xa[i], ta[i] = f32s(xp[i], w), f32s(tp[i], w)
	}
	dotTapsGo(f32s(o, w), xa[:n], ta[:n], nb)
}

// axpyTapsAVX2 is axpyTapsGo with the accumulators of tap i at acc[i] (the
// packed sums of tap k of block 0, blocks 72 elements apart) and its
// inputs at xs[i].
func axpyTapsAVX2(acc, xs **float32, n int, dy *float32, nb int) {
	w := Block * nb
	ap, xp := unsafe.Slice(acc, n), unsafe.Slice(xs, n)
	d := f32s(dy, w)
	for b := range nb {
		for i := range n {
			a := f32s(ap[i], 72*b+Block)[72*b:]
			xi := f32s(xp[i], w)[Block*b : Block*b+Block]
			db := d[Block*b : Block*b+Block]
			for l := range a {
				a[l] += db[l] * xi[l]
			}
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
