//go:build !amd64 || noasm

package ewkern

import "unsafe"

// bulkOK is true: the Go twins of the assembly routines run on any CPU.
const bulkOK = true

// The Go twins of the assembly routines of kernel_amd64.s, with their
// names and signatures: each runs the portable loop over n elements.

// reluF32 is, for i < n, out[i] = max(x[i], 0) (ReluGo).
func reluF32(out, x *float32, n int) {
	ReluGo(unsafe.Slice(out, n), unsafe.Slice(x, n))
}

// reluF64 is reluF32 for float64.
func reluF64(out, x *float64, n int) {
	ReluGo(unsafe.Slice(out, n), unsafe.Slice(x, n))
}

// reluGradF32 is, for i < n, out[i] = dy[i] · (f[i] > 0 ? 1 : 0)
// (ReluGradGo).
func reluGradF32(out, dy, f *float32, n int) {
	ReluGradGo(unsafe.Slice(out, n), unsafe.Slice(dy, n), unsafe.Slice(f, n))
}

// reluGradF64 is reluGradF32 for float64.
func reluGradF64(out, dy, f *float64, n int) {
	ReluGradGo(unsafe.Slice(out, n), unsafe.Slice(dy, n), unsafe.Slice(f, n))
}
