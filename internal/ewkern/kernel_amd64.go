//go:build amd64 && !noasm && !gccgo && !safe

package ewkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// tier is the instruction-set tier the package runs: cpu.Tier() (the
// best the CPU has, capped by TAPEGRAD_ISA), chosen once at start-up.
// Tests switch it to run every tier the CPU has.
var tier = cpu.Tier()

// bulkLen returns how many of n elements (lanes per 256-bit vector) the
// routines below take: all of them on AVX-512 (masked tail), the whole
// vectors on AVX2, none on the Go tier. Relu and ReluGrad run the rest in
// Go.
func bulkLen(n, lanes int) int {
	switch {
	case tier >= cpu.AVX512:
		return n
	case tier >= cpu.AVX2:
		return n &^ (lanes - 1)
	}
	return 0
}

// The routines below run the current tier's assembly (avx2_amd64.s,
// avx512_amd64.s, written by asmgen) over n elements, n as bulkLen
// returned. Their Go twins are in kernel_other.go.

// reluF32 is, for i < n, out[i] = max(x[i], 0) as ReluGo computes it.
func reluF32(out, x *float32, n int) {
	if tier >= cpu.AVX512 {
		reluAVX512F32(out, x, n)
	} else {
		reluAVX2F32(out, x, n)
	}
}

// reluF64 is reluF32 for float64.
func reluF64(out, x *float64, n int) {
	if tier >= cpu.AVX512 {
		reluAVX512F64(out, x, n)
	} else {
		reluAVX2F64(out, x, n)
	}
}

// reluGradF32 is, for i < n, out[i] = dy[i] · (f[i] > 0 ? 1 : 0) as
// ReluGradGo computes it.
func reluGradF32(out, dy, f *float32, n int) {
	if tier >= cpu.AVX512 {
		reluGradAVX512F32(out, dy, f, n)
	} else {
		reluGradAVX2F32(out, dy, f, n)
	}
}

// reluGradF64 is reluGradF32 for float64.
func reluGradF64(out, dy, f *float64, n int) {
	if tier >= cpu.AVX512 {
		reluGradAVX512F64(out, dy, f, n)
	} else {
		reluGradAVX2F64(out, dy, f, n)
	}
}
