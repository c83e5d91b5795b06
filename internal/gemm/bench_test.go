package gemm

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// BenchmarkSgemm and BenchmarkDgemm multiply square n×n matrices (C = A*B,
// beta 0) and report GFLOP/s, on 1 and 2 threads, through a reused
// Workspace.
func BenchmarkSgemm(b *testing.B) { benchGemm[float32](b) }

// BenchmarkDgemm is BenchmarkSgemm for float64.
func BenchmarkDgemm(b *testing.B) { benchGemm[float64](b) }

func benchGemm[T Float](b *testing.B) {
	for _, n := range []int{512, 1024, 2048} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%d/t%d", n, threads), func(b *testing.B) { benchSquare[T](b, n, threads) })
		}
	}
}

// BenchmarkSgemmTrans runs the transposed combinations at n = 1024 on one
// thread (BenchmarkSgemm covers A*B).
func BenchmarkSgemmTrans(b *testing.B) {
	for _, tr := range [][2]bool{{false, true}, {true, false}, {true, true}} {
		b.Run(fmt.Sprintf("1024/transA=%v/transB=%v", tr[0], tr[1]), func(b *testing.B) {
			benchSquareT[float32](b, tr[0], tr[1], 1024, 1)
		})
	}
}

// benchSquare times C = A*B for n×n matrices and reports GFLOP/s.
func benchSquare[T Float](b *testing.B, n, threads int) {
	benchSquareT[T](b, false, false, n, threads)
}

// benchSquareT times C = op(A)*op(B) for n×n matrices.
func benchSquareT[T Float](b *testing.B, transA, transB bool, n, threads int) {
	x := make([]T, n*n)
	y := make([]T, n*n)
	z := make([]T, n*n)
	for i := range x {
		x[i] = T(i%7) - 3
		y[i] = T(i%5) - 2
	}
	ws := NewWorkspace()
	GemmWS(ws, transA, transB, n, n, n, 1, x, n, y, n, 0, z, n, threads)
	runtime.GC() // keep the collector of the set-up garbage out of the timing
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for b.Loop() {
		GemmWS(ws, transA, transB, n, n, n, 1, x, n, y, n, 0, z, n, threads)
	}
	flops := 2 * float64(n) * float64(n) * float64(n) * float64(b.N)
	reportFlops(b, flops, cpu0)
}

// BenchmarkSgemmConv runs the float32 GEMM shapes of im2col convolutions
// from perf/WORKLOADS.md (NHWC): forward C[M×N] = patches[M×K]·W[K×N],
// input gradient dPatches = dY·Wᵀ and filter gradient dW = patchesᵀ·dY.
func BenchmarkSgemmConv(b *testing.B) {
	shapes := []struct {
		name           string
		transA, transB bool
		m, n, k        int
	}{
		{"W2fwd", false, false, 8 * 56 * 56, 64, 9 * 64},
		{"W2bwdInput", false, true, 8 * 56 * 56, 9 * 64, 64},
		{"W2bwdFilter", true, false, 9 * 64, 64, 8 * 56 * 56},
		{"W4fwd", false, false, 8 * 28 * 28, 256, 128},
		{"W1fwd", false, false, 32 * 32 * 32, 32, 9 * 16},
	}
	for _, s := range shapes {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/t%d", s.name, threads), func(b *testing.B) {
				lda, ldb := s.k, s.n
				if s.transA {
					lda = s.m
				}
				if s.transB {
					ldb = s.k
				}
				x := make([]float32, s.m*s.k)
				y := make([]float32, s.k*s.n)
				z := make([]float32, s.m*s.n)
				for i := range x {
					x[i] = float32(i%7) - 3
				}
				for i := range y {
					y[i] = float32(i%5) - 2
				}
				ws := NewWorkspace()
				GemmWS(ws, s.transA, s.transB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n, threads)
				runtime.GC()
				cpu0 := cpuSeconds()
				b.ResetTimer()
				for b.Loop() {
					GemmWS(ws, s.transA, s.transB, s.m, s.n, s.k, 1, x, lda, y, ldb, 0, z, s.n, threads)
				}
				flops := 2 * float64(s.m) * float64(s.n) * float64(s.k) * float64(b.N)
				reportFlops(b, flops, cpu0)
			})
		}
	}
}

// BenchmarkGemmPortable measures the portable Go micro-kernel (the path
// used without AVX2/FMA or under the noasm tag) at n = 512, 1 thread.
func BenchmarkGemmPortable(b *testing.B) {
	old := tier
	tier = cpu.Go
	defer func() { tier = old }()
	b.Run("float32", func(b *testing.B) { benchSquare[float32](b, 512, 1) })
	b.Run("float64", func(b *testing.B) { benchSquare[float64](b, 512, 1) })
}

// BenchmarkKernel measures each tier's packed micro-kernel alone, the
// panels (kc = 256) in L1/L2, C an isolated tile: the rate the blocking
// of BenchmarkSgemm/BenchmarkDgemm can at best reach. A tier this CPU
// lacks is skipped.
func BenchmarkKernel(b *testing.B) {
	for _, isa := range cpu.ISAs {
		if isa != cpu.Go && (!cpu.Has(isa) || goTwins) {
			continue
		}
		b.Run(isa.String()+"/float32", func(b *testing.B) { benchKernel[float32](b, isa, 256) })
		b.Run(isa.String()+"/float64", func(b *testing.B) { benchKernel[float64](b, isa, 256) })
	}
}

func benchKernel[T Float](b *testing.B, isa cpu.ISA, kc int) {
	blk, kern := setup[T](isa)
	nr := blk.nr
	a := alignedSlice[T](kc * mr)
	p := alignedSlice[T](kc * nr)
	c := alignedSlice[T](mr * nr)
	for i := range a {
		a[i] = T(i%7) - 3
	}
	for i := range p {
		p[i] = T(i%5) - 2
	}
	const calls = 100
	b.ResetTimer()
	for b.Loop() {
		for range calls {
			kern(kc, a, p, c, nr, 1, 0)
		}
	}
	b.ReportMetric(2*float64(kc*mr*nr)*calls*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// reportFlops reports GFLOP/s of wall-clock time and, where the platform
// measures it, GFLOP per CPU-second since cpu0 (all threads together: with
// 2 threads it is half the wall-clock rate when both are fully busy).
func reportFlops(b *testing.B, flops, cpu0 float64) {
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu0 >= 0 {
		if used := cpuSeconds() - cpu0; used > 0 {
			b.ReportMetric(flops/used/1e9, "GFLOP/cpu-s")
		}
	}
}
