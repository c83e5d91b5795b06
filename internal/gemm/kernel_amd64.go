//go:build amd64 && !noasm

package gemm

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// asmSupported reports whether the CPU runs the AVX2/FMA micro-kernels.
var asmSupported = cpu.X86.AVX2FMA

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

// packColsAsm packs the panels of rows [0, m) of op(A) = Aᵀ (A stored
// k×m): d[q*6*kc+p*6+i] = a[base+p*lda+q*6+i] for p < kc, i < 6, zeros
// for rows past m, with the assembly routines. It returns how many rows
// it packed (whole panels; for float32 all of them). The caller has
// checked that a and d are long enough.
func packColsAsm[T Float](d, a []T, base, lda, kc, m int) int {
	np := m / mr
	var z T
	switch any(z).(type) {
	case float32:
		var mask *[8]int32
		var mk [8]int32
		if rem := m - np*mr; rem > 0 {
			for i := range rem {
				mk[i] = -1
			}
			mask = &mk
		}
		if np == 0 && mask == nil || kc == 0 {
			return m
		}
		_, _ = d[ceilDiv(m, mr)*mr*kc-1], a[base+(kc-1)*lda+m-1]
		packAT6NF32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(&a[base])), lda, kc, np, mask)
		return m
	default:
		if np == 0 || kc == 0 {
			return 0
		}
		_, _ = d[np*mr*kc-1], a[base+(kc-1)*lda+np*mr-1]
		packAT6NF64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(&a[base])), lda, kc, np)
		return np * mr
	}
}

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

// The strided-A micro-kernels (kernels_amd64.s): the first N rows (N = 2,
// 4 or 6) of a 6×16 (float32) or 6×8 (float64) tile, A element (i, p) at
// a[p*lda+i], B packed as for sgemmKernel6x16 / dgemmKernel6x8, C as
// there. They give every element of C the bits of the full kernels.

// stridedKernel returns the strided-A kernel for T, or nil where there is
// none (no assembly).
func stridedKernel[T Float]() stridedKernelFunc[T] {
	if !asmSupported {
		return nil
	}
	var z T
	if _, ok := any(z).(float32); ok {
		return any(stridedKernelFunc[float32](asmStrided32)).(stridedKernelFunc[T])
	}
	return any(stridedKernelFunc[float64](asmStrided64)).(stridedKernelFunc[T])
}

// checkStrided checks the bounds the strided kernels rely on.
func checkStrided(rows, kc, na, lda, nb, nr, nc, ldc int) {
	if kc < 1 || lda < rows || na < (kc-1)*lda+rows || nb < kc*nr || nc < (rows-1)*ldc+nr {
		panic("gemm: bad strided tile")
	}
}

func asmStrided32(rows, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32) {
	checkStrided(rows, kc, len(a), lda, len(b), 16, len(c), ldc)
	switch rows {
	case 2:
		sgemmKernelS2x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case 4:
		sgemmKernelS4x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case 6:
		sgemmKernelS6x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	default:
		panic("gemm: bad strided tile")
	}
}

func asmStrided64(rows, kc int, a []float64, lda int, b, c []float64, ldc int, alpha, beta float64) {
	checkStrided(rows, kc, len(a), lda, len(b), 8, len(c), ldc)
	switch rows {
	case 2:
		dgemmKernelS2x8(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case 4:
		dgemmKernelS4x8(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case 6:
		dgemmKernelS6x8(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	default:
		panic("gemm: bad strided tile")
	}
}
