//go:build !amd64 || noasm || gccgo || safe

package fqkern

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// Go twins of the assembly kernels of kernel_amd64.go, of the same names
// and signatures, for other architectures and the noasm build tag: each
// is the Go loop its assembly equals, over slices of the pointers (the
// table from its first position: rows−1 whole rows and n positions of the
// last one read; the sums: 2 rows of l). They are the kernels the
// dispatchers of fqkern.go call when useAsm is set; the tests set it to
// run them against the Go loops in this build too. The stream flag (which
// assembly runs) makes no difference to them.

// tabSlice returns the table of nrows rows l apart from tab, of which
// the last row's first n positions are read.
func tabSlice[T float32 | float64](tab *T, nrows, l, n int) []T {
	return unsafe.Slice(tab, (nrows-1)*l+n)
}

// fwd32 is fwdGo(y, x, tab, l, n, rows, false, true, false).
func fwd32(y, x, tab *float32, l, n, rows int, _ bool) {
	fwdGo(unsafe.Slice(y, n*rows), unsafe.Slice(x, n*rows), tabSlice(tab, qRows, l, n), l, n, rows, false, true, false)
}

// fwdDiv32 is fwdGo(y, x, tab, l, n, rows, true, true, false).
func fwdDiv32(y, x, tab *float32, l, n, rows int, _ bool) {
	fwdGo(unsafe.Slice(y, n*rows), unsafe.Slice(x, n*rows), tabSlice(tab, qRows, l, n), l, n, rows, true, true, false)
}

// grad32 is gradGo(bi, gs, x, tab, l, n, rows, acc).
func grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64) {
	m := n * rows
	gradGo(unsafe.Slice(bi, m), unsafe.Slice(gs, m), unsafe.Slice(x, m), tabSlice(tab, bPass+1, l, n), l, n, rows, unsafe.Slice(acc, l+n))
}

// adj32 is adjGo(out, dbi, x, tab, l, n, rows, false).
func adj32(out, dbi, x, tab *float32, l, n, rows int, _ bool) {
	m := n * rows
	adjGo(unsafe.Slice(out, m), unsafe.Slice(dbi, m), unsafe.Slice(x, m), tabSlice(tab, bRows, l, n), l, n, rows, false)
}

// fwd64 is fwdGo(y, x, tab, l, n, rows, false, true, false).
func fwd64(y, x, tab *float64, l, n, rows int, _ bool) {
	fwdGo(unsafe.Slice(y, n*rows), unsafe.Slice(x, n*rows), tabSlice(tab, qRows, l, n), l, n, rows, false, true, false)
}

// fwdDiv64 is fwdGo(y, x, tab, l, n, rows, true, true, false).
func fwdDiv64(y, x, tab *float64, l, n, rows int, _ bool) {
	fwdGo(unsafe.Slice(y, n*rows), unsafe.Slice(x, n*rows), tabSlice(tab, qRows, l, n), l, n, rows, true, true, false)
}

// grad64 is gradGo(bi, gs, x, tab, l, n, rows, acc).
func grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64) {
	m := n * rows
	gradGo(unsafe.Slice(bi, m), unsafe.Slice(gs, m), unsafe.Slice(x, m), tabSlice(tab, bPass+1, l, n), l, n, rows, unsafe.Slice(acc, l+n))
}

// adj64 is adjGo(out, dbi, x, tab, l, n, rows, false).
func adj64(out, dbi, x, tab *float64, l, n, rows int, _ bool) {
	m := n * rows
	adjGo(unsafe.Slice(out, m), unsafe.Slice(dbi, m), unsafe.Slice(x, m), tabSlice(tab, bRows, l, n), l, n, rows, false)
}

// tier is cpu.Tier(), as on amd64, so that tests can switch it; the Go
// twins above run whatever it says.
var tier = cpu.Tier()
