// Package bnkern holds the loops of the fused batch normalisation ops
// (FusedBatchNorm and its gradient): per-channel statistics, the
// normalisation, the gradient's channel sums and its dx, over a tensor
// viewed as [Outer, C, Inner] (Layout). The reductions are cut into
// chunks by shape alone and their partial sums combined in chunk order,
// so every result is bit-identical for any thread count (batch.go).
//
// Channels-last data is a sequence of rows of c channels (c contiguous
// elements), served by the row kernels of this file: every kernel either
// reduces per channel over the rows (column sums) or writes an
// elementwise output with per-channel coefficients.
//
// The kernels are generic over float32 and float64. For float32 with at
// least 8 channels they run the block kernels: AVX2 assembly on amd64
// when the CPU has AVX2 and FMA (kernel_amd64.s), their Go twins of the
// same names under the noasm build tag and on other architectures
// (kernel_noasm.go); otherwise the generic Go loops of kernel_go.go. All
// produce bit-identical results: they perform the same IEEE operations in
// the same order (no fused multiply-adds; the Go loops convert every
// product explicitly so the compiler cannot fuse it either).
//
// The block kernels vectorise over blocks of 8 channels. For c mod 8 tail
// channels a second call covers the last 8 channels (slices shifted by
// c−8): the storing kernels recompute the overlapping channels with the
// same operations and store the same values; the reducing kernels
// accumulate the shifted block into a copy of the last 8 accumulators and
// copy back only the tail's.
//
// Reductions: rows are taken in groups of four from the start of the
// slice; each group's four terms per channel are added in the element
// type as (t0 + t1) + (t2 + t3), and the group sum is added to the
// float64 accumulator; the remaining rows (fewer than four) are added one
// by one. The order depends only on where a call starts, so callers that
// cut the rows into calls by shape alone get results that do not depend
// on the thread count.
//
// Every function panics on slices too short for its arguments (a
// caller's bug).
package bnkern

import (
	"fmt"
	"unsafe"
)

// Float is the element types of the kernels.
type Float interface{ float32 | float64 }

// Block is the channel block of the block kernels: 8 float32, one YMM
// register.
const Block = 8

// rowsOf checks the row length c and that x holds whole rows, and returns
// their number.
func rowsOf[T Float](what string, x []T, c int) int {
	if c < 1 || len(x)%c != 0 {
		panic(fmt.Sprintf("bnkern: %s has %d elements, not whole rows of %d channels", what, len(x), c))
	}
	return len(x) / c
}

// need panics unless s holds at least n elements.
func need[T Float](what string, s []T, n int) {
	if len(s) < n {
		panic(fmt.Sprintf("bnkern: %s has %d elements, needs %d", what, len(s), n))
	}
}

// asm32 returns s as a float32 slice if the block kernels should serve a
// call over c channels (float32, c ≥ Block, useAsm).
func asm32[T Float](s []T, c int) ([]float32, bool) {
	if !useAsm || c < Block {
		return nil, false
	}
	f, ok := any(s).([]float32)
	return f, ok
}

// f32 returns s as a float32 slice; it is only called once asm32 has
// established that T is float32.
func f32[T Float](s []T) []float32 {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&s[0])), len(s))
}

// aligned reports whether s starts at a 32-byte boundary, which the
// streaming stores of normRows and gradDxRows need (with c a multiple of 8).
func aligned[T Float](s []T) bool {
	return len(s) > 0 && uintptr(unsafe.Pointer(&s[0]))%32 == 0
}

// streamable reports whether an output of rows of c channels can take
// streaming (non-temporal) stores.
func streamable(y []float32, c int) bool {
	return c%Block == 0 && aligned(y)
}

// statsRows adds, per channel ch < c, the sums over the rows of x of the
// shifted values and their squares:
//
//	p1[ch] += Σ_r (x[r·c+ch] − k[ch]),  p2[ch] += Σ_r (x[r·c+ch] − k[ch])²
//
// in groups of four rows (see the package comment); squares are rounded
// to the element type before they are added.
func statsRows[T Float](x []T, c int, k []T, p1, p2 []float64) {
	rows := rowsOf("x", x, c)
	need("shift", k, c)
	need("sums", p1, c)
	need("squares", p2, c)
	n4 := rows / 4
	if xf, ok := asm32(x, c); ok && n4 > 0 {
		kf := f32(k)
		nb := c / Block
		stats(&xf[0], &kf[0], &p1[0], &p2[0], n4, nb, 4*c)
		if t := c % Block; t != 0 {
			var a, b [Block]float64
			copy(a[:], p1[c-Block:c])
			copy(b[:], p2[c-Block:c])
			stats(&xf[c-Block], &kf[c-Block], &a[0], &b[0], n4, 1, 4*c)
			copy(p1[c-t:c], a[Block-t:])
			copy(p2[c-t:c], b[Block-t:])
		}
		statsGo(x[4*n4*c:], c, k, p1, p2)
		return
	}
	statsGo(x, c, k, p1, p2)
}

// gradSumsRows adds, per channel ch < c, the sums over the rows of dy and x
//
//	p1[ch] += Σ_r dy[r·c+ch],  p2[ch] += Σ_r dy[r·c+ch]·(x[r·c+ch] − m[ch])
//
// in groups of four rows (see the package comment); products are rounded
// to the element type before they are added. x has dy's length.
func gradSumsRows[T Float](dy, x []T, c int, m []T, p1, p2 []float64) {
	rows := rowsOf("y_backprop", dy, c)
	need("x", x, len(dy))
	need("mean", m, c)
	need("sums", p1, c)
	need("products", p2, c)
	n4 := rows / 4
	if gf, ok := asm32(dy, c); ok && n4 > 0 {
		xf, mf := f32(x), f32(m)
		nb := c / Block
		gradSums(&gf[0], &xf[0], &mf[0], &p1[0], &p2[0], n4, nb, 4*c)
		if t := c % Block; t != 0 {
			var a, b [Block]float64
			copy(a[:], p1[c-Block:c])
			copy(b[:], p2[c-Block:c])
			gradSums(&gf[c-Block], &xf[c-Block], &mf[c-Block], &a[0], &b[0], n4, 1, 4*c)
			copy(p1[c-t:c], a[Block-t:])
			copy(p2[c-t:c], b[Block-t:])
		}
		gradSumsGo(dy[4*n4*c:], x[4*n4*c:len(dy)], c, m, p1, p2)
		return
	}
	gradSumsGo(dy, x[:len(dy)], c, m, p1, p2)
}

// normRows writes, per channel ch < c, over the rows of x
//
//	y[r·c+ch] = (x[r·c+ch] − mu[ch])·k[ch] + beta[ch]
//
// with the product rounded before the addition. y has x's length and
// must not overlap it. With stream set, the assembly writes y with
// non-temporal stores when c is a multiple of 8 and y is 32-byte aligned
// (for outputs much larger than the caches, which are not read again
// soon).
func normRows[T Float](x, y []T, c int, mu, k, beta []T, stream bool) {
	rows := rowsOf("x", x, c)
	need("y", y, len(x))
	need("mean", mu, c)
	need("factor", k, c)
	need("offset", beta, c)
	if xf, ok := asm32(x, c); ok && rows > 0 {
		yf, muf, kf, bf := f32(y), f32(mu), f32(k), f32(beta)
		nb := c / Block
		if stream && streamable(yf, c) {
			normNT(&xf[0], &yf[0], &muf[0], &kf[0], &bf[0], rows, nb, 4*c)
			return
		}
		norm(&xf[0], &yf[0], &muf[0], &kf[0], &bf[0], rows, nb, 4*c)
		if c%Block != 0 {
			o := c - Block
			norm(&xf[o], &yf[o], &muf[o], &kf[o], &bf[o], rows, 1, 4*c)
		}
		return
	}
	normGo(x, y[:len(x)], c, mu, k, beta)
}

// gradDxRows writes, per channel ch < c, over the rows of dy and x
//
//	dx[r·c+ch] = a[ch]·(dy[r·c+ch] − mdy[ch]) − b[ch]·(x[r·c+ch] − m[ch])
//
// with both products rounded before the subtraction. x and dx have dy's
// length; dx must not overlap dy or x. stream is as for normRows.
func gradDxRows[T Float](dy, x, dx []T, c int, a, mdy, b, m []T, stream bool) {
	rows := rowsOf("y_backprop", dy, c)
	need("x", x, len(dy))
	need("x_backprop", dx, len(dy))
	need("factor", a, c)
	need("mean y_backprop", mdy, c)
	need("slope", b, c)
	need("mean", m, c)
	if gf, ok := asm32(dy, c); ok && rows > 0 {
		xf, df := f32(x), f32(dx)
		af, mdf, bf, mf := f32(a), f32(mdy), f32(b), f32(m)
		nb := c / Block
		if stream && streamable(df, c) {
			gradDxNT(&gf[0], &xf[0], &df[0], &af[0], &mdf[0], &bf[0], &mf[0], rows, nb, 4*c)
			return
		}
		gradDx(&gf[0], &xf[0], &df[0], &af[0], &mdf[0], &bf[0], &mf[0], rows, nb, 4*c)
		if c%Block != 0 {
			o := c - Block
			gradDx(&gf[o], &xf[o], &df[o], &af[o], &mdf[o], &bf[o], &mf[o], rows, 1, 4*c)
		}
		return
	}
	gradDxGo(dy, x[:len(dy)], dx[:len(dy)], c, a, mdy, b, m)
}

// scaleRows writes, per channel ch < c, over the rows of dy
//
//	dx[r·c+ch] = dy[r·c+ch]·k[ch].
//
// dx has dy's length and must not overlap it.
func scaleRows[T Float](dy, dx []T, c int, k []T) {
	rows := rowsOf("y_backprop", dy, c)
	need("x_backprop", dx, len(dy))
	need("factor", k, c)
	if gf, ok := asm32(dy, c); ok && rows > 0 {
		df, kf := f32(dx), f32(k)
		nb := c / Block
		scale(&gf[0], &df[0], &kf[0], rows, nb, 4*c)
		if c%Block != 0 {
			o := c - Block
			scale(&gf[o], &df[o], &kf[o], rows, 1, 4*c)
		}
		return
	}
	scaleGo(dy, dx[:len(dy)], c, k)
}

// WithGoLoops runs fn with every call of the package served by the
// generic Go loops of kernel_go.go instead of the block kernels, for
// tests that compare the two (their results are bit-identical). It must
// not run concurrently with other calls of the package.
func WithGoLoops(fn func()) {
	old := useAsm
	useAsm = false
	defer func() { useAsm = old }()
	fn()
}
