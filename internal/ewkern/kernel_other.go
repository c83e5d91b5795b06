//go:build !amd64 || noasm || gccgo || safe

package ewkern

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// tier is cpu.Tier(), as on amd64, so that tests can switch it; the Go
// twins below run whatever it says.
var tier = cpu.Tier()

// bulkLen returns how many of n elements (lanes per 256-bit vector) the Go
// twins take: the whole vectors, as the AVX2 routines do.
func bulkLen(n, lanes int) int { return n &^ (lanes - 1) }

// The Go twins of the routines of kernel_amd64.go, with their
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

// addToF32 is, for i < n, dst[i] = dst[i] + src[i] (AddToGo).
func addToF32(dst, src *float32, n int) {
	AddToGo(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}

// addToF64 is addToF32 for float64.
func addToF64(dst, src *float64, n int) {
	AddToGo(unsafe.Slice(dst, n), unsafe.Slice(src, n))
}
