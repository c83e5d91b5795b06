package fqkern

import (
	"math"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Portable Go loops with the kernels' contract (see fqkern.go; bounds
// already checked). They run where useAsm is false (no AVX2, other
// architectures, the noasm build tag) and are the bodies of the assembly
// routines' Go twins (kernel_noasm.go); the assembly kernels' tests
// compare against them bit for bit.
//
// Scalar Go cannot be both branch-free and as fast as a branchy loop on
// the data fake quantisation usually sees (nearly every input inside its
// range): a comparison turned into a mask costs a SETcc and two more
// instructions, where a well-predicted branch costs one. So every kernel
// runs each row (one table period) in one of two loops:
//
//   - a fast loop that branches on lo ≤ x ≤ hi (the nudged range),
//     taking the in-range element the short way (no clamp; a copy of the
//     gradient) and the others (NaN included) through the branch-free
//     rules;
//   - a branch-free loop: the clamp is the builtin min and max, the
//     selections are masks.
//
// A row that sent more than 1/2^slowShift of its elements down the fast
// loop's slow path makes the next row run branch-free, and a branch-free
// row with no more than that makes the next one fast again: mostly
// in-range data runs at the speed of a predicted branch, data with many
// outliers without the mispredictions. Both loops compute the same bits
// and add to the same sums in the same order (the fast gradient loop
// skips the +0 terms of in-range elements, which leaves a sum unchanged
// unless it is −0, and sums that start at +0 never become −0), so which
// one runs is a matter of speed only. With one channel (d = 1: Args,
// Vars) the fast forward and adjoint loops take the channel's parameters
// as scalars (fwdFastUni, adjFastUni) instead of table rows; for the
// gradient that measured no faster.
//
// Floor is math.Floor (ROUNDSD, FRINTM). The forward's one other
// data-dependent case, the NaN input of a min == max == 0 channel, is
// fixed up after the row by masking with the keep row, only when the
// table has such channels. Masks are all ones or zeros (mask, from a
// SETcc), applied to the bits of the element type (bitsOf, fromBits); the
// min/max sums take the bits of the value widened to float64, which is
// exact for float32.

// slowShift sets the switch between a kernel's two row loops: a row
// whose slow-path elements exceed n>>slowShift runs the next row
// branch-free.
const slowShift = 3

// b2u returns 1 if c, else 0 (a SETcc).
func b2u(c bool) uint8 {
	var m uint8
	if c {
		m = 1
	}
	return m
}

// mask returns all ones if m is 1, 0 if m is 0.
func mask(m uint8) uint64 { return -uint64(m) }

// bitsOf returns the bits of v (of a float32 in the low 32 bits).
func bitsOf[T tensorx.Float](v T) uint64 {
	if unsafe.Sizeof(v) == 4 {
		return uint64(math.Float32bits(float32(v)))
	}
	return math.Float64bits(float64(v))
}

// fromBits returns the T whose bits are b (the low 32 for float32).
func fromBits[T tensorx.Float](b uint64) T {
	if unsafe.Sizeof(T(0)) == 4 {
		return T(math.Float32frombits(uint32(b)))
	}
	return T(math.Float64frombits(b))
}

// wide returns the bits of v widened to float64.
func wide[T tensorx.Float](v T) uint64 { return math.Float64bits(float64(v)) }

// fwdGo is the forward kernel, dividing by the scale if div; zeros says
// whether the table has min == max == 0 channels, uni whether it has one
// channel. Each row runs fwdFast (fwdFastUni) or fwdFree, then, with
// zeros, has its zero channels' NaN outputs masked to +0 by the keep row
// (all ones, or 0 in those channels): a zero channel's grid is all zeros,
// which gives +0 for every other input.
func fwdGo[T tensorx.Float](y, x, tab []T, l, n, rows int, div, zeros, uni bool) {
	nmin, nmax := tab[qNMin*l:][:n], tab[qNMax*l:][:n]
	inv, qz := tab[qInv*l:][:n], tab[qQZero*l:][:n]
	sc, keep := tab[qScale*l:][:n], tab[qKeep*l:][:n]
	slow := 0
	for r := range rows {
		xs, ys := x[r*n:][:n], y[r*n:][:n]
		switch {
		case slow > n>>slowShift:
			slow = fwdFree(ys, xs, nmin, nmax, inv, qz, sc, div)
		case uni:
			slow = fwdFastUni(ys, xs, nmin[0], nmax[0], inv[0], qz[0], sc[0], div)
		default:
			slow = fwdFast(ys, xs, nmin, nmax, inv, qz, sc, div)
		}
		if zeros {
			for j, v := range ys {
				ys[j] = fromBits[T](bitsOf(v) & bitsOf(keep[j]))
			}
		}
	}
}

// fwdFast is a forward row that clamps only the x outside [nmin, nmax]
// (and NaNs), with fwdFree's min and max; it returns their count.
func fwdFast[T tensorx.Float](ys, xs, nmin, nmax, inv, qz, sc []T, div bool) int {
	n := len(xs) // one length for the compiler to drop the bounds checks
	ys, nmin, nmax, inv, qz, sc = ys[:n], nmin[:n], nmax[:n], inv[:n], qz[:n], sc[:n]
	slow := 0
	if div {
		for j, v := range xs {
			if !(v >= nmin[j] && v <= nmax[j]) {
				slow++
				v = max(min(v, nmax[j]), nmin[j])
			}
			ys[j] = T(T(math.Floor(float64(T(T(T(v-nmin[j])/sc[j])-qz[j])+0.5))) * sc[j])
		}
		return slow
	}
	for j, v := range xs {
		if !(v >= nmin[j] && v <= nmax[j]) {
			slow++
			v = max(min(v, nmax[j]), nmin[j])
		}
		ys[j] = T(T(math.Floor(float64(T(T(T(v-nmin[j])*inv[j])-qz[j])+0.5))) * sc[j])
	}
	return slow
}

// fwdFastUni is fwdFast for a table whose positions all hold one
// channel's grid (d = 1), given as scalars.
func fwdFastUni[T tensorx.Float](ys, xs []T, nmin, nmax, inv, qz, sc T, div bool) int {
	ys = ys[:len(xs)]
	slow := 0
	if div {
		for j, v := range xs {
			if !(v >= nmin && v <= nmax) {
				slow++
				v = max(min(v, nmax), nmin)
			}
			ys[j] = T(T(math.Floor(float64(T(T(T(v-nmin)/sc)-qz)+0.5))) * sc)
		}
		return slow
	}
	for j, v := range xs {
		if !(v >= nmin && v <= nmax) {
			slow++
			v = max(min(v, nmax), nmin)
		}
		ys[j] = T(T(math.Floor(float64(T(T(T(v-nmin)*inv)-qz)+0.5))) * sc)
	}
	return slow
}

// fwdFree is a branch-free forward row: y = floor(((min(x, nmax) max
// nmin) − nmin)·inv − qzero + 0.5)·scale (/scale for ·inv if div), every
// operation rounded to T. It returns the number of x the clamp changed
// (or NaN), which fwdFast would have clamped. The clamp is the builtin
// min and max: like the scalar rule they propagate a NaN x, and where
// they differ from it (the sign of a zero when x and the bound are both
// zeros) the difference v − nmin ∈ {±0} (then ±0·inv or ±0/scale) loses
// its sign at the + 0.5 (or becomes a NaN either way when inv is
// infinite or the scale is zero), so the outputs are identical.
func fwdFree[T tensorx.Float](ys, xs, nmin, nmax, inv, qz, sc []T, div bool) int {
	n := len(xs)
	ys, nmin, nmax, inv, qz, sc = ys[:n], nmin[:n], nmax[:n], inv[:n], qz[:n], sc[:n]
	slow := 0
	if div {
		for j, x := range xs {
			v := max(min(x, nmax[j]), nmin[j])
			slow += int(b2u(v != x))
			ys[j] = T(T(math.Floor(float64(T(T(T(v-nmin[j])/sc[j])-qz[j])+0.5))) * sc[j])
		}
		return slow
	}
	for j, x := range xs {
		v := max(min(x, nmax[j]), nmin[j])
		slow += int(b2u(v != x))
		ys[j] = T(T(math.Floor(float64(T(T(T(v-nmin[j])*inv[j])-qz[j])+0.5))) * sc[j])
	}
	return slow
}

// gradGo is the gradient kernel, each row by gradFast or gradFree.
func gradGo[T tensorx.Float](bi, g, x, tab []T, l, n, rows int, acc []float64) {
	lo, hi, pass := tab[bLo*l:][:n], tab[bHi*l:][:n], tab[bPass*l:][:n]
	below, above := acc[:n], acc[l:][:n]
	slow := 0
	for r := range rows {
		xs, gs, bs := x[r*n:][:n], g[r*n:][:n], bi[r*n:][:n]
		if slow > n>>slowShift {
			slow = gradFree(bs, gs, xs, lo, hi, pass, below, above)
		} else {
			slow = gradFast(bs, gs, xs, lo, hi, pass, below, above)
		}
	}
}

// gradFast is a gradient row that copies g where lo ≤ x ≤ hi and takes
// the other elements through gradFree's rules; it returns their count.
func gradFast[T tensorx.Float](bs, gs, xs, lo, hi, pass []T, below, above []float64) int {
	n := len(xs) // one length for the compiler to drop the bounds checks
	bs, gs, lo, hi, pass, below, above = bs[:n], gs[:n], lo[:n], hi[:n], pass[:n], below[:n], above[:n]
	slow := 0
	for j, v := range xs {
		if v >= lo[j] && v <= hi[j] {
			bs[j] = gs[j]
			continue
		}
		slow++
		gv := gs[j]
		lt := b2u(v < lo[j])
		ma := mask(b2u(v > hi[j]) &^ lt)
		gb := wide(gv)
		bs[j] = fromBits[T](bitsOf(gv) & bitsOf(pass[j]))
		below[j] += math.Float64frombits(gb & mask(lt))
		above[j] += math.Float64frombits(gb & ma)
	}
	return slow
}

// gradFree is a branch-free gradient row: with in = (x ≥ lo)·(x ≤ hi) |
// pass, below = x < lo and above = x > hi &^ below as masks, bi = g & in
// and the sums add g & below and g & above (+0 where the mask is 0). It
// returns the number of elements gradFast would not have copied.
func gradFree[T tensorx.Float](bs, gs, xs, lo, hi, pass []T, below, above []float64) int {
	n := len(xs)
	bs, gs, lo, hi, pass, below, above = bs[:n], gs[:n], lo[:n], hi[:n], pass[:n], below[:n], above[:n]
	slow := 0
	for j, v := range xs {
		gv := gs[j]
		lt, gt := b2u(v < lo[j]), b2u(v > hi[j])
		ok := b2u(v >= lo[j]) & b2u(v <= hi[j])
		slow += int(ok ^ 1)
		gb := wide(gv)
		bs[j] = fromBits[T](bitsOf(gv) & (mask(ok) | bitsOf(pass[j])))
		below[j] += math.Float64frombits(gb & mask(lt))
		above[j] += math.Float64frombits(gb & mask(gt&^lt))
	}
	return slow
}

// adjGo is the adjoint kernel, each row by adjFast (adjFastUni if uni:
// one channel) or adjFree.
func adjGo[T tensorx.Float](out, dbi, x, tab []T, l, n, rows int, uni bool) {
	lo, hi, pass := tab[bLo*l:][:n], tab[bHi*l:][:n], tab[bPass*l:][:n]
	dmin, dmax := tab[bDMin*l:][:n], tab[bDMax*l:][:n]
	slow := 0
	for r := range rows {
		xs, ds, os := x[r*n:][:n], dbi[r*n:][:n], out[r*n:][:n]
		switch {
		case slow > n>>slowShift:
			slow = adjFree(os, ds, xs, lo, hi, pass, dmin, dmax)
		case uni:
			slow = adjFastUni(os, ds, xs, lo[0], hi[0], pass[0], dmin[0], dmax[0])
		default:
			slow = adjFast(os, ds, xs, lo, hi, pass, dmin, dmax)
		}
	}
}

// adjFast is an adjoint row that copies dbi where lo ≤ x ≤ hi and takes
// the other elements through adjFree's rules; it returns their count.
func adjFast[T tensorx.Float](os, ds, xs, lo, hi, pass, dmin, dmax []T) int {
	n := len(xs)
	os, ds, lo, hi, pass, dmin, dmax = os[:n], ds[:n], lo[:n], hi[:n], pass[:n], dmin[:n], dmax[:n]
	slow := 0
	for j, v := range xs {
		if v >= lo[j] && v <= hi[j] {
			os[j] = ds[j]
			continue
		}
		slow++
		lt := b2u(v < lo[j])
		ma := mask(b2u(v > hi[j]) &^ lt)
		os[j] = fromBits[T](bitsOf(ds[j])&bitsOf(pass[j]) | bitsOf(dmin[j])&mask(lt) | bitsOf(dmax[j])&ma)
	}
	return slow
}

// adjFastUni is adjFast for a table whose positions all hold one
// channel's range and d_min, d_max (d = 1), given as scalars.
func adjFastUni[T tensorx.Float](os, ds, xs []T, lo, hi, pass, dmin, dmax T) int {
	n := len(xs)
	os, ds = os[:n], ds[:n]
	bp, bmin, bmax := bitsOf(pass), bitsOf(dmin), bitsOf(dmax)
	slow := 0
	for j, v := range xs {
		if v >= lo && v <= hi {
			os[j] = ds[j]
			continue
		}
		slow++
		lt := b2u(v < lo)
		ma := mask(b2u(v > hi) &^ lt)
		os[j] = fromBits[T](bitsOf(ds[j])&bp | bmin&mask(lt) | bmax&ma)
	}
	return slow
}

// adjFree is a branch-free adjoint row: out = (dbi & in) | (dmin & below)
// | (dmax & above), the masks as in gradFree: disjoint (in needs lo ≤ x ≤
// hi, or a zero channel, whose range is [−Inf, +Inf]; a reversed range's
// x both below and above counts as below), all 0 for a NaN x outside a
// zero channel. It returns the number of elements adjFast would not have
// copied.
func adjFree[T tensorx.Float](os, ds, xs, lo, hi, pass, dmin, dmax []T) int {
	n := len(xs)
	os, ds, lo, hi, pass, dmin, dmax = os[:n], ds[:n], lo[:n], hi[:n], pass[:n], dmin[:n], dmax[:n]
	slow := 0
	for j, v := range xs {
		lt, gt := b2u(v < lo[j]), b2u(v > hi[j])
		ok := b2u(v >= lo[j]) & b2u(v <= hi[j])
		slow += int(ok ^ 1)
		in := mask(ok) | bitsOf(pass[j])
		os[j] = fromBits[T](bitsOf(ds[j])&in | bitsOf(dmin[j])&mask(lt) | bitsOf(dmax[j])&mask(gt&^lt))
	}
	return slow
}
