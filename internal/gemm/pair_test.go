package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// pairKernelsRun reports whether the pair-order kernels can run here (on
// AVX-512 or as Go twins), logging which.
func pairKernelsRun(t *testing.T) bool {
	t.Helper()
	switch {
	case goTwins:
		t.Log("pair-order kernels: run on their Go twins (noasm build or not amd64)")
	case cpu.Has(cpu.AVX512):
		t.Log("pair-order kernels: run (AVX-512 assembly)")
	default:
		t.Logf("pair-order kernels: NOT RUN: this CPU lacks AVX-512 (cpu.Max() = %v)", cpu.Max())
		return false
	}
	return true
}

// TestPairKernels checks the pair-order Rows kernels on single tiles:
// the 12-row kernel gives the bits of two 6-row calls, both agree with a
// float64 loop over pairPanels' layout, zero segments read zeros, and an
// offset past limit returns bad without writing C.
func TestPairKernels(t *testing.T) {
	if !pairKernelsRun(t) {
		return
	}
	rng := rand.New(rand.NewPCG(61, 62))
	for ci := range 40 {
		seglen := []int{2, 4, 6, 16, 32, 34}[ci%6]
		nseg := 1 + ci%4
		start := 0
		seg := seglen
		if ci%5 == 4 {
			start, seg = 2, seglen+4 // a block inside longer segments
		}
		const ldo = 13
		beta := []float32{0, 1, -0.5}[ci%3]
		data := make([]float32, 3*seg+7)
		for i := range data {
			data[i] = float32(rng.Float64()*2 - 1)
		}
		limit := len(data) - seg
		offs := make([]int, (nseg-1)*ldo+2*mr)
		for i := range offs {
			offs[i] = rng.IntN(limit + 1)
			if rng.IntN(6) == 0 {
				offs[i] = -1
			}
		}
		k := nseg * seglen
		bRows := make([]float32, k*16) // B row-major, k×16
		for i := range bRows {
			bRows[i] = float32(rng.Float64()*2 - 1)
		}
		b := append([]float32(nil), bRows...)
		pairPanels(b, k, 16)
		c0 := make([]float32, (2*mr-1)*20+16)
		for i := range c0 {
			c0[i] = float32(rng.Float64()*2 - 1)
		}
		const ldc, alpha = 20, float32(1.25)
		name := fmt.Sprintf("seglen=%d nseg=%d start=%d beta=%v", seglen, nseg, start, beta)

		tall := append([]float32(nil), c0...)
		if sgemmKernelRows12x16P(nseg, seglen, start, &offs[0], ldo, &data[0], &zero32[0], &b[0], &tall[0], ldc, alpha, beta, limit) {
			t.Fatalf("%s: 12-row kernel reported a bad offset", name)
		}
		two := append([]float32(nil), c0...)
		for h := range 2 {
			if sgemmKernelRows6x16P(nseg, seglen, start, &offs[h*mr], ldo, &data[0], &zero32[0], &b[0], &two[h*mr*ldc], ldc, alpha, beta, limit) {
				t.Fatalf("%s: 6-row kernel reported a bad offset", name)
			}
		}
		for i := range tall {
			if math.Float32bits(tall[i]) != math.Float32bits(two[i]) {
				t.Fatalf("%s: 12-row kernel differs from two 6-row calls at %d: %v vs %v", name, i, tall[i], two[i])
			}
		}
		for i := range 2 * mr {
			for j := range 16 {
				var sum, abs float64
				for s := range nseg {
					o := offs[s*ldo+i]
					if o < 0 {
						continue
					}
					for q := range seglen {
						x, y := float64(data[o+start+q]), float64(bRows[(s*seglen+q)*16+j])
						sum += x * y
						abs += math.Abs(x * y)
					}
				}
				want := float64(alpha) * sum
				if beta != 0 {
					want += float64(beta) * float64(c0[i*ldc+j])
				}
				got := float64(tall[i*ldc+j])
				tol := float64(k+4) * 0x1p-23 * (float64(alpha)*abs + math.Abs(float64(beta)*float64(c0[i*ldc+j])) + 1e-30)
				if math.Abs(got-want) > tol {
					t.Fatalf("%s: C[%d][%d] = %v, want %v (tolerance %.3g)", name, i, j, got, want, tol)
				}
			}
			// Columns past the tile's 16 are not written.
			if i < 2*mr-1 {
				for j := 16; j < ldc; j++ {
					if tall[i*ldc+j] != c0[i*ldc+j] {
						t.Fatalf("%s: C[%d][%d] written outside the tile", name, i, j)
					}
				}
			}
		}
		// An offset past limit: bad, C untouched.
		bad := append([]int(nil), offs...)
		bad[(nseg-1)*ldo+2*mr-1] = limit + 1
		got := append([]float32(nil), c0...)
		if !sgemmKernelRows12x16P(nseg, seglen, start, &bad[0], ldo, &data[0], &zero32[0], &b[0], &got[0], ldc, alpha, beta, limit) {
			t.Fatalf("%s: offset past limit not reported", name)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(c0[i]) {
				t.Fatalf("%s: C written at %d despite a bad offset", name, i)
			}
		}
	}
}

// TestPairRows checks that GemmRowsA takes the pair-order kernels where
// rowsKernelPair allows them (float32, at most 16 columns, even segments
// within a k block) on the AVX-512 tier: the float64 loop's value, the
// same bits on 1, 2 and 3 threads and with every blocking, and other bits
// than AVX2's order on a long k (so the kernels did run).
func TestPairRows(t *testing.T) {
	if !pairKernelsRun(t) {
		return
	}
	type shape struct{ m, n, nseg, seg int }
	shapes := []shape{{1, 16, 1, 2}, {12, 16, 9, 32}, {13, 5, 9, 16}, {700, 16, 9, 32}, {61, 11, 4, 6}, {25, 16, 2, 300}}
	if raceDetector {
		shapes = []shape{{13, 5, 9, 16}, {61, 16, 9, 32}}
	}
	rng := rand.New(rand.NewPCG(63, 64))
	withTier(cpu.AVX512, func() {
		for i, s := range shapes {
			tc, rc := rowsGemmCase(rng, "A", i%2 == 1, s.m, s.n, s.nseg*s.seg, s.nseg, s.seg, []float64{0, 1, -0.5}[i%3])
			tc.cNaN = tc.beta == 0
			for _, blocks := range []string{"default", "small", "small-wholeK"} {
				withBlocks(blocks, func() {
					r := runRows[float32](tc, rc, "A", 1)
					identical(t, tc, r, runRows[float32](tc, rc, "A", 2), runRows[float32](tc, rc, "A", 3))
				})
			}
		}
		// A long k: the pair order must show in the bits.
		tc, rc := rowsGemmCase(rng, "A", false, 240, 16, 288, 9, 32, 0)
		pair := runRows[float32](tc, rc, "A", 1)
		pairRows = false
		plain := runRows[float32](tc, rc, "A", 1)
		pairRows = true
		check(t, tc, plain)
		differ := 0
		for i := range pair {
			if math.Float32bits(pair[i]) != math.Float32bits(plain[i]) {
				differ++
			}
		}
		if differ == 0 {
			t.Fatalf("%s: the same bits with and without the pair-order kernels: were they taken?", tc)
		}
		t.Logf("%s: %d of %d elements differ in their last bits from AVX2's order", tc, differ, len(pair))
	})
}
