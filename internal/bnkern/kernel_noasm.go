//go:build !amd64 || noasm || gccgo || safe

package bnkern

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// tier is cpu.Tier(), as on amd64, so that tests can switch it; the Go
// twins below run whatever it says.
var tier = cpu.Tier()

// useAsm reports whether float32 calls of at least Block channels run the
// block kernels below (in this build their Go twins, which give the same
// results as the generic Go loops of kernel_go.go). Tests switch it off
// to compare the two.
var useAsm = true

// The Go twins of the block kernels of kernel_amd64.go, with the same
// names, signatures and results: the same IEEE operations in the same
// order (every product converted to float32 explicitly, so the compiler
// cannot fuse it into a multiply-add). x (and the other row operands)
// point at the first of rows rows of stride bytes; each kernel covers the
// nb·8 channels from every row's start. The reducing kernels take n4
// groups of four rows.

// span returns the float32 elements of rows rows of stride bytes whose
// first w elements a kernel reads or writes, starting at p.
func span(p *float32, rows, w, stride int) []float32 {
	if rows < 1 {
		return nil
	}
	return unsafe.Slice(p, (rows-1)*(stride/4)+w)
}

// stats is, per group g of four rows r_i = 4g+i and channel c < nb·8,
//
//	d_i = x[r_i][c] − k[c]
//	p1[c] += float64((d0 + d1) + (d2 + d3))
//	p2[c] += float64((float32(d0·d0) + float32(d1·d1)) + (float32(d2·d2) + float32(d3·d3)))
func stats(x, k *float32, p1, p2 *float64, n4, nb, stride int) {
	w, s := nb*Block, stride/4
	xs := span(x, 4*n4, w, stride)
	ks, a, b := unsafe.Slice(k, w), unsafe.Slice(p1, w), unsafe.Slice(p2, w)
	for g := 0; g < n4; g++ {
		o := 4 * g * s
		for c := 0; c < w; c++ {
			kc := ks[c]
			d0, d1, d2, d3 := xs[o+c]-kc, xs[o+s+c]-kc, xs[o+2*s+c]-kc, xs[o+3*s+c]-kc
			a[c] += float64((d0 + d1) + (d2 + d3))
			b[c] += float64((float32(d0*d0) + float32(d1*d1)) + (float32(d2*d2) + float32(d3*d3)))
		}
	}
}

// gradSums is, per group g of four rows r_i = 4g+i and channel c < nb·8,
// with g_i = dy[r_i][c] and x_i = x[r_i][c],
//
//	p1[c] += float64((g0 + g1) + (g2 + g3))
//	p2[c] += float64((float32(g0·(x0−m[c])) + float32(g1·(x1−m[c]))) + (float32(g2·(x2−m[c])) + float32(g3·(x3−m[c]))))
func gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int, _ bool) {
	w, s := nb*Block, stride/4
	gs, xs := span(dy, 4*n4, w, stride), span(x, 4*n4, w, stride)
	ms, a, b := unsafe.Slice(m, w), unsafe.Slice(p1, w), unsafe.Slice(p2, w)
	for g := 0; g < n4; g++ {
		o := 4 * g * s
		for c := 0; c < w; c++ {
			mc := ms[c]
			i0, i1, i2, i3 := o+c, o+s+c, o+2*s+c, o+3*s+c
			g0, g1, g2, g3 := gs[i0], gs[i1], gs[i2], gs[i3]
			a[c] += float64((g0 + g1) + (g2 + g3))
			b[c] += float64((float32(g0*(xs[i0]-mc)) + float32(g1*(xs[i1]-mc))) + (float32(g2*(xs[i2]-mc)) + float32(g3*(xs[i3]-mc))))
		}
	}
}

// norm is, per row r and channel c < nb·8,
//
//	y[r][c] = float32((x[r][c] − mu[c])·k[c]) + beta[c]
func norm(x, y, mu, k, beta *float32, rows, nb, stride int, _ bool) {
	w, s := nb*Block, stride/4
	xs, ys := span(x, rows, w, stride), span(y, rows, w, stride)
	ms, ks, bs := unsafe.Slice(mu, w), unsafe.Slice(k, w), unsafe.Slice(beta, w)
	for r := 0; r < rows; r++ {
		o := r * s
		for c := 0; c < w; c++ {
			ys[o+c] = float32((xs[o+c]-ms[c])*ks[c]) + bs[c]
		}
	}
}

// normNT is norm (the assembly writes y with non-temporal stores).
func normNT(x, y, mu, k, beta *float32, rows, nb, stride int) {
	norm(x, y, mu, k, beta, rows, nb, stride, false)
}

// gradDx is, per row r and channel c < nb·8,
//
//	dx[r][c] = float32(a[c]·(dy[r][c] − mdy[c])) − float32(b[c]·(x[r][c] − m[c]))
func gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int, _ bool) {
	w, s := nb*Block, stride/4
	gs, xs, ds := span(dy, rows, w, stride), span(x, rows, w, stride), span(dx, rows, w, stride)
	as, mds, bs, ms := unsafe.Slice(a, w), unsafe.Slice(mdy, w), unsafe.Slice(b, w), unsafe.Slice(m, w)
	for r := 0; r < rows; r++ {
		o := r * s
		for c := 0; c < w; c++ {
			ds[o+c] = float32(as[c]*(gs[o+c]-mds[c])) - float32(bs[c]*(xs[o+c]-ms[c]))
		}
	}
}

// gradDxNT is gradDx (the assembly writes dx with non-temporal stores).
func gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int) {
	gradDx(dy, x, dx, a, mdy, b, m, rows, nb, stride, false)
}

// scale is, per row r and channel c < nb·8,
//
//	dx[r][c] = dy[r][c]·k[c]
func scale(dy, dx, k *float32, rows, nb, stride int) {
	w, s := nb*Block, stride/4
	gs, ds, ks := span(dy, rows, w, stride), span(dx, rows, w, stride), unsafe.Slice(k, w)
	for r := 0; r < rows; r++ {
		o := r * s
		for c := 0; c < w; c++ {
			ds[o+c] = gs[o+c] * ks[c]
		}
	}
}
