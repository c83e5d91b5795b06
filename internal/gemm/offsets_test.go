package gemm

import (
	"math/rand/v2"
	"testing"
)

// TestAddOffsets checks AddOffsets on every tier against the definition,
// for lengths around the vector widths, negative offsets and bases, and
// that nothing past len(src) is written.
func TestAddOffsets(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			for n := 0; n <= 41; n++ {
				src := make([]int, n)
				for i := range src {
					src[i] = rng.IntN(1<<20) - 1<<19
				}
				src = append(src, -1<<62) // a template entry in the padding
				v := rng.IntN(1<<30) - 1<<29
				dst := make([]int, len(src)+3)
				for i := range dst {
					dst[i] = 12345
				}
				AddOffsets(dst, src, v)
				for i := range dst {
					want := 12345
					if i < len(src) {
						want = src[i] + v
					}
					if dst[i] != want {
						t.Fatalf("%s n=%d: dst[%d] = %d, want %d", p.name, len(src), i, dst[i], want)
					}
				}
			}
		})
	}
}
