package gemm

import (
	"fmt"
	"testing"

	"github.com/tapegrad/tapegrad/internal/parallel"
)

func BenchmarkXSmall(b *testing.B) {
	for _, s := range [][3]int{{8, 8, 8}, {16, 16, 16}, {64, 10, 64}, {64, 64, 64}, {128, 128, 128}, {256, 256, 256}} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprint(s, threads), func(b *testing.B) {
				m, n, k := s[0], s[1], s[2]
				x := make([]float32, m*k)
				y := make([]float32, k*n)
				z := make([]float32, m*n)
				for b.Loop() {
					Gemm(false, false, m, n, k, 1, x, k, y, n, 0, z, n, threads)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

func BenchmarkXForNoop(b *testing.B) {
	var sink [2]int
	for b.Loop() {
		parallel.For(2, 2, 1, func(lo, hi int) { sink[lo]++ })
	}
}

func BenchmarkXForWork(b *testing.B) {
	x := make([]float64, 2*4096)
	for b.Loop() {
		parallel.For(2, 2, 1, func(lo, hi int) {
			s := x[lo*4096 : (lo+1)*4096]
			for r := 0; r < 4; r++ {
				for i := range s {
					s[i] = s[i]*0.5 + 1
				}
			}
		})
	}
}

func BenchmarkXSerialWork(b *testing.B) {
	x := make([]float64, 2*4096)
	for b.Loop() {
		for r := 0; r < 4; r++ {
			for i := range x {
				x[i] = x[i]*0.5 + 1
			}
		}
	}
}
