package dwconv

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// Kernel throughput on one cache-resident row (W5's and W6's row shapes):
// the compute bound of the kernels, apart from memory traffic.

func benchRows(c, npix, s int) (o []float32, x *[3][]float32, t []float32) {
	r := rand.New(rand.NewSource(1))
	rnd := func(n int) []float32 { return testutil.Convert[float32](testutil.Normal(r, n)) }
	w := ((npix-1)*s + 3) * c
	return rnd(npix * 2 * c), &[3][]float32{rnd(w), rnd(w), rnd(w)}, rnd(9 * c)
}

func BenchmarkKernels(b *testing.B) {
	for _, sh := range []struct{ c, npix, s int }{{128, 54, 1}, {32, 55, 2}} {
		c, npix, s := sh.c, sh.npix, sh.s
		o, x, t := benchRows(c, npix, s)
		vec := float64(npix * c / Block)
		b.Run(fmt.Sprintf("Fwd3x3/c%d/s%d", c, s), func(b *testing.B) {
			for range b.N {
				Fwd3x3(o, x, t, npix, c, c, s, nil, false)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/vec, "ns/vec")
		})
		b.Run(fmt.Sprintf("Filter3x3/c%d/s%d", c, s), func(b *testing.B) {
			acc := make([]float32, accLen(c))
			seg := 8
			for range b.N {
				for j := 0; j < npix; j += seg {
					n := min(seg, npix-j)
					win := &[3][]float32{x[0][j*s*c:], x[1][j*s*c:], x[2][j*s*c:]}
					Filter3x3(acc, o[j*c:], win, n, c, c, s, nil)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/vec, "ns/vec")
		})
		if s == 2 {
			b.Run(fmt.Sprintf("BwdInput3x3S2/c%d", c), func(b *testing.B) {
				np := npix / 2
				for range b.N {
					BwdInput3x3S2(o, x, t, np, c, c, nil, false)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*np*c/Block), "ns/vec")
			})
		}
	}
}
