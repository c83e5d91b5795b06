//go:build amd64 && !noasm

package fqkern

// The AVX2 assembly kernels (kernel_amd64.s), with the contract of
// fqkern.go: tab points at the first table position, rows l floats apart;
// rows rows of n ≥ 1 elements. acc points at the below sum of the first
// position, its above sum l float64 further. The 64 kernels are the 32
// ones for float64 elements. kernel_noasm.go holds their Go twins, of the
// same names and signatures, for other architectures and the noasm build
// tag. They run only on CPUs with AVX2 (useAsm).

// fwd32 is fwdGo(y, x, tab, l, n, rows, false, true, false) on float32
// slices over the pointers: the multiplying forward, the zero channels'
// outputs masked by the keep row.
//
//go:noescape
func fwd32(y, x, tab *float32, l, n, rows int)

// fwdDiv32 is fwdGo(y, x, tab, l, n, rows, true, true, false) on float32
// slices over the pointers: the dividing forward (Vars).
//
//go:noescape
func fwdDiv32(y, x, tab *float32, l, n, rows int)

// grad32 is gradGo(bi, gs, x, tab, l, n, rows, acc) on float32 slices
// over the pointers and float64 sums over acc.
//
//go:noescape
func grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64)

// adj32 is adjGo(out, dbi, x, tab, l, n, rows, false) on float32 slices
// over the pointers.
//
//go:noescape
func adj32(out, dbi, x, tab *float32, l, n, rows int)

// fwd64 is fwd32 for float64: fwdGo(y, x, tab, l, n, rows, false, true,
// false).
//
//go:noescape
func fwd64(y, x, tab *float64, l, n, rows int)

// fwdDiv64 is fwdDiv32 for float64: fwdGo(y, x, tab, l, n, rows, true,
// true, false).
//
//go:noescape
func fwdDiv64(y, x, tab *float64, l, n, rows int)

// grad64 is grad32 for float64: gradGo(bi, gs, x, tab, l, n, rows, acc).
//
//go:noescape
func grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64)

// adj64 is adj32 for float64: adjGo(out, dbi, x, tab, l, n, rows, false).
//
//go:noescape
func adj64(out, dbi, x, tab *float64, l, n, rows int)
