//go:build !noasm && !gccgo && !safe

package bnkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// useAsm reports whether float32 calls of at least Block channels run the
// block kernels below: true when the CPU has AVX2 and FMA, otherwise every
// call runs the generic Go loops of kernel_go.go. Tests switch it off to
// compare the two.
var useAsm = cpu.X86.AVX2FMA

// The AVX2 block kernels (kernel_amd64.s); kernel_noasm.go holds their Go
// twins for other builds, with the loops each one equals. The callers in
// bnkern.go check every bound they rely on; stride is the row length in
// bytes (c·4), nb ≥ 1 the channel blocks of 8 covered from each row's
// start. The reducing kernels take n4 ≥ 1 groups of four rows, the
// storing ones rows ≥ 1 rows. The reducing kernels prefetch their inputs
// 4 KiB ahead (PFD). The NT variants need y (dx) and stride 32-byte
// aligned and end with SFENCE.

// stats equals the Go twin of kernel_noasm.go: per group of four rows and
// channel, d_i = x_i − k, p1 += float64((d0+d1)+(d2+d3)),
// p2 += float64((d0²+d1²)+(d2²+d3²)) with every square rounded to float32.
//
//go:noescape
func stats(x, k *float32, p1, p2 *float64, n4, nb, stride int)

// gradSums equals the Go twin of kernel_noasm.go: per group of four rows
// and channel, p1 += float64((g0+g1)+(g2+g3)),
// p2 += float64((g0·(x0−m)+g1·(x1−m))+(g2·(x2−m)+g3·(x3−m))) with every
// product rounded to float32.
//
//go:noescape
func gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int)

// norm equals the Go twin of kernel_noasm.go: y = float32((x−mu)·k) + beta.
//
//go:noescape
func norm(x, y, mu, k, beta *float32, rows, nb, stride int)

// normNT is norm with non-temporal stores.
//
//go:noescape
func normNT(x, y, mu, k, beta *float32, rows, nb, stride int)

// gradDx equals the Go twin of kernel_noasm.go:
// dx = float32(a·(dy−mdy)) − float32(b·(x−m)).
//
//go:noescape
func gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)

// gradDxNT is gradDx with non-temporal stores.
//
//go:noescape
func gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)

// scale equals the Go twin of kernel_noasm.go: dx = dy·k.
//
//go:noescape
func scale(dy, dx, k *float32, rows, nb, stride int)
