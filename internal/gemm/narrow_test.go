package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// TestNarrowZMMMatchesAVX2 checks that products no wider than an AVX2
// tile (16 float32, 8 float64 columns) give the same bits on the AVX-512
// tier, whose kernels of AVX2's tile shapes run on ZMM registers (the Z
// kernels, zmmNarrow), as on the AVX2 tier: dense A and B with every
// transposition, a Rows A read in place and packed, a Rows B; default and
// tiny blocking; 1 and 2 threads. Each result is also checked against the
// float64 loop.
func TestNarrowZMMMatchesAVX2(t *testing.T) {
	if !cpu.Has(cpu.AVX512) && !goTwins {
		t.Skipf("NOT RUN: this CPU lacks AVX-512 (cpu.Max() = %v)", cpu.Max())
	}
	rng := rand.New(rand.NewPCG(41, 42))
	ms := []int{1, 5, 6, 7, 12, 13, 37, 61}
	ks := []int{1, 3, 17, 70, 300}
	betas := []float64{0, 1, -0.5}
	for _, blocks := range []string{"default", "small", "small-wholeK"} {
		body := func() {
			for ci := range 48 {
				m, k := ms[ci%len(ms)], ks[ci%len(ks)]
				n := 1 + rng.IntN(16)
				transA, transB := ci%2 == 1, ci%4 >= 2
				tc := newCase(rng, transA, transB, m, n, k, ci%3, 1.5, betas[ci%3])
				tc.cNaN = tc.beta == 0
				name := fmt.Sprintf("%s %v", blocks, tc)
				compareTiers(t, name, tc, func(threads int) []float32 { return run[float32](tc, threads) })
				if n <= 8 {
					compareTiers(t, name, tc, func(threads int) []float64 { return run[float64](tc, threads) })
				}
				// Rows operands: A (read in place or packed; k in
				// segments) and B (n in segments).
				for _, which := range []string{"A", "B"} {
					seg := []int{1, 4, 16}[ci%3]
					rm, rn, nseg := m, n, 1+ci%5
					rk := nseg * seg
					if which == "B" {
						seg = []int{1, 2, 4, 8}[ci%4]
						nseg = max(1, n/seg)
						rn, rk = nseg*seg, k
					}
					rtc, rc := rowsGemmCase(rng, which, ci%2 == 1, rm, rn, rk, nseg, seg, betas[ci%3])
					rtc.cNaN = rtc.beta == 0
					for _, inPlace := range []bool{true, false} {
						old := inPlaceRows
						inPlaceRows = inPlace
						rname := fmt.Sprintf("%s rows %s inPlace=%v %v", blocks, which, inPlace, rtc)
						compareTiers(t, rname, rtc, func(threads int) []float32 { return runRows[float32](rtc, rc, which, threads) })
						if rn <= 8 {
							compareTiers(t, rname, rtc, func(threads int) []float64 { return runRows[float64](rtc, rc, which, threads) })
						}
						inPlaceRows = old
					}
				}
			}
		}
		withBlocks(blocks, body)
	}
}

// compareTiers runs run on 1 and 2 threads on the AVX2 and AVX-512 tiers
// and checks that all four results have the same bits, and the first the
// float64 loop's value. The float32 pair-order kernels (rowsKernelPair),
// which sum in another order than AVX2, are off for that comparison;
// with them, the AVX-512 tier must give the float64 loop's value and the
// same bits on 1 and 2 threads.
func compareTiers[T Float](t *testing.T, name string, tc *gemmCase, run func(threads int) []T) {
	t.Helper()
	var p1, p2 []T
	withTier(cpu.AVX512, func() { p1, p2 = run(1), run(2) })
	identical(t, tc, p1, p2)
	pairRows = false
	defer func() { pairRows = true }()
	var ref []T
	withTier(cpu.AVX2, func() { ref = run(1) })
	check(t, tc, ref)
	for _, isa := range []cpu.ISA{cpu.AVX2, cpu.AVX512} {
		for _, threads := range []int{1, 2} {
			if isa == cpu.AVX2 && threads == 1 {
				continue
			}
			var got []T
			withTier(isa, func() { got = run(threads) })
			for i := range ref {
				if math.Float64bits(float64(ref[i])) != math.Float64bits(float64(got[i])) && !(ref[i] != ref[i] && got[i] != got[i]) {
					t.Fatalf("%s: %v with %d threads differs from avx2 at %d: %v vs %v", name, isa, threads, i, got[i], ref[i])
				}
			}
		}
	}
}
