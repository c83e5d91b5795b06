//go:build amd64 && !noasm && !gccgo && !safe

package dwconv

import "github.com/tapegrad/tapegrad/internal/cpu"

// useAsm reports whether the AVX2/FMA assembly kernels run on this CPU.
// When it is false the exported kernels run their portable Go loops
// (kernel_go.go) and Forward, BackpropInput and BackpropFilter their Go
// paths (loops.go); tests switch it off to compare both.
var useAsm = cpu.X86.AVX2FMA

// The assembly kernels (avx2_amd64.s, declared in avx2_amd64.go) are
// written by asmgen; kernel_noasm.go holds Go twins of the same names for
// other builds. The exported wrappers in dwconv.go check every bound they
// rely on; the contracts are theirs, with px = c·4 the pixel stride in
// bytes and nb ≥ 1 channel blocks of 8.
//
// Every kernel with pf, pfend and pfk arguments also prefetches the lines
// of [pf, pfend) into the L2 cache (PREFETCHT2), up to pfk groups of four
// lines after each block of pixels and channels (pixel pair and channel
// block for the filter kernels). L2 rather than L1: on W5 and W6 PREFETCHT0 ran
// 1.3–1.6× slower (the prefetches then compete with the kernels' own L1
// misses, and the lines are needed a row later).
