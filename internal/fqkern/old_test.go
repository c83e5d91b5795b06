//go:build amd64 && !noasm && !gccgo && !safe

package fqkern

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// TestGeneratedMatchesHandWritten runs the hand-written AVX2 kernels and
// the generated AVX2 and AVX-512 ones on a grid of table periods l, row
// lengths n ≤ l (tails of every length), row counts and unaligned starts,
// with random tables (special values included), and compares every output
// and sum bit for bit over whole buffers, logging a hash per
// implementation.
func TestGeneratedMatchesHandWritten(t *testing.T) {
	if !cpu.Has(cpu.AVX2) {
		t.Log("NOT RUN: this CPU lacks AVX2")
		return
	}
	names := []string{"hand-written", "avx2", "avx512"}
	if !cpu.Has(cpu.AVX512) {
		names = names[:2]
		t.Log("avx512: NOT RUN: this CPU lacks it")
	}
	hs := make([]hash.Hash, len(names))
	for i := range hs {
		hs[i] = sha256.New()
	}
	r := rand.New(rand.NewSource(9))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
	val := func() float64 {
		if r.Intn(10) == 0 {
			return special[r.Intn(len(special))]
		}
		return 3 * r.NormFloat64()
	}
	mask := func() float64 {
		if r.Intn(2) == 0 {
			return math.Float64frombits(^uint64(0))
		}
		return 0
	}
	points := 0
	for _, l := range []int{1, 7, 8, 16, 24, 40, 72} {
		for _, n := range []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 40, 72} {
			if n > l {
				continue
			}
			for _, rows := range []int{1, 3} {
				for _, skew := range []int{0, 1} {
					points++
					tab := make([]float64, 8*l+8)
					for i := range tab {
						tab[i] = val()
						if i/l == qKeep || i/l == bPass {
							tab[i] = mask()
						}
					}
					x, g := make([]float64, rows*n+skew+8), make([]float64, rows*n+skew+8)
					for i := range x {
						x[i], g[i] = val(), val()
					}
					var ref [][]uint64
					for k := range names {
						got := runKernels32(k, tab, x, g, l, n, rows, skew)
						got = append(got, runKernels64(k, tab, x, g, l, n, rows, skew)...)
						for _, o := range got {
							for _, v := range o {
								fmt.Fprint(hs[k], v)
							}
						}
						if k == 0 {
							ref = got
							continue
						}
						for j := range ref {
							for i := range ref[j] {
								if ref[j][i] != got[j][i] {
									t.Fatalf("l %d n %d rows %d skew %d: %s output %d element %d = %x, hand-written %x", l, n, rows, skew, names[k], j, i, got[j][i], ref[j][i])
								}
							}
						}
					}
				}
			}
		}
	}
	for k, name := range names {
		t.Logf("%s: %d grid points, sha256 of all outputs %x", name, points, hs[k].Sum(nil)[:8])
	}
}

func runKernels32(impl int, tab64, x64, g64 []float64, l, n, rows, skew int) [][]uint64 {
	c := func(s []float64) []float32 {
		o := make([]float32, len(s))
		for i, v := range s {
			o[i] = float32(v)
		}
		return o
	}
	tab, x, g := c(tab64), c(x64), c(g64)
	y1, y2, bi, out := make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x)), make([]float32, len(x))
	acc := make([]float64, 2*l+8)
	s := skew
	switch impl {
	case 0:
		old_fwd32(&y1[s], &x[s], &tab[0], l, n, rows)
		old_fwdDiv32(&y2[s], &x[s], &tab[0], l, n, rows)
		old_grad32(&bi[s], &g[s], &x[s], &tab[0], l, n, rows, &acc[0])
		old_adj32(&out[s], &g[s], &x[s], &tab[0], l, n, rows)
	case 1:
		fwd32AVX2(&y1[s], &x[s], &tab[0], l, n, rows)
		fwdDiv32AVX2(&y2[s], &x[s], &tab[0], l, n, rows)
		grad32AVX2(&bi[s], &g[s], &x[s], &tab[0], l, n, rows, &acc[0])
		adj32AVX2(&out[s], &g[s], &x[s], &tab[0], l, n, rows)
	case 2:
		fwd32AVX512(&y1[s], &x[s], &tab[0], l, n, rows)
		fwdDiv32AVX512(&y2[s], &x[s], &tab[0], l, n, rows)
		grad32AVX512(&bi[s], &g[s], &x[s], &tab[0], l, n, rows, &acc[0])
		adj32AVX512(&out[s], &g[s], &x[s], &tab[0], l, n, rows)
	}
	var res [][]uint64
	for _, o := range [][]float32{y1, y2, bi, out} {
		b := make([]uint64, len(o))
		for i, v := range o {
			b[i] = uint64(math.Float32bits(v))
		}
		res = append(res, b)
	}
	b := make([]uint64, len(acc))
	for i, v := range acc {
		b[i] = math.Float64bits(v)
	}
	return append(res, b)
}

func runKernels64(impl int, tab, x, g []float64, l, n, rows, skew int) [][]uint64 {
	y1, y2, bi, out := make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x)), make([]float64, len(x))
	acc := make([]float64, 2*l+8)
	s := skew
	switch impl {
	case 0:
		old_fwd64(&y1[s], &x[s], &tab[0], l, n, rows)
		old_fwdDiv64(&y2[s], &x[s], &tab[0], l, n, rows)
		old_grad64(&bi[s], &g[s], &x[s], &tab[0], l, n, rows, &acc[0])
		old_adj64(&out[s], &g[s], &x[s], &tab[0], l, n, rows)
	case 1:
		fwd64AVX2(&y1[s], &x[s], &tab[0], l, n, rows)
		fwdDiv64AVX2(&y2[s], &x[s], &tab[0], l, n, rows)
		grad64AVX2(&bi[s], &g[s], &x[s], &tab[0], l, n, rows, &acc[0])
		adj64AVX2(&out[s], &g[s], &x[s], &tab[0], l, n, rows)
	case 2:
		fwd64AVX512(&y1[s], &x[s], &tab[0], l, n, rows)
		fwdDiv64AVX512(&y2[s], &x[s], &tab[0], l, n, rows)
		grad64AVX512(&bi[s], &g[s], &x[s], &tab[0], l, n, rows, &acc[0])
		adj64AVX512(&out[s], &g[s], &x[s], &tab[0], l, n, rows)
	}
	var res [][]uint64
	for _, o := range [][]float64{y1, y2, bi, out, acc} {
		b := make([]uint64, len(o))
		for i, v := range o {
			b[i] = math.Float64bits(v)
		}
		res = append(res, b)
	}
	return res
}
