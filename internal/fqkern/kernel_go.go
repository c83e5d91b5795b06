package fqkern

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Portable Go loops with the kernels' contract (see fqkern.go; bounds
// already checked). They run for float64, and for float32 when Enabled
// is false; the assembly kernels' tests compare against them.

// fwdGo is the forward kernel. The clamp uses the builtin min and max:
// like the scalar rule they propagate a NaN x, and where they differ from
// it (the sign of a zero when x and the bound are both zeros) the
// difference v − nmin ∈ {±0} loses its sign at the + 0.5 (or becomes the
// same NaN when inv is infinite), so the outputs are identical.
func fwdGo[T tensorx.Float](y, x, tab []T, l, n, rows int) {
	nmin, nmax := tab[qNMin*l:][:n], tab[qNMax*l:][:n]
	inv, qz := tab[qInv*l:][:n], tab[qQZero*l:][:n]
	sc, keep := tab[qScale*l:][:n], tab[qKeep*l:][:n]
	for r := range rows {
		xs, ys := x[r*n:][:n], y[r*n:][:n]
		for j, v := range xs {
			v = max(min(v, nmax[j]), nmin[j])
			t := T(T(v-nmin[j]) * inv[j])
			o := T(T(math.Floor(float64(T(T(t-qz[j])+0.5)))) * sc[j])
			if keep[j] == 0 { // a zero channel (keep is a NaN otherwise)
				o = 0
			}
			ys[j] = o
		}
	}
}

// gradGo is the gradient kernel.
func gradGo[T tensorx.Float](bi, g, x, tab []T, l, n, rows int, acc []float64) {
	lo, hi, pass := tab[bLo*l:][:n], tab[bHi*l:][:n], tab[bPass*l:][:n]
	below, above := acc[:n], acc[l:][:n]
	for r := range rows {
		xs, gs, bs := x[r*n:][:n], g[r*n:][:n], bi[r*n:][:n]
		for j, v := range xs {
			gv := gs[j]
			if !(v >= lo[j] && v <= hi[j]) && pass[j] == 0 {
				bs[j] = 0
			} else {
				bs[j] = gv
			}
			if v < lo[j] {
				below[j] += float64(gv)
			} else if v > hi[j] {
				above[j] += float64(gv)
			}
		}
	}
}

// adjGo is the adjoint kernel.
func adjGo[T tensorx.Float](out, dbi, x, tab []T, l, n, rows int) {
	lo, hi, pass := tab[bLo*l:][:n], tab[bHi*l:][:n], tab[bPass*l:][:n]
	dmin, dmax := tab[bDMin*l:][:n], tab[bDMax*l:][:n]
	for r := range rows {
		xs, ds, os := x[r*n:][:n], dbi[r*n:][:n], out[r*n:][:n]
		for j, v := range xs {
			switch {
			case v >= lo[j] && v <= hi[j], pass[j] != 0:
				os[j] = ds[j]
			case v < lo[j]:
				os[j] = dmin[j]
			case v > hi[j]:
				os[j] = dmax[j]
			default:
				os[j] = 0
			}
		}
	}
}
