//go:build !amd64 || noasm

package dwconv

// Enabled is false without assembly kernels: the exported functions run
// their portable Go loops.
var Enabled = false

// The assembly entry points are never called when Enabled is false.

func fwd3x3S1(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	panic(noAsm)
}
func fwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	panic(noAsm)
}
func bwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	panic(noAsm)
}
func filt3x3S1(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	panic(noAsm)
}
func filt3x3S2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int) {
	panic(noAsm)
}
func dotTaps(o *float32, xs, ts **float32, n, nb int)        { panic(noAsm) }
func axpyTaps(acc, xs **float32, n int, dy *float32, nb int) { panic(noAsm) }
func addF64(dst *float64, src *float32, n int)               { panic(noAsm) }

const noAsm = "dwconv: assembly kernel called without assembly support"

func prefetch(p *float32, n int) { panic(noAsm) }
