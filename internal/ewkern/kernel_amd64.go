//go:build amd64 && !noasm

package ewkern

import "github.com/tapegrad/tapegrad/internal/cpu"

// bulkOK reports whether Relu and ReluGrad may hand their bulk to the
// assembly routines: they use AVX2, which this CPU must have.
var bulkOK = cpu.X86.AVX2FMA

// The assembly routines (kernel_amd64.s) process n elements, n a multiple
// of 8 (float32) or 4 (float64). Their Go twins are in kernel_other.go.

// reluF32 is, for i < n, out[i] = max(x[i], 0) as ReluGo computes it.
//
//go:noescape
func reluF32(out, x *float32, n int)

// reluF64 is reluF32 for float64.
//
//go:noescape
func reluF64(out, x *float64, n int)

// reluGradF32 is, for i < n, out[i] = dy[i] · (f[i] > 0 ? 1 : 0) as
// ReluGradGo computes it.
//
//go:noescape
func reluGradF32(out, dy, f *float32, n int)

// reluGradF64 is reluGradF32 for float64.
//
//go:noescape
func reluGradF64(out, dy, f *float64, n int)
