//go:build !amd64 || noasm

package bnkern

// Enabled is false without assembly kernels: every call runs the portable
// Go loops.
var Enabled = false

// The assembly entry points are never called when Enabled is false.

const noAsm = "bnkern: assembly kernel called without assembly support"

func stats(x, k *float32, p1, p2 *float64, n4, nb, stride int)        { panic(noAsm) }
func gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int) { panic(noAsm) }
func norm(x, y, mu, k, beta *float32, rows, nb, stride int)           { panic(noAsm) }
func normNT(x, y, mu, k, beta *float32, rows, nb, stride int)         { panic(noAsm) }
func gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)   { panic(noAsm) }
func gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int) { panic(noAsm) }
func scale(dy, dx, k *float32, rows, nb, stride int)                  { panic(noAsm) }
