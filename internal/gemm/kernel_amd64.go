//go:build amd64 && !noasm

package gemm

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// asmSupported reports whether the CPU runs the AVX2/FMA micro-kernels.
var asmSupported = cpu.X86.AVX2FMA

// sgemmKernel6x16 is the float32 micro-kernel in kernel_amd64.s: a 6×16
// tile, a packed with stride 6 and b with stride 16 per step of k (k >= 1).
// c points at the tile's first element, ldc is C's row stride in elements.
// beta == ±0 means C is not read.
//
//go:noescape
func sgemmKernel6x16(k int, a, b, c *float32, ldc int, alpha, beta float32)

// dgemmKernel6x8 is the float64 micro-kernel: a 6×8 tile, a with stride 6
// and b with stride 8 per step of k.
//
//go:noescape
func dgemmKernel6x8(k int, a, b, c *float64, ldc int, alpha, beta float64)

// The kernelFunc wrappers check every bound the assembly relies on.
var (
	asmKernel32 kernelFunc[float32] = func(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
		_ = a[kc*mr-1]
		_ = b[kc*16-1]
		_ = c[(mr-1)*ldc+15]
		sgemmKernel6x16(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
	}
	asmKernel64 kernelFunc[float64] = func(kc int, a, b, c []float64, ldc int, alpha, beta float64) {
		_ = a[kc*mr-1]
		_ = b[kc*8-1]
		_ = c[(mr-1)*ldc+7]
		dgemmKernel6x8(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
	}
)

// packA6x8F32 packs six rows of A (row stride lda), 8*n8 columns, into dst
// with each column's six elements contiguous (pack_amd64.s).
//
//go:noescape
func packA6x8F32(dst, src *float32, lda, n8 int)

// packA6x4F64 is packA6x8F32 for float64, 4*n4 columns.
//
//go:noescape
func packA6x4F64(dst, src *float64, lda, n4 int)

// packRows6Asm packs the first columns of six rows of A, starting at
// a[base] with row stride lda, into d (d[p*6+i] = a[base+i*lda+p]) with the
// assembly routines, and returns how many of the kc columns it packed.
// The caller has checked that a holds the six rows of kc columns and d
// holds 6*kc elements.
func packRows6Asm[T Float](d, a []T, base, lda, kc int) int {
	var z T
	switch any(z).(type) {
	case float32:
		n := kc / 8
		if n > 0 {
			_, _ = d[6*8*n-1], a[base+5*lda+8*n-1]
			packA6x8F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(&a[base])), lda, n)
		}
		return 8 * n
	default:
		n := kc / 4
		if n > 0 {
			_, _ = d[6*4*n-1], a[base+5*lda+4*n-1]
			packA6x4F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(&a[base])), lda, n)
		}
		return 4 * n
	}
}

// packAT6F32 packs six contiguous columns of kc rows of a float32 matrix
// (row stride lda) into dst: dst[p*6+i] = src[p*lda+i] (pack_amd64.s).
//
//go:noescape
func packAT6F32(dst, src *float32, lda, kc int)

// packAT6F64 is packAT6F32 for float64.
//
//go:noescape
func packAT6F64(dst, src *float64, lda, kc int)

// packCols6Asm packs d[p*6+i] = a[base+p*lda+i] for p < kc, i < 6 with the
// assembly routines. The caller has checked that a and d are long enough.
func packCols6Asm[T Float](d, a []T, base, lda, kc int) {
	_, _ = d[6*kc-1], a[base+(kc-1)*lda+5]
	var z T
	switch any(z).(type) {
	case float32:
		packAT6F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(&a[base])), lda, kc)
	default:
		packAT6F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(&a[base])), lda, kc)
	}
}

// copyRows64 copies n rows of 64 bytes, stride bytes apart in src, to
// consecutive rows of dst (pack_amd64.s).
//
//go:noescape
func copyRows64(dst, src *byte, stride, n int)

// packBPanelAsm packs a full B micro-panel from a non-transposed B:
// d[p*nr:(p+1)*nr] = b[base+p*ldb : base+p*ldb+nr] for p < kc, nr*size
// being 64 bytes. The caller has checked the bounds.
func packBPanelAsm[T Float](d, b []T, base, ldb, kc int) {
	var z T
	size := int(unsafe.Sizeof(z))
	nr := 64 / size
	_, _ = d[kc*nr-1], b[base+(kc-1)*ldb+nr-1]
	copyRows64((*byte)(unsafe.Pointer(&d[0])), (*byte)(unsafe.Pointer(&b[base])), ldb*size, kc)
}
