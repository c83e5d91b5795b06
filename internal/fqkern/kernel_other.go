//go:build !amd64 || noasm

package fqkern

// Enabled is false without assembly kernels: every call runs the portable
// Go loops.
var Enabled = false

// The assembly entry points are never called when Enabled is false.

const noAsm = "fqkern: assembly kernel called without assembly support"

func fwd32(y, x, tab *float32, l, n, rows int)                     { panic(noAsm) }
func fwdDiv32(y, x, tab *float32, l, n, rows int)                  { panic(noAsm) }
func grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64) { panic(noAsm) }
func adj32(out, dbi, x, tab *float32, l, n, rows int)              { panic(noAsm) }
func fwd64(y, x, tab *float64, l, n, rows int)                     { panic(noAsm) }
func fwdDiv64(y, x, tab *float64, l, n, rows int)                  { panic(noAsm) }
func grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64) { panic(noAsm) }
func adj64(out, dbi, x, tab *float64, l, n, rows int)              { panic(noAsm) }
