package fqkern

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Portable Go loops with the kernels' contract (see fqkern.go; bounds
// already checked). They run for float64, and for float32 when Enabled
// is false; the assembly kernels' tests compare against them.
//
// Like the assembly they have no data-dependent branches: the clamp is
// the builtin min and max, floor is math.Floor (ROUNDSD on amd64), a
// comparison becomes a mask of all ones or zeros (mask), and a selection
// is an AND of the value's bits with its mask (pick), OR-ed across
// disjoint masks. The bits are those of the value widened to float64,
// which is exact for float32 (NaN payloads aside, which are not part of
// the contract) and free for float64.

// mask returns all ones if c, else 0 (the compiler makes this a SETcc).
func mask(c bool) uint64 {
	var m uint64
	if c {
		m = 1
	}
	return -m
}

// bits returns the bits of v widened to float64.
func bits[T tensorx.Float](v T) uint64 { return math.Float64bits(float64(v)) }

// pick returns the float64 whose bits are b&m: the value of bits b where
// m is all ones, +0 where it is 0.
func pick(b, m uint64) float64 { return math.Float64frombits(b & m) }

// fwdGo is the forward kernel, dividing by the scale if div. The clamp
// uses the builtin min and max: like the scalar rule they propagate a NaN
// x, and where they differ from it (the sign of a zero when x and the
// bound are both zeros) the difference v − nmin ∈ {±0} (then ±0·inv or
// ±0/scale) loses its sign at the + 0.5 (or becomes a NaN either way when
// inv is infinite or the scale is zero), so the outputs are identical.
// Each row takes two passes, the second (floor, ·scale, keep) over the
// first's results in y: math.Floor's fallback call for CPUs without
// SSE4.1 would otherwise make the one loop keep its many table pointers
// on the stack.
func fwdGo[T tensorx.Float](y, x, tab []T, l, n, rows int, div bool) {
	nmin, nmax := tab[qNMin*l:][:n], tab[qNMax*l:][:n]
	inv, qz := tab[qInv*l:][:n], tab[qQZero*l:][:n]
	sc, keep := tab[qScale*l:][:n], tab[qKeep*l:][:n]
	for r := range rows {
		xs, ys := x[r*n:][:n], y[r*n:][:n]
		if div {
			for j, v := range xs {
				v = max(min(v, nmax[j]), nmin[j])
				ys[j] = T(T(T(v-nmin[j])/sc[j])-qz[j]) + 0.5
			}
		} else {
			for j, v := range xs {
				v = max(min(v, nmax[j]), nmin[j])
				ys[j] = T(T(T(v-nmin[j])*inv[j])-qz[j]) + 0.5
			}
		}
		// floor(·)·scale, +0 where keep is 0 (a zero channel; keep is a
		// NaN otherwise).
		for j, v := range ys {
			o := T(T(math.Floor(float64(v))) * sc[j])
			ys[j] = T(pick(bits(o), mask(keep[j] != 0)))
		}
	}
}

// gradGo is the gradient kernel: with in = (x ≥ lo)·(x ≤ hi) | pass,
// below = x < lo and above = x > hi &^ below as masks, bi = g & in and
// the sums add g & below and g & above (+0 where the mask is 0, which
// leaves a sum that starts at +0 unchanged: it is never −0).
func gradGo[T tensorx.Float](bi, g, x, tab []T, l, n, rows int, acc []float64) {
	lo, hi, pass := tab[bLo*l:][:n], tab[bHi*l:][:n], tab[bPass*l:][:n]
	below, above := acc[:n], acc[l:][:n]
	for r := range rows {
		xs, gs, bs := x[r*n:][:n], g[r*n:][:n], bi[r*n:][:n]
		for j, v := range xs {
			gb := bits(gs[j])
			in := mask(v >= lo[j])&mask(v <= hi[j]) | mask(pass[j] != 0)
			mb := mask(v < lo[j])
			ma := mask(v > hi[j]) &^ mb
			bs[j] = T(pick(gb, in))
			below[j] += pick(gb, mb)
			above[j] += pick(gb, ma)
		}
	}
}

// adjGo is the adjoint kernel: out = (dbi & in) | (dmin & below) |
// (dmax & above), the masks as in gradGo: disjoint (in needs lo ≤ x ≤ hi,
// or a zero channel whose range is [−Inf, +Inf]; a reversed range's x both
// below and above counts as below), all 0 for a NaN x outside a zero
// channel.
func adjGo[T tensorx.Float](out, dbi, x, tab []T, l, n, rows int) {
	lo, hi, pass := tab[bLo*l:][:n], tab[bHi*l:][:n], tab[bPass*l:][:n]
	dmin, dmax := tab[bDMin*l:][:n], tab[bDMax*l:][:n]
	for r := range rows {
		xs, ds, os := x[r*n:][:n], dbi[r*n:][:n], out[r*n:][:n]
		for j, v := range xs {
			in := mask(v >= lo[j])&mask(v <= hi[j]) | mask(pass[j] != 0)
			mb := mask(v < lo[j])
			ma := mask(v > hi[j]) &^ mb
			os[j] = T(math.Float64frombits(bits(ds[j])&in | bits(dmin[j])&mb | bits(dmax[j])&ma))
		}
	}
}
