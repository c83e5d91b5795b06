package conv

import "github.com/tapegrad/tapegrad/internal/parallel"

// The int32 kernels of Conv2D and Conv2DBackpropInput, the two ops of the
// family for which TensorFlow registers int32 CPU kernels (Eigen
// contractions in int32 there). They are direct loops over NHWC slices,
// not GEMMs: integer convolutions are rare and small, and a loop keeps the
// arithmetic plain.
//
// Arithmetic: Go's int32 multiply and add, which wrap modulo 2^32 (two's
// complement). Addition and multiplication modulo 2^32 are associative and
// commutative, so every result is the exact integer result reduced modulo
// 2^32 into [-2^31, 2^31), whatever the order of the terms: the same
// numbers TensorFlow's kernels give (C++ leaves signed overflow undefined,
// but its compiled int32 contractions wrap the same way), bit-identical
// for any thread count.
//
// Each output element is written by one goroutine (the forward loop
// splits output positions, the input gradient gathers per input
// position), and the closures handed to internal/parallel are built only
// on the multi-threaded paths, so calls on one thread allocate nothing.

// intGrainOps is the least number of multiply-adds per goroutine.
const intGrainOps = 1 << 15

// ForwardInt32 computes out = conv(x, f) in NHWC with threads threads;
// every element of out is written. With wrapping int32 arithmetic it
// equals, per output position (image b, row i, column j) and output
// channel grp·OG+o,
//
//	out[b, i, j, grp·OG+o] = Σ_{p, q, k} x[b, i·SH-PT+p·DH, j·SW-PL+q·DW, grp·CF+k] · f[p, q, k, grp·OG+o]
//
// over the taps that fall inside the input.
func ForwardInt32(out, x, f []int32, g *Geom, threads int) {
	rows := g.N * g.OH * g.OW
	grain := max(1, intGrainOps/max(1, g.KCol()*g.O))
	if serial(threads, rows, grain) {
		forwardInt32Rows(out, x, f, g, 0, rows)
		return
	}
	gc := *g // a copy: capturing g would move the caller's Geom to the heap
	parallel.For(threads, rows, grain, func(lo, hi int) { forwardInt32Rows(out, x, f, &gc, lo, hi) })
}

// forwardInt32Rows computes the output positions [lo, hi) (row-major over
// N, OH, OW).
func forwardInt32Rows(out, x, f []int32, g *Geom, lo, hi int) {
	tap := g.CF * g.O // filter elements per tap (p, q)
	for r := lo; r < hi; r++ {
		j, t := r%g.OW, r/g.OW
		i, b := t%g.OH, t/g.OH
		o := out[r*g.O : (r+1)*g.O]
		clear(o)
		y0, x0 := i*g.SH-g.PT, j*g.SW-g.PL
		for p := 0; p < g.KH; p++ {
			yy := y0 + p*g.DH
			if yy < 0 || yy >= g.H {
				continue
			}
			for q := 0; q < g.KW; q++ {
				xx := x0 + q*g.DW
				if xx < 0 || xx >= g.W {
					continue
				}
				xrow := x[((b*g.H+yy)*g.W+xx)*g.C:][:g.C]
				ft := f[(p*g.KW+q)*tap:][:tap]
				for grp := 0; grp < g.G; grp++ {
					og := o[grp*g.OG:][:g.OG]
					for k, xv := range xrow[grp*g.CF:][:g.CF] {
						fr := ft[k*g.O+grp*g.OG:][:len(og)]
						for n := range og {
							og[n] += xv * fr[n]
						}
					}
				}
			}
		}
	}
}

// BackpropInputInt32 computes the input gradient dx of a convolution from
// the filter f and the output gradient dy in NHWC with threads threads;
// every element of dx is written. With wrapping int32 arithmetic it
// equals
//
//	dx[b, y, x, grp·CF+k] = Σ dy[b, i, j, grp·OG+o] · f[p, q, k, grp·OG+o]
//
// over the output positions (i, j), taps (p, q) and channels o with
// y = i·SH-PT+p·DH, x = j·SW-PL+q·DW. Each input position gathers its own
// terms, so no two goroutines write the same element.
func BackpropInputInt32(dx, f, dy []int32, g *Geom, threads int) {
	pix := g.N * g.H * g.W
	grain := max(1, intGrainOps/max(1, g.KCol()*g.O))
	if serial(threads, pix, grain) {
		backpropInputInt32Rows(dx, f, dy, g, 0, pix)
		return
	}
	gc := *g // a copy: capturing g would move the caller's Geom to the heap
	parallel.For(threads, pix, grain, func(lo, hi int) { backpropInputInt32Rows(dx, f, dy, &gc, lo, hi) })
}

// backpropInputInt32Rows computes the input positions [lo, hi)
// (row-major over N, H, W).
func backpropInputInt32Rows(dx, f, dy []int32, g *Geom, lo, hi int) {
	tap := g.CF * g.O
	for r := lo; r < hi; r++ {
		xx, t := r%g.W, r/g.W
		yy, b := t%g.H, t/g.H
		d := dx[r*g.C : (r+1)*g.C]
		clear(d)
		for p := 0; p < g.KH; p++ {
			// Output row i reads input row yy through tap p when
			// i·SH = yy+PT-p·DH.
			ty := yy + g.PT - p*g.DH
			if ty < 0 || ty%g.SH != 0 || ty/g.SH >= g.OH {
				continue
			}
			i := ty / g.SH
			for q := 0; q < g.KW; q++ {
				tx := xx + g.PL - q*g.DW
				if tx < 0 || tx%g.SW != 0 || tx/g.SW >= g.OW {
					continue
				}
				j := tx / g.SW
				dyrow := dy[((b*g.OH+i)*g.OW+j)*g.O:][:g.O]
				ft := f[(p*g.KW+q)*tap:][:tap]
				for grp := 0; grp < g.G; grp++ {
					dyg := dyrow[grp*g.OG:][:g.OG]
					dg := d[grp*g.CF:][:g.CF]
					for k := range dg {
						fr := ft[k*g.O+grp*g.OG:][:len(dyg)]
						var s int32
						for n, v := range dyg {
							s += v * fr[n]
						}
						dg[k] += s
					}
				}
			}
		}
	}
}
