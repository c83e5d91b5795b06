//go:build amd64 && !noasm

#include "textflag.h"

// dgemmKernelRows6x8: the float64 version of sgemmKernelRows6x16
// (rows_amd64.s), on a 6×8 tile (8 doubles per row of B and C), with the
// same register use.

// One step of k: ao is the byte offset into the rows, bo into B.
#define DRSTEP(ao, bo) \
	VMOVUPD bo(BX), Y12; \
	VMOVUPD bo+32(BX), Y13; \
	VBROADCASTSD ao(R8), Y14; \
	VFMADD231PD Y12, Y14, Y0; \
	VFMADD231PD Y13, Y14, Y1; \
	VBROADCASTSD ao(R9), Y15; \
	VFMADD231PD Y12, Y15, Y2; \
	VFMADD231PD Y13, Y15, Y3; \
	VBROADCASTSD ao(R10), Y14; \
	VFMADD231PD Y12, Y14, Y4; \
	VFMADD231PD Y13, Y14, Y5; \
	VBROADCASTSD ao(R11), Y15; \
	VFMADD231PD Y12, Y15, Y6; \
	VFMADD231PD Y13, Y15, Y7; \
	VBROADCASTSD ao(R12), Y14; \
	VFMADD231PD Y12, Y14, Y8; \
	VFMADD231PD Y13, Y14, Y9; \
	VBROADCASTSD ao(R13), Y15; \
	VFMADD231PD Y12, Y15, Y10; \
	VFMADD231PD Y13, Y15, Y11

// Row pointer from an offset: AX + 8*off, or the zero buffer if off < 0;
// an offset past limit aborts the kernel.
#define DROWPTR(o, r) \
	MOVQ o(SI), r; \
	CMPQ r, limit+96(FP); \
	JGT  dr_bad; \
	TESTQ r, r; \
	LEAQ (AX)(r*8), r; \
	CMOVQLT DX, r

#define DADVANCE(n) \
	ADDQ $n, R8; \
	ADDQ $n, R9; \
	ADDQ $n, R10; \
	ADDQ $n, R11; \
	ADDQ $n, R12; \
	ADDQ $n, R13

// Store rows as in kernel_amd64.s.
#define DRSTORE0(lo, hi) \
	VMOVUPD lo, (DI); \
	VMOVUPD hi, 32(DI); \
	ADDQ DX, DI

#define DRSTOREB(lo, hi) \
	VFMADD231PD (DI), Y15, lo; \
	VFMADD231PD 32(DI), Y15, hi; \
	VMOVUPD lo, (DI); \
	VMOVUPD hi, 32(DI); \
	ADDQ DX, DI

// func dgemmKernelRows6x8(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float64, ldc int, alpha, beta float64, limit int) (bad bool)
//
// The float64 version of sgemmKernelRows6x16: a 6×8 tile, B packed with 8
// elements per step of k, C as in dgemmKernel6x8.
TEXT ·dgemmKernelRows6x8(SB), NOSPLIT, $0-105
	MOVQ c+64(FP), DI
	MOVQ ldc+72(FP), DX
	SHLQ $3, DX
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
	LEAQ (AX)(DX*8), AX
	MOVQ zero+48(FP), DX
	MOVQ b+56(FP), BX

	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11

	TESTQ DI, DI
	JZ    dr_store

dr_seg:
	DROWPTR(0, R8)
	DROWPTR(8, R9)
	DROWPTR(16, R10)
	DROWPTR(24, R11)
	DROWPTR(32, R12)
	DROWPTR(40, R13)

	MOVQ seglen+8(FP), CX
	SHRQ $2, CX
	JZ   dr_tail

dr_loop4:
	DRSTEP(0, 0)
	DRSTEP(8, 64)
	DRSTEP(16, 128)
	DRSTEP(24, 192)
	DADVANCE(32)
	ADDQ $256, BX
	DECQ CX
	JNZ  dr_loop4

dr_tail:
	MOVQ seglen+8(FP), CX
	ANDQ $3, CX
	JZ   dr_next

dr_loop1:
	DRSTEP(0, 0)
	DADVANCE(8)
	ADDQ $64, BX
	DECQ CX
	JNZ  dr_loop1

dr_next:
	MOVQ ldo+32(FP), CX
	LEAQ (SI)(CX*8), SI
	DECQ DI
	JNZ  dr_seg

dr_store:
	MOVQ c+64(FP), DI
	MOVQ ldc+72(FP), DX
	SHLQ $3, DX

	VBROADCASTSD alpha+80(FP), Y14
	VMULPD Y14, Y0, Y0
	VMULPD Y14, Y1, Y1
	VMULPD Y14, Y2, Y2
	VMULPD Y14, Y3, Y3
	VMULPD Y14, Y4, Y4
	VMULPD Y14, Y5, Y5
	VMULPD Y14, Y6, Y6
	VMULPD Y14, Y7, Y7
	VMULPD Y14, Y8, Y8
	VMULPD Y14, Y9, Y9
	VMULPD Y14, Y10, Y10
	VMULPD Y14, Y11, Y11

	MOVQ beta+88(FP), R8
	SHLQ $1, R8 // drop the sign bit: -0 counts as 0
	JZ   dr_beta0

	VBROADCASTSD beta+88(FP), Y15
	DRSTOREB(Y0, Y1)
	DRSTOREB(Y2, Y3)
	DRSTOREB(Y4, Y5)
	DRSTOREB(Y6, Y7)
	DRSTOREB(Y8, Y9)
	DRSTOREB(Y10, Y11)
	MOVB $0, bad+104(FP)
	VZEROUPPER
	RET

dr_beta0:
	DRSTORE0(Y0, Y1)
	DRSTORE0(Y2, Y3)
	DRSTORE0(Y4, Y5)
	DRSTORE0(Y6, Y7)
	DRSTORE0(Y8, Y9)
	DRSTORE0(Y10, Y11)
	MOVB $0, bad+104(FP)
	VZEROUPPER
	RET

dr_bad:
	MOVB $1, bad+104(FP)
	VZEROUPPER
	RET

