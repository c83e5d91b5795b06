//go:build amd64 && !noasm && !gccgo && !safe

package ewkern

// The hand-written AVX2 routines that asmgen replaced (old_amd64.s), kept
// for one commit so that old_test.go can compare them with the generated
// ones bit for bit.

//go:noescape
func oldReluF32(out, x *float32, n int)

//go:noescape
func oldReluF64(out, x *float64, n int)

//go:noescape
func oldReluGradF32(out, dy, f *float32, n int)

//go:noescape
func oldReluGradF64(out, dy, f *float64, n int)
