package bnkern

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// Kernel throughput on cache-resident rows (W7's 64 channels, 64 KiB per
// operand): the compute bound of the kernels, apart from memory traffic.
// SetBytes counts the bytes each call reads and writes.

func BenchmarkKernels(b *testing.B) {
	const c, rows = 64, 256
	r := rand.New(rand.NewSource(1))
	rnd := func(n int) []float32 { return testutil.Convert[float32](testutil.Normal(r, n)) }
	x, dy, y, k := rnd(rows*c), rnd(rows*c), rnd(rows*c), rnd(c)
	p1, p2 := make([]float64, c), make([]float64, c)
	n := int64(4 * rows * c)
	for _, asm := range modes() {
		withMode(asm, func() {
			name := asm.String()
			b.Run(fmt.Sprintf("Stats/%s", name), func(b *testing.B) {
				b.SetBytes(n)
				for range b.N {
					statsRows(x, c, k, p1, p2)
				}
			})
			b.Run(fmt.Sprintf("GradSums/%s", name), func(b *testing.B) {
				b.SetBytes(2 * n)
				for range b.N {
					gradSumsRows(dy, x, c, k, p1, p2, tierKernels)
				}
			})
			b.Run(fmt.Sprintf("Norm/%s", name), func(b *testing.B) {
				b.SetBytes(2 * n)
				for range b.N {
					normRows(x, y, c, k, k, k, tierKernels)
				}
			})
			b.Run(fmt.Sprintf("GradDx/%s", name), func(b *testing.B) {
				b.SetBytes(3 * n)
				for range b.N {
					gradDxRows(dy, x, y, c, k, k, k, k, tierKernels)
				}
			})
		})
	}
}
