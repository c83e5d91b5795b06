//go:build amd64 && !noasm && !gccgo && !safe

package bnkern

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"math"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// TestGeneratedMatchesHandWritten runs the hand-written AVX2 kernels and
// the generated AVX2 and AVX-512 ones on a grid of rows, channel blocks,
// row strides (padding) and unaligned starts, and compares every output
// bit for bit (the whole buffers, so writes outside the contract count),
// logging a hash of each implementation's outputs.
func TestGeneratedMatchesHandWritten(t *testing.T) {
	type impl struct {
		name         string
		stats, gsums func(a, b, c *float32, p1, p2 *float64, n4, nb, s int)
		norm, normNT func(x, y, mu, k, beta *float32, rows, nb, stride int)
		dx, dxNT     func(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)
		scale        func(dy, dx, k *float32, rows, nb, stride int)
		h            hash.Hash
		out32        [][]float32
		out64        [][]float64
	}
	statsOld := func(a, _, c *float32, p1, p2 *float64, n4, nb, s int) { old_stats(a, c, p1, p2, n4, nb, s) }
	statsA2 := func(a, _, c *float32, p1, p2 *float64, n4, nb, s int) { statsAVX2(a, c, p1, p2, n4, nb, s) }
	statsA5 := func(a, _, c *float32, p1, p2 *float64, n4, nb, s int) { statsAVX512(a, c, p1, p2, n4, nb, s) }
	impls := []*impl{
		{name: "hand-written", stats: statsOld, gsums: old_gradSums, norm: old_norm, normNT: old_normNT, dx: old_gradDx, dxNT: old_gradDxNT, scale: old_scale},
		{name: "avx2", stats: statsA2, gsums: gradSumsAVX2, norm: normAVX2, normNT: normNTAVX2, dx: gradDxAVX2, dxNT: gradDxNTAVX2, scale: scaleAVX2},
	}
	if cpu.Has(cpu.AVX512) {
		impls = append(impls, &impl{name: "avx512", stats: statsA5, gsums: gradSumsAVX512, norm: normAVX512, normNT: normNTAVX2, dx: gradDxAVX512, dxNT: gradDxNTAVX2, scale: scaleAVX512})
	} else {
		t.Log("avx512: NOT RUN: this CPU lacks it")
	}
	if !cpu.Has(cpu.AVX2) {
		t.Log("NOT RUN: this CPU lacks AVX2")
		return
	}
	for _, im := range impls {
		im.h = sha256.New()
	}
	r := rand.New(rand.NewSource(5))
	calls := 0
	for _, rows := range []int{4, 8, 12, 20} {
		for _, nb := range []int{1, 2, 3, 4, 5, 8, 9} {
			for _, pad := range []int{0, 3, 8, 16} {
				for _, skew := range []int{0, 1, 8} {
					c := nb*8 + pad
					n := rows*c + skew + 16
					in := func() []float32 {
						v := make([]float32, n)
						for i := range v {
							v[i] = float32(1 + 2*r.NormFloat64())
						}
						return v
					}
					x, dy, k, m, a, b := in(), in(), in(), in(), in(), in()
					p0 := make([]float64, c+16)
					for i := range p0 {
						p0[i] = r.NormFloat64()
					}
					for _, im := range impls {
						o1, o2 := make([]float32, n), make([]float32, n)
						if skew == 0 && pad%8 == 0 {
							// The streaming kernels need 32-byte aligned rows.
							o1 = alignedBuf(n)
							o2 = alignedBuf(n)
						}
						q1, q2 := append([]float64(nil), p0...), append([]float64(nil), p0...)
						q3, q4 := append([]float64(nil), p0...), append([]float64(nil), p0...)
						s := skew
						im.stats(&x[s], nil, &k[s], &q1[1], &q2[1], rows/4, nb, 4*c)
						im.gsums(&dy[s], &x[s], &m[s], &q3[1], &q4[1], rows/4, nb, 4*c)
						im.norm(&x[s], &o1[s], &m[s], &k[s], &b[s], rows, nb, 4*c)
						im.dx(&dy[s], &x[s], &o2[s], &a[s], &m[s], &b[s], &k[s], rows, nb, 4*c)
						outs := [][]float32{o1, o2}
						if skew == 0 && pad%8 == 0 {
							o3, o4 := alignedBuf(n), alignedBuf(n)
							im.normNT(&x[0], &o3[0], &m[0], &k[0], &b[0], rows, nb, 4*c)
							im.dxNT(&dy[0], &x[0], &o4[0], &a[0], &m[0], &b[0], &k[0], rows, nb, 4*c)
							outs = append(outs, o3, o4)
						}
						o5 := make([]float32, n)
						im.scale(&dy[s], &o5[s], &k[s], rows, nb, 4*c)
						outs = append(outs, o5)
						im.out32, im.out64 = outs, [][]float64{q1, q2, q3, q4}
						for _, o := range outs {
							for _, v := range o {
								fmt.Fprint(im.h, math.Float32bits(v))
							}
						}
						for _, o := range im.out64 {
							for _, v := range o {
								fmt.Fprint(im.h, math.Float64bits(v))
							}
						}
					}
					calls++
					ref := impls[0]
					for _, im := range impls[1:] {
						for j := range ref.out32 {
							for i := range ref.out32[j] {
								if math.Float32bits(ref.out32[j][i]) != math.Float32bits(im.out32[j][i]) {
									t.Fatalf("rows %d nb %d pad %d skew %d: %s output %d element %d = %v, hand-written %v", rows, nb, pad, skew, im.name, j, i, im.out32[j][i], ref.out32[j][i])
								}
							}
						}
						for j := range ref.out64 {
							for i := range ref.out64[j] {
								if math.Float64bits(ref.out64[j][i]) != math.Float64bits(im.out64[j][i]) {
									t.Fatalf("rows %d nb %d pad %d skew %d: %s sums %d element %d = %v, hand-written %v", rows, nb, pad, skew, im.name, j, i, im.out64[j][i], ref.out64[j][i])
								}
							}
						}
					}
				}
			}
		}
	}
	for _, im := range impls {
		t.Logf("%s: %d grid points, sha256 of all outputs %x", im.name, calls, im.h.Sum(nil)[:8])
	}
}

// alignedBuf returns n float32 starting at a 64-byte boundary.
func alignedBuf(n int) []float32 {
	b := make([]float32, n+16)
	o := 0
	for uintptr(unsafe.Pointer(&b[o]))%64 != 0 {
		o++
	}
	return b[o : o+n]
}
