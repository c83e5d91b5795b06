//go:build amd64 && !noasm

package ewkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// Enabled reports whether the AVX2 kernels run on this CPU.
var Enabled = cpu.X86.AVX2FMA

// The assembly kernels (kernel_amd64.s) process n elements, n a multiple
// of 8 (float32) or 4 (float64).

//go:noescape
func reluF32(out, x *float32, n int)

//go:noescape
func reluF64(out, x *float64, n int)

//go:noescape
func reluGradF32(out, dy, f *float32, n int)

//go:noescape
func reluGradF64(out, dy, f *float64, n int)
