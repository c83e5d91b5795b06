//go:build amd64 && !noasm

package gemm

import (
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// convOffs returns the im2col segment offsets of a 3×3 SAME stride-1
// convolution of n images h×w with c channels: offs[t*ld+r] for tap t and
// output position r (ld = n·h·w).
func convOffs(n, h, w, c int) ([]int, int) {
	m := n * h * w
	offs := make([]int, 9*m)
	for r := range m {
		b, i, j := r/(h*w), r%(h*w)/w, r%w
		for a := range 3 {
			for q := range 3 {
				y, x := i+a-1, j+q-1
				o := -1
				if y >= 0 && y < h && x >= 0 && x < w {
					o = ((b*h+y)*w + x) * c
				}
				offs[(a*3+q)*m+r] = o
			}
		}
	}
	return offs, m
}

func fill32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i%13) - 6
	}
	return s
}

// BenchmarkKernelW1 times the AVX-512 kernels of W1's three GEMMs alone
// (input gradient 12x16 in AVX2's order (Z) and in pair order (P),
// forward 6x32, filter gradient 8x16x3), on W1's shapes with offset tables
// of the whole batch (ld = positions).
func BenchmarkKernelW1(b *testing.B) {
	if cpu.Tier() < cpu.AVX512 {
		b.Skipf("NOT RUN: this CPU lacks AVX-512 (cpu.Tier() = %v)", cpu.Tier())
	}
	const n, h, w = 32, 32, 32
	for _, pair := range []bool{false, true} {
		name, k := "bwdInput12x16Z", sgemmKernelRows12x16Z
		if pair {
			name, k = "bwdInput12x16P", sgemmKernelRows12x16P
		}
		b.Run(name, func(b *testing.B) {
			const c = 32 // dy channels
			offs, m := convOffs(n, h, w, c)
			data := fill32(m * c)
			pb := fill32(9 * c * 16)
			if pair {
				pairPanels(pb, 9*c, 16)
			}
			out := make([]float32, m*16)
			limit := len(data) - c
			for b.Loop() {
				for i0 := 0; i0+12 <= m; i0 += 12 {
					k(5, c, 0, &offs[i0], m, &data[0], &zero32[0], &pb[0], &out[i0*16], 16, 1, 0, limit)
					k(4, c, 0, &offs[5*m+i0], m, &data[0], &zero32[0], &pb[5*c*16], &out[i0*16], 16, 1, 1, limit)
				}
			}
			b.ReportMetric(2*float64(m)*16*9*c*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	b.Run("fwd6x32", func(b *testing.B) {
		const c = 16
		offs, m := convOffs(n, h, w, c)
		data := fill32(m * c)
		pb := fill32(9 * c * 32)
		out := make([]float32, m*32)
		limit := len(data) - c
		for b.Loop() {
			for i0 := 0; i0+6 <= m; i0 += 6 {
				sgemmKernelRows6x32(9, c, 0, &offs[i0], m, &data[0], &zero32[0], &pb[0], &out[i0*32], 32, 1, 0, limit)
			}
		}
		b.ReportMetric(2*float64(m)*32*9*c*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("bwdFilterSR8x16x3", func(b *testing.B) {
		const c, o = 16, 32
		offs, m := convOffs(n, h, w, c)
		data := fill32(m * c)
		dy := fill32(m * o)
		out := make([]float32, o*9*c)
		limit := len(data) - c
		const kc = 256
		for b.Loop() {
			for pc := 0; pc < m; pc += kc {
				beta := float32(1)
				if pc%4096 == 0 {
					beta = 0
				}
				for i0 := 0; i0 < o; i0 += 8 {
					for s := 0; s < 9; s += 3 {
						sgemmKernelSR8x16x3(kc, &dy[pc*o+i0], o, &offs[s*m+pc], m, &data[0], &zero32[0], &out[i0*9*c+s*c], 9*c, 1, beta, limit)
					}
				}
			}
		}
		b.ReportMetric(2*float64(m)*o*9*c*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
