//go:build amd64 && !noasm

package dwconv

import "github.com/tapegrad/tapegrad/internal/cpu"

// Enabled reports whether the AVX2/FMA assembly kernels run on this CPU.
// When it is false the exported functions run their portable Go loops,
// and callers with faster loops of their own should use those instead.
var Enabled = cpu.X86.AVX2FMA

// The assembly kernels (kernel_amd64.s). The exported wrappers in
// dwconv.go check every bound they rely on; the contracts are theirs,
// with px = c·4 the pixel stride in bytes and nb ≥ 1 channel blocks of 8.

// Every kernel with pf, pfend and pfk arguments also prefetches the lines
// of [pf, pfend) into the L2 cache (PREFETCHT2), up to pfk groups of four
// lines after each block of pixels and channels (pixel pair and channel
// block for the filter kernels). L2 rather than L1: on W5 and W6 PREFETCHT0 ran
// 1.3–1.6× slower (the prefetches then compete with the kernels' own L1
// misses, and the lines are needed a row later).

//go:noescape
func fwd3x3S1(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

//go:noescape
func fwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

// bwd3x3S2 reads out_backprop rows x0..x2 and computes npix pixel pairs.
//
//go:noescape
func bwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

//
//go:noescape
func filt3x3S1(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

//go:noescape
func filt3x3S2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

//go:noescape
func dotTaps(o *float32, xs, ts **float32, n, nb int)

//go:noescape
func axpyTaps(acc, xs **float32, n int, dy *float32, nb int)

//go:noescape
func addF64(dst *float64, src *float32, n int)

//go:noescape
func prefetch(p *float32, n int)
