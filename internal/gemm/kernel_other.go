//go:build !amd64 || noasm

package gemm

// Without assembly kernels the portable Go kernel is always used.
var (
	asmSupported                     = false
	asmKernel32  kernelFunc[float32] = nil
	asmKernel64  kernelFunc[float64] = nil
)

// packRows6Asm packs nothing without assembly; the Go loop does it all.
func packRows6Asm[T Float](d, a []T, base, lda, kc int) int { return 0 }

// packColsAsm is never called without assembly (useAsm is false).
func packColsAsm[T Float](d, a []T, base, lda, kc, m int) int {
	panic("gemm: packColsAsm without assembly")
}

// packBPanelAsm is never called without assembly (useAsm is false).
func packBPanelAsm[T Float](d, b []T, base, ldb, kc int) {
	panic("gemm: packBPanelAsm without assembly")
}

// rowsKernelFunc is the in-place Rows kernel type; without assembly A is
// always packed (rowsKernel returns nil).
type rowsKernelFunc[T Float] func(rk rowsCall, offs []int, ld, seg int, data, b, c []T, ldc int, alpha, beta T)

func rowsKernel[T Float]() rowsKernelFunc[T] { return nil }

// gatherRows64 is never called without assembly (useAsm is false).
func gatherRows64[T Float](d, data []T, offs []int, delta, seg, kc int) {
	panic("gemm: gatherRows64 without assembly")
}

// stridedKernel returns nil without assembly: edge tiles run the full
// kernel on a buffer and a transposed A is always packed.
func stridedKernel[T Float]() stridedKernelFunc[T] { return nil }
