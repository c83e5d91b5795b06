//go:build amd64 && !noasm && !gccgo && !safe

package dwconv

import "github.com/tapegrad/tapegrad/internal/cpu"

// tier is the instruction-set tier the package runs: cpu.Tier() (the
// best the CPU has, capped by TAPEGRAD_ISA), chosen once at start-up.
// Tests switch it to run every tier the CPU has.
var tier = cpu.Tier()

// useAsm reports whether the assembly kernels run: true from the AVX2
// tier up. When it is false the exported kernels run their portable Go
// loops (kernel_go.go) and Forward, BackpropInput and BackpropFilter
// their Go paths (loops.go); tests switch it off to compare both.
var useAsm = tier >= cpu.AVX2

// The assembly kernels (avx2_amd64.s, avx512_amd64.s, declared in
// avx2_amd64.go and avx512_amd64.go) are written by asmgen from one
// description of each kernel; kernel_noasm.go holds Go twins of the same
// names for other builds. The exported wrappers in dwconv.go check every
// bound they rely on and pick the tier; the contracts are theirs, with
// px = c·4 the pixel stride in bytes.
//
// Every kernel with pf, pfend and pfk arguments also prefetches the lines
// of [pf, pfend) into the L2 cache (PREFETCHT2), up to pfk groups of four
// lines after each block of pixels and channels (pixel pair and channel
// block for the filter kernels). L2 rather than L1: on W5 and W6 PREFETCHT0 ran
// 1.3–1.6× slower (the prefetches then compete with the kernels' own L1
// misses, and the lines are needed a row later).
