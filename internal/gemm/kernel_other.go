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

// packCols6Asm is never called without assembly (useAsm is false).
func packCols6Asm[T Float](d, a []T, base, lda, kc int) {
	panic("gemm: packCols6Asm without assembly")
}

// packBPanelAsm is never called without assembly (useAsm is false).
func packBPanelAsm[T Float](d, b []T, base, ldb, kc int) {
	panic("gemm: packBPanelAsm without assembly")
}
