//go:build !noasm && !gccgo && !safe

package dwconv

import "github.com/tapegrad/tapegrad/internal/cpu"

// useAsm reports whether the AVX2/FMA assembly kernels run on this CPU.
// When it is false the exported kernels run their portable Go loops
// (kernel_go.go) and Forward, BackpropInput and BackpropFilter their Go
// paths (loops.go); tests switch it off to compare both.
var useAsm = cpu.X86.AVX2FMA

// The assembly kernels (kernel_amd64.s), with Go twins of the same names
// in kernel_noasm.go for other builds. The exported wrappers in dwconv.go
// check every bound they rely on; the contracts are theirs, with
// px = c·4 the pixel stride in bytes and nb ≥ 1 channel blocks of 8.

// Every kernel with pf, pfend and pfk arguments also prefetches the lines
// of [pf, pfend) into the L2 cache (PREFETCHT2), up to pfk groups of four
// lines after each block of pixels and channels (pixel pair and channel
// block for the filter kernels). L2 rather than L1: on W5 and W6 PREFETCHT0 ran
// 1.3–1.6× slower (the prefetches then compete with the kernels' own L1
// misses, and the lines are needed a row later).

// fwd3x3S1 is fwd3x3Go at stride 1 (Fwd3x3), with fused multiply-adds.
//
//go:noescape
func fwd3x3S1(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

// fwd3x3S2 is fwd3x3Go at stride 2 (Fwd3x3), with fused multiply-adds.
//
//go:noescape
func fwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

// bwd3x3S2 is bwd3x3S2Go (BwdInput3x3S2) on npix pixel pairs, the
// out_backprop rows in x0..x2, with fused multiply-adds.
//
//go:noescape
func bwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

// filt3x3S1 is filter3x3Go at stride 1 (Filter3x3), with fused
// multiply-adds.
//
//go:noescape
func filt3x3S1(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

// filt3x3S2 is filter3x3Go at stride 2 (Filter3x3), with fused
// multiply-adds.
//
//go:noescape
func filt3x3S2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int)

// dotTaps is dotTapsGo (DotTaps) on the n inputs and taps at xs and ts,
// with fused multiply-adds.
//
//go:noescape
func dotTaps(o *float32, xs, ts **float32, n, nb int)

// axpyTaps is axpyTapsGo (AxpyTaps) with the accumulators of tap i at
// acc[i] and its inputs at xs[i], with fused multiply-adds.
//
//go:noescape
func axpyTaps(acc, xs **float32, n int, dy *float32, nb int)

// addF64 adds the n float32 at src, widened, to the n float64 at dst
// (AddF64).
//
//go:noescape
func addF64(dst *float64, src *float32, n int)

// prefetch brings the n bytes at p into the L2 cache (Prefetch).
//
//go:noescape
func prefetch(p *float32, n int)
