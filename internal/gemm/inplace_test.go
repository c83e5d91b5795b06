package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// TestBothInPlaceMatchesPacked checks that the AVX-512 kernels reading a
// stored Aᵀ and a Rows B of one-vector or 2n-vector segments in place (a filter
// gradient's GEMM) give the bits of the path that gathers B into packed
// panels, and the float64 loop's values: m a multiple of the tile's rows,
// segments with negative (zero) offsets, k across several k blocks
// (default and tiny blocking), every beta kind.
func TestBothInPlaceMatchesPacked(t *testing.T) {
	if !cpu.Has(cpu.AVX512) && !goTwins {
		t.Skipf("NOT RUN: this CPU lacks AVX-512 (cpu.Max() = %v)", cpu.Max())
	}
	rng := rand.New(rand.NewPCG(51, 52))
	betas := []float64{0, 1, -0.5}
	withTier(cpu.AVX512, func() {
		for _, blocks := range []string{"default", "small"} {
			body := func() {
				for ci, s := range []struct{ m, nseg, k, vecs int }{{16, 1, 1, 1}, {16, 9, 300, 1}, {32, 9, 4096, 1}, {48, 3, 77, 1}, {32, 2, 513, 1}, {24, 4, 100, 1}, {8, 5, 33, 1},
					{8, 1, 1, 2}, {8, 9, 300, 2}, {64, 9, 1000, 2}, {24, 3, 77, 2}, {16, 3, 300, 4}, {64, 9, 700, 4}, {8, 2, 65, 6}} {
					for _, f64 := range []bool{false, true} {
						seg := 16 * s.vecs
						if f64 {
							seg = 8 * s.vecs
						}
						tc, rc := rowsGemmCase(rng, "B", true, s.m, s.nseg*seg, s.k, s.nseg, seg, betas[ci%3])
						tc.cNaN = tc.beta == 0
						name := fmt.Sprintf("%s f64=%v %v", blocks, f64, tc)
						both := func(on bool) func() any {
							return func() any {
								old := inPlaceBoth
								inPlaceBoth = on
								defer func() { inPlaceBoth = old }()
								if f64 {
									return runRows[float64](tc, rc, "B", 1)
								}
								return runRows[float32](tc, rc, "B", 1)
							}
						}
						got, ref := both(true)(), both(false)()
						switch g := got.(type) {
						case []float32:
							check(t, tc, g)
							sameAs(t, name, g, ref.([]float32))
						case []float64:
							check(t, tc, g)
							sameAs(t, name, g, ref.([]float64))
						}
					}
				}
			}
			if blocks == "small" {
				withBlocking(false, body)
			} else {
				body()
			}
		}
	})
}

func sameAs[T Float](t *testing.T, name string, got, ref []T) {
	t.Helper()
	for i := range ref {
		if math.Float64bits(float64(ref[i])) != math.Float64bits(float64(got[i])) && !(ref[i] != ref[i] && got[i] != got[i]) {
			t.Fatalf("%s: in place differs from packed at %d: %v vs %v", name, i, got[i], ref[i])
		}
	}
}
