//go:build amd64 && !noasm

#include "textflag.h"

// Register use in sgemmKernelRows6x16:
//   R8..R13  the six rows of A for the current segment
//   AX  A's data (plus the start offset), DX the zero buffer
//   SI  offsets of the current segment (six, one per row)
//   DI  segments remaining, CX steps remaining in the segment
//   BX  packed B (64 bytes per step of k)
//   Y0..Y11  accumulators, as in sgemmKernel6x16

// One step of k: ao is the byte offset into the rows, bo into B.
#define RSTEP(ao, bo) \
	VMOVUPS bo(BX), Y12; \
	VMOVUPS bo+32(BX), Y13; \
	VBROADCASTSS ao(R8), Y14; \
	VFMADD231PS Y12, Y14, Y0; \
	VFMADD231PS Y13, Y14, Y1; \
	VBROADCASTSS ao(R9), Y15; \
	VFMADD231PS Y12, Y15, Y2; \
	VFMADD231PS Y13, Y15, Y3; \
	VBROADCASTSS ao(R10), Y14; \
	VFMADD231PS Y12, Y14, Y4; \
	VFMADD231PS Y13, Y14, Y5; \
	VBROADCASTSS ao(R11), Y15; \
	VFMADD231PS Y12, Y15, Y6; \
	VFMADD231PS Y13, Y15, Y7; \
	VBROADCASTSS ao(R12), Y14; \
	VFMADD231PS Y12, Y14, Y8; \
	VFMADD231PS Y13, Y14, Y9; \
	VBROADCASTSS ao(R13), Y15; \
	VFMADD231PS Y12, Y15, Y10; \
	VFMADD231PS Y13, Y15, Y11

// Row pointer from an offset: AX + 4*off, or the zero buffer if off < 0;
// an offset past limit aborts the kernel.
#define ROWPTR(o, r) \
	MOVQ o(SI), r; \
	CMPQ r, limit+88(FP); \
	JGT  r_bad; \
	TESTQ r, r; \
	LEAQ (AX)(r*4), r; \
	CMOVQLT DX, r

#define ADVANCE(n) \
	ADDQ $n, R8; \
	ADDQ $n, R9; \
	ADDQ $n, R10; \
	ADDQ $n, R11; \
	ADDQ $n, R12; \
	ADDQ $n, R13

// Store rows as in kernel_amd64.s.
#define RSTORE0(lo, hi) \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, 32(DI); \
	ADDQ DX, DI

#define RSTOREB(lo, hi) \
	VFMADD231PS (DI), Y15, lo; \
	VFMADD231PS 32(DI), Y15, hi; \
	VMOVUPS lo, (DI); \
	VMOVUPS hi, 32(DI); \
	ADDQ DX, DI

// func sgemmKernelRows6x16(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool)
//
// The 6×16 float32 micro-kernel with A read in place: for segment t <
// nseg, row i of A is seglen elements at a[offs[t*ldo+i]+start], or the
// zero buffer when that offset is negative. B is packed (16 per step of
// k, nseg*seglen steps), C as in sgemmKernel6x16. At the first offset
// greater than limit it returns bad = true without writing C.
TEXT ·sgemmKernelRows6x16(SB), NOSPLIT, $0-97
	MOVQ c+64(FP), DI
	MOVQ ldc+72(FP), DX
	SHLQ $2, DX
	// Bring the C tile towards L1 while the loop runs.
	MOVQ DI, R8
	PREFETCHT0 (R8)
	PREFETCHT0 63(R8)
	ADDQ DX, R8
	PREFETCHT0 (R8)
	PREFETCHT0 63(R8)
	ADDQ DX, R8
	PREFETCHT0 (R8)
	PREFETCHT0 63(R8)
	ADDQ DX, R8
	PREFETCHT0 (R8)
	PREFETCHT0 63(R8)
	ADDQ DX, R8
	PREFETCHT0 (R8)
	PREFETCHT0 63(R8)
	ADDQ DX, R8
	PREFETCHT0 (R8)
	PREFETCHT0 63(R8)

	MOVQ nseg+0(FP), DI
	MOVQ offs+24(FP), SI
	MOVQ a+40(FP), AX
	MOVQ start+16(FP), DX
	LEAQ (AX)(DX*4), AX
	MOVQ zero+48(FP), DX
	MOVQ b+56(FP), BX

	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

	TESTQ DI, DI
	JZ    r_store

r_seg:
	ROWPTR(0, R8)
	ROWPTR(8, R9)
	ROWPTR(16, R10)
	ROWPTR(24, R11)
	ROWPTR(32, R12)
	ROWPTR(40, R13)

	MOVQ seglen+8(FP), CX
	SHRQ $2, CX
	JZ   r_tail

r_loop4:
	RSTEP(0, 0)
	RSTEP(4, 64)
	RSTEP(8, 128)
	RSTEP(12, 192)
	ADVANCE(16)
	ADDQ $256, BX
	DECQ CX
	JNZ  r_loop4

r_tail:
	MOVQ seglen+8(FP), CX
	ANDQ $3, CX
	JZ   r_next

r_loop1:
	RSTEP(0, 0)
	ADVANCE(4)
	ADDQ $64, BX
	DECQ CX
	JNZ  r_loop1

r_next:
	MOVQ ldo+32(FP), CX
	LEAQ (SI)(CX*8), SI
	DECQ DI
	JNZ  r_seg

r_store:
	MOVQ c+64(FP), DI
	MOVQ ldc+72(FP), DX
	SHLQ $2, DX

	VBROADCASTSS alpha+80(FP), Y14
	VMULPS Y14, Y0, Y0
	VMULPS Y14, Y1, Y1
	VMULPS Y14, Y2, Y2
	VMULPS Y14, Y3, Y3
	VMULPS Y14, Y4, Y4
	VMULPS Y14, Y5, Y5
	VMULPS Y14, Y6, Y6
	VMULPS Y14, Y7, Y7
	VMULPS Y14, Y8, Y8
	VMULPS Y14, Y9, Y9
	VMULPS Y14, Y10, Y10
	VMULPS Y14, Y11, Y11

	MOVL beta+84(FP), R8
	SHLL $1, R8 // drop the sign bit: -0 counts as 0
	JZ   r_beta0

	VBROADCASTSS beta+84(FP), Y15
	RSTOREB(Y0, Y1)
	RSTOREB(Y2, Y3)
	RSTOREB(Y4, Y5)
	RSTOREB(Y6, Y7)
	RSTOREB(Y8, Y9)
	RSTOREB(Y10, Y11)
	MOVB $0, bad+96(FP)
	VZEROUPPER
	RET

r_beta0:
	RSTORE0(Y0, Y1)
	RSTORE0(Y2, Y3)
	RSTORE0(Y4, Y5)
	RSTORE0(Y6, Y7)
	RSTORE0(Y8, Y9)
	RSTORE0(Y10, Y11)
	MOVB $0, bad+96(FP)
	VZEROUPPER
	RET

r_bad:
	MOVB $1, bad+96(FP)
	VZEROUPPER
	RET

// func gatherRows64F32(dst, a, zero *float32, offs *int, n, delta, limit int) (bad bool)
//
// Copies n rows of 64 bytes into consecutive rows of dst: row r from
// a[offs[r]+delta], or from the zero buffer when offs[r] < 0. An offset
// greater than limit stops the copy and returns bad = true.
TEXT ·gatherRows64F32(SB), NOSPLIT, $0-57
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), AX
	MOVQ zero+16(FP), DX
	MOVQ offs+24(FP), SI
	MOVQ n+32(FP), CX
	MOVQ delta+40(FP), R8
	LEAQ (AX)(R8*4), AX
	TESTQ CX, CX
	JZ   g32_done

g32_loop:
	MOVQ  (SI), R9
	CMPQ  R9, limit+48(FP)
	JGT   g32_bad
	TESTQ R9, R9
	LEAQ  (AX)(R9*4), R9
	CMOVQLT DX, R9
	VMOVUPS (R9), Y0
	VMOVUPS 32(R9), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    $8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     g32_loop

g32_done:
	MOVB $0, bad+56(FP)
	VZEROUPPER
	RET

g32_bad:
	MOVB $1, bad+56(FP)
	VZEROUPPER
	RET

// func gatherRows64F64(dst, a, zero *float64, offs *int, n, delta, limit int) (bad bool)
//
// gatherRows64F32 for float64 elements.
TEXT ·gatherRows64F64(SB), NOSPLIT, $0-57
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), AX
	MOVQ zero+16(FP), DX
	MOVQ offs+24(FP), SI
	MOVQ n+32(FP), CX
	MOVQ delta+40(FP), R8
	LEAQ (AX)(R8*8), AX
	TESTQ CX, CX
	JZ   g64_done

g64_loop:
	MOVQ  (SI), R9
	CMPQ  R9, limit+48(FP)
	JGT   g64_bad
	TESTQ R9, R9
	LEAQ  (AX)(R9*8), R9
	CMOVQLT DX, R9
	VMOVUPD (R9), Y0
	VMOVUPD 32(R9), Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    $8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     g64_loop

g64_done:
	MOVB $0, bad+56(FP)
	VZEROUPPER
	RET

g64_bad:
	MOVB $1, bad+56(FP)
	VZEROUPPER
	RET
