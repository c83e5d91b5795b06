//go:build !amd64 || noasm

package ewkern

// Enabled is false without the assembly kernels.
var Enabled = false

const noAsm = "ewkern: assembly kernel called without assembly"

func reluF32(out, x *float32, n int)         { panic(noAsm) }
func reluF64(out, x *float64, n int)         { panic(noAsm) }
func reluGradF32(out, dy, f *float32, n int) { panic(noAsm) }
func reluGradF64(out, dy, f *float64, n int) { panic(noAsm) }
