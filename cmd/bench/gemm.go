package main

import (
	"fmt"
	"math/rand"

	"github.com/tapegrad/tapegrad/internal/gemm"
)

// GEMM micro-benchmarks: C = A·B for square n×n matrices, float32 (mode
// "sgemm") and float64 ("dgemm"); 2n³ flops. Compare in the same run
// with torch/bench_torch.py (torch.mm on the same shapes, through
// PyTorch's BLAS).
func init() {
	for _, n := range []int{512, 1024, 2048} {
		register(workload{name: fmt.Sprintf("GEMM%d", n), desc: fmt.Sprintf("square GEMM n=%d", n), build: gemmBuild(n)})
	}
}

func gemmBuild(n int) func(threads int) ([]mode, error) {
	return func(threads int) ([]mode, error) {
		r := rand.New(rand.NewSource(3))
		a32, b32, c32 := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
		a64, b64, c64 := make([]float64, n*n), make([]float64, n*n), make([]float64, n*n)
		for i := range a32 {
			a32[i], b32[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			a64[i], b64[i] = r.NormFloat64(), r.NormFloat64()
		}
		ws := &gemm.Workspace{}
		flops := 2 * float64(n) * float64(n) * float64(n)
		return []mode{
			{name: "sgemm", flops: flops, run: func() error {
				gemm.GemmWS(ws, false, false, n, n, n, 1, a32, n, b32, n, 0, c32, n, threads)
				return nil
			}},
			{name: "dgemm", flops: flops, run: func() error {
				gemm.GemmWS(ws, false, false, n, n, n, 1, a64, n, b64, n, 0, c64, n, threads)
				return nil
			}},
		}, nil
	}
}
