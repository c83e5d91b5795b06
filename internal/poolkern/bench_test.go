package poolkern

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkPools times the five loops on a LeNet-sized layer: 64×28×28×32
// NHWC (and NCHW), 2×2 windows, stride 2.
func BenchmarkPools(b *testing.B) {
	for _, nchw := range []bool{false, true} {
		g := Geom{NCHW: nchw, N: 64, H: 28, W: 28, C: 32, KH: 2, KW: 2, SH: 2, SW: 2, OH: 14, OW: 14}
		r := rand.New(rand.NewSource(1))
		x := make([]float32, g.N*g.H*g.W*g.C)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y := make([]float32, g.N*g.OH*g.OW*g.C)
		dx := make([]float32, len(x))
		MaxPool(1, y, x, g)
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("nchw=%v/t%d", nchw, threads)
			b.Run(name+"/MaxPool", func(b *testing.B) {
				for range b.N {
					MaxPool(threads, y, x, g)
				}
			})
			b.Run(name+"/MaxPoolGrad", func(b *testing.B) {
				for range b.N {
					MaxPoolGrad(threads, dx, x, y, g)
				}
			})
			b.Run(name+"/AvgPool", func(b *testing.B) {
				for range b.N {
					AvgPool(threads, y, x, g)
				}
			})
			b.Run(name+"/AvgPoolGrad", func(b *testing.B) {
				for range b.N {
					AvgPoolGrad(threads, dx, y, g)
				}
			})
		}
	}
}
