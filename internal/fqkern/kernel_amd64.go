//go:build amd64 && !noasm

package fqkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// Enabled reports whether the assembly kernels (float32 and float64) run
// on this CPU (AVX2; cpu.X86.AVX2FMA also requires FMA, which they do not
// use).
var Enabled = cpu.X86.AVX2FMA

// The assembly kernels (kernel_amd64.s), with the contract of fqkern.go:
// tab points at the first table position, rows l floats apart; rows rows
// of n ≥ 1 elements. acc points at the below sum of the first position,
// its above sum l float64 further. The 64 kernels are the 32 ones for
// float64 elements.

//go:noescape
func fwd32(y, x, tab *float32, l, n, rows int)

//go:noescape
func fwdDiv32(y, x, tab *float32, l, n, rows int)

//go:noescape
func grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64)

//go:noescape
func adj32(out, dbi, x, tab *float32, l, n, rows int)

//go:noescape
func fwd64(y, x, tab *float64, l, n, rows int)

//go:noescape
func fwdDiv64(y, x, tab *float64, l, n, rows int)

//go:noescape
func grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64)

//go:noescape
func adj64(out, dbi, x, tab *float64, l, n, rows int)
