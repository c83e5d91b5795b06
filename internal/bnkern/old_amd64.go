//go:build amd64 && !noasm && !gccgo && !safe

package bnkern

// The hand-written AVX2 kernels that asmgen replaced (old_amd64.s), kept
// for one commit so that old_test.go can compare them with the generated
// ones bit for bit.

//go:noescape
func old_stats(x, k *float32, p1, p2 *float64, n4, nb, stride int)

//go:noescape
func old_gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int)

//go:noescape
func old_norm(x, y, mu, k, beta *float32, rows, nb, stride int)

//go:noescape
func old_normNT(x, y, mu, k, beta *float32, rows, nb, stride int)

//go:noescape
func old_gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)

//go:noescape
func old_gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)

//go:noescape
func old_scale(dy, dx, k *float32, rows, nb, stride int)
