//go:build amd64 && !noasm && !gccgo && !safe

package bnkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// tier is the instruction-set tier the package runs: cpu.Tier() (the
// best the CPU has, capped by TAPEGRAD_ISA), chosen once at start-up.
// Tests switch it to run every tier the CPU has.
var tier = cpu.Tier()

// useAsm reports whether float32 calls of at least Block channels run the
// block kernels below: true from the AVX2 tier up, otherwise every call
// runs the generic Go loops of kernel_go.go. Tests switch it off to
// compare the two.
var useAsm = tier >= cpu.AVX2

// The block kernels run the current tier's assembly (avx2_amd64.s,
// avx512_amd64.s, written by asmgen from one description: AVX-512 takes
// the channel blocks in pairs on ZMM, an odd last block on YMM, with the
// same operations per channel, so every tier gives the same bits; the
// streaming variants are AVX2's on every tier, as a ZMM non-temporal store
// needs 64-byte alignment). kernel_noasm.go holds their Go
// twins for other builds, with the loops each one equals. The callers in
// bnkern.go check every bound they rely on; stride is the row length in
// bytes (c·4), nb ≥ 1 the channel blocks of 8 covered from each row's
// start. The reducing kernels take n4 ≥ 1 groups of four rows, the
// storing ones rows ≥ 1 rows. The reducing kernels prefetch their inputs
// 4 KiB ahead (PFD). The NT variants need y (dx) and stride 32-byte
// aligned and end with SFENCE. gradSums, norm and gradDx run the AVX-512
// tier's kernel only with wide set (the caller's variant: tensors below
// WideBytes, SumsWideBytes), else AVX2's.

// stats equals the Go twin of kernel_noasm.go: per group of four rows and
// channel, d_i = x_i − k, p1 += float64((d0+d1)+(d2+d3)),
// p2 += float64((d0²+d1²)+(d2²+d3²)) with every square rounded to float32.
func stats(x, k *float32, p1, p2 *float64, n4, nb, stride int) {
	if tier >= cpu.AVX512 {
		statsAVX512(x, k, p1, p2, n4, nb, stride)
	} else {
		statsAVX2(x, k, p1, p2, n4, nb, stride)
	}
}

// gradSums equals the Go twin of kernel_noasm.go: per group of four rows
// and channel, p1 += float64((g0+g1)+(g2+g3)),
// p2 += float64((g0·(x0−m)+g1·(x1−m))+(g2·(x2−m)+g3·(x3−m))) with every
// product rounded to float32.
func gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int, wide bool) {
	if wide && tier >= cpu.AVX512 {
		gradSumsAVX512(dy, x, m, p1, p2, n4, nb, stride)
	} else {
		gradSumsAVX2(dy, x, m, p1, p2, n4, nb, stride)
	}
}

// norm equals the Go twin of kernel_noasm.go: y = float32((x−mu)·k) + beta.
func norm(x, y, mu, k, beta *float32, rows, nb, stride int, wide bool) {
	if wide && tier >= cpu.AVX512 {
		normAVX512(x, y, mu, k, beta, rows, nb, stride)
	} else {
		normAVX2(x, y, mu, k, beta, rows, nb, stride)
	}
}

// normNT is norm with non-temporal stores.
func normNT(x, y, mu, k, beta *float32, rows, nb, stride int) {
	normNTAVX2(x, y, mu, k, beta, rows, nb, stride)
}

// gradDx equals the Go twin of kernel_noasm.go:
// dx = float32(a·(dy−mdy)) − float32(b·(x−m)).
func gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int, wide bool) {
	if wide && tier >= cpu.AVX512 {
		gradDxAVX512(dy, x, dx, a, mdy, b, m, rows, nb, stride)
	} else {
		gradDxAVX2(dy, x, dx, a, mdy, b, m, rows, nb, stride)
	}
}

// gradDxNT is gradDx with non-temporal stores.
func gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int) {
	gradDxNTAVX2(dy, x, dx, a, mdy, b, m, rows, nb, stride)
}

// scale equals the Go twin of kernel_noasm.go: dx = dy·k.
func scale(dy, dx, k *float32, rows, nb, stride int) {
	if tier >= cpu.AVX512 {
		scaleAVX512(dy, dx, k, rows, nb, stride)
	} else {
		scaleAVX2(dy, dx, k, rows, nb, stride)
	}
}
