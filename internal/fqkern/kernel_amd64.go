//go:build amd64 && !noasm && !gccgo && !safe

package fqkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// tier is the instruction-set tier the package runs: cpu.Tier() (the
// best the CPU has, capped by TAPEGRAD_ISA), chosen once at start-up.
// Tests switch it to run every tier the CPU has.
var tier = cpu.Tier()

// The kernels below run the assembly of avx2_amd64.s and avx512_amd64.s,
// written by asmgen from one description of the element operations (AVX2
// on YMM with a scalar tail, AVX-512 on ZMM with a masked tail; every
// element gets the same operations, so all of them give the same bits):
// the forward the tier's row-group kernel, the gradient and adjoint the
// tier's kernel, or with stream set (StreamBytes) AVX2's kernel that takes
// the rows one at a time, on every tier. The contract is fqkern.go's: tab
// points at the first table position, rows l floats apart; rows rows of
// n ≥ 1 elements. acc points at the below sum of the first position, its
// above sum l float64 further. The 64 kernels are the 32 ones for float64
// elements. kernel_noasm.go holds their Go twins, of the same names and
// signatures, for other architectures and the noasm build tag. They run
// only on CPUs with AVX2 (useAsm).

// fwd32 is fwdGo(y, x, tab, l, n, rows, false, true, false) on float32
// slices over the pointers: the multiplying forward, the zero channels'
// outputs masked by the keep row.
func fwd32(y, x, tab *float32, l, n, rows int, stream bool) {
	switch {
	case stream:
		fwd32AVX2(y, x, tab, l, n, rows)
	case tier >= cpu.AVX512:
		fwd32GroupAVX512(y, x, tab, l, n, rows)
	default:
		fwd32GroupAVX2(y, x, tab, l, n, rows)
	}
}

// fwdDiv32 is fwdGo(y, x, tab, l, n, rows, true, true, false) on float32
// slices over the pointers: the dividing forward (Vars).
func fwdDiv32(y, x, tab *float32, l, n, rows int, stream bool) {
	switch {
	case stream:
		fwdDiv32AVX2(y, x, tab, l, n, rows)
	case tier >= cpu.AVX512:
		fwdDiv32GroupAVX512(y, x, tab, l, n, rows)
	default:
		fwdDiv32GroupAVX2(y, x, tab, l, n, rows)
	}
}

// grad32 is gradGo(bi, gs, x, tab, l, n, rows, acc) on float32 slices
// over the pointers and float64 sums over acc.
func grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64) {
	if tier >= cpu.AVX512 {
		grad32AVX512(bi, gs, x, tab, l, n, rows, acc)
	} else {
		grad32AVX2(bi, gs, x, tab, l, n, rows, acc)
	}
}

// adj32 is adjGo(out, dbi, x, tab, l, n, rows, false) on float32 slices
// over the pointers.
func adj32(out, dbi, x, tab *float32, l, n, rows int, stream bool) {
	if tier >= cpu.AVX512 && !stream {
		adj32AVX512(out, dbi, x, tab, l, n, rows)
	} else {
		adj32AVX2(out, dbi, x, tab, l, n, rows)
	}
}

// fwd64 is fwd32 for float64: fwdGo(y, x, tab, l, n, rows, false, true,
// false).
func fwd64(y, x, tab *float64, l, n, rows int, stream bool) {
	switch {
	case stream:
		fwd64AVX2(y, x, tab, l, n, rows)
	case tier >= cpu.AVX512:
		fwd64GroupAVX512(y, x, tab, l, n, rows)
	default:
		fwd64GroupAVX2(y, x, tab, l, n, rows)
	}
}

// fwdDiv64 is fwdDiv32 for float64: fwdGo(y, x, tab, l, n, rows, true,
// true, false).
func fwdDiv64(y, x, tab *float64, l, n, rows int, stream bool) {
	switch {
	case stream:
		fwdDiv64AVX2(y, x, tab, l, n, rows)
	case tier >= cpu.AVX512:
		fwdDiv64GroupAVX512(y, x, tab, l, n, rows)
	default:
		fwdDiv64GroupAVX2(y, x, tab, l, n, rows)
	}
}

// grad64 is grad32 for float64: gradGo(bi, gs, x, tab, l, n, rows, acc).
func grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64) {
	if tier >= cpu.AVX512 {
		grad64AVX512(bi, gs, x, tab, l, n, rows, acc)
	} else {
		grad64AVX2(bi, gs, x, tab, l, n, rows, acc)
	}
}

// adj64 is adj32 for float64: adjGo(out, dbi, x, tab, l, n, rows, false).
func adj64(out, dbi, x, tab *float64, l, n, rows int, stream bool) {
	if tier >= cpu.AVX512 && !stream {
		adj64AVX512(out, dbi, x, tab, l, n, rows)
	} else {
		adj64AVX2(out, dbi, x, tab, l, n, rows)
	}
}
