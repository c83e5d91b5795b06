//go:build amd64 && !noasm

package bnkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// Enabled reports whether the AVX2 assembly kernels serve float32 calls
// on this CPU. When it is false every call runs the portable Go loops.
var Enabled = cpu.X86.AVX2FMA

// The assembly kernels (kernel_amd64.s). The exported wrappers in
// bnkern.go check every bound they rely on; stride is the row length in
// bytes (c·4), nb ≥ 1 the channel blocks of 8 covered from each row's
// start. The reducing kernels take n4 ≥ 1 groups of four rows, the
// storing ones rows ≥ 1 rows. The reducing kernels prefetch their inputs
// 4 KiB ahead (PFD). The NT variants need y (dx) and stride 32-byte
// aligned and end with SFENCE.

//go:noescape
func stats(x, k *float32, p1, p2 *float64, n4, nb, stride int)

//go:noescape
func gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int)

//go:noescape
func norm(x, y, mu, k, beta *float32, rows, nb, stride int)

//go:noescape
func normNT(x, y, mu, k, beta *float32, rows, nb, stride int)

//go:noescape
func gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)

//go:noescape
func gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)

//go:noescape
func scale(dy, dx, k *float32, rows, nb, stride int)
