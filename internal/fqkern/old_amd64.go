//go:build amd64 && !noasm && !gccgo && !safe

package fqkern

// The hand-written AVX2 kernels that asmgen replaced (old_amd64.s), kept
// for one commit so that old_test.go can compare them with the generated
// ones bit for bit.

//go:noescape
func old_fwd32(y, x, tab *float32, l, n, rows int)

//go:noescape
func old_fwdDiv32(y, x, tab *float32, l, n, rows int)

//go:noescape
func old_grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64)

//go:noescape
func old_adj32(out, dbi, x, tab *float32, l, n, rows int)

//go:noescape
func old_fwd64(y, x, tab *float64, l, n, rows int)

//go:noescape
func old_fwdDiv64(y, x, tab *float64, l, n, rows int)

//go:noescape
func old_grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64)

//go:noescape
func old_adj64(out, dbi, x, tab *float64, l, n, rows int)
