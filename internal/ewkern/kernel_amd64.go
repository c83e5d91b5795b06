//go:build amd64 && !noasm && !gccgo && !safe

package ewkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// tier is the instruction-set tier the package runs: cpu.Tier() (the
// best the CPU has, capped by TAPEGRAD_ISA), chosen once at start-up.
// Tests switch it to run every tier the CPU has.
var tier = cpu.Tier()

// zmmLen is the call length below which the AVX-512 tier runs its own
// routines, and from which the AVX2 ones. Measured on an AMD EPYC Zen 5
// (Relu, float32, tiers compared in one process): AVX-512 is 1.3× AVX2
// while the operands fit L1 (4096 elements), level from 16384 elements
// (L2) to the L3 size, and 0.91–0.95 of it on operands streamed from
// memory (25 MiB; four 512-bit loads then four stores per iteration),
// where none of the variants of the loop measured (one to eight vectors
// per iteration, loads and stores interleaved, prefetches, non-temporal
// stores) was level in every run. The forward
// and backward kernels call Relu and ReluGrad on the whole tensor or on
// parallel chunks of at least 1<<14 elements (their ewGrain), so the choice
// amounts to one on the tensor's length, whatever the thread count; the
// routines give the same bits on every tier anyway.
const zmmLen = 1 << 14

// wide reports whether a call of n elements runs the AVX-512 routines.
func wide(n int) bool { return tier >= cpu.AVX512 && n < zmmLen }

// bulkLen returns how many of n elements (lanes per 256-bit vector) the
// routines below take: all of them on AVX-512 (masked tail, calls shorter
// than zmmLen), the whole vectors on AVX2, none on the Go tier. Relu and
// ReluGrad run the rest in Go.
func bulkLen(n, lanes int) int {
	switch {
	case wide(n):
		return n
	case tier >= cpu.AVX2:
		return n &^ (lanes - 1)
	}
	return 0
}

// The routines below run the current tier's assembly (avx2_amd64.s,
// avx512_amd64.s, written by asmgen) over n elements, n as bulkLen
// returned (AVX2's from zmmLen elements on). Their Go twins are in
// kernel_other.go.

// reluF32 is, for i < n, out[i] = max(x[i], 0) as ReluGo computes it.
func reluF32(out, x *float32, n int) {
	if wide(n) {
		reluAVX512F32(out, x, n)
	} else {
		reluAVX2F32(out, x, n)
	}
}

// reluF64 is reluF32 for float64.
func reluF64(out, x *float64, n int) {
	if wide(n) {
		reluAVX512F64(out, x, n)
	} else {
		reluAVX2F64(out, x, n)
	}
}

// reluGradF32 is, for i < n, out[i] = dy[i] · (f[i] > 0 ? 1 : 0) as
// ReluGradGo computes it.
func reluGradF32(out, dy, f *float32, n int) {
	if wide(n) {
		reluGradAVX512F32(out, dy, f, n)
	} else {
		reluGradAVX2F32(out, dy, f, n)
	}
}

// reluGradF64 is reluGradF32 for float64.
func reluGradF64(out, dy, f *float64, n int) {
	if wide(n) {
		reluGradAVX512F64(out, dy, f, n)
	} else {
		reluGradAVX2F64(out, dy, f, n)
	}
}

// addToF32 is, for i < n, dst[i] = dst[i] + src[i] as AddToGo computes it.
func addToF32(dst, src *float32, n int) {
	if wide(n) {
		addToAVX512F32(dst, src, n)
	} else {
		addToAVX2F32(dst, src, n)
	}
}

// addToF64 is addToF32 for float64.
func addToF64(dst, src *float64, n int) {
	if wide(n) {
		addToAVX512F64(dst, src, n)
	} else {
		addToAVX2F64(dst, src, n)
	}
}
