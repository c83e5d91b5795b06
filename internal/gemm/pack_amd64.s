//go:build amd64 && !noasm

#include "textflag.h"

// Only VEX-encoded instructions: a legacy SSE instruction (MOVUPS, MOVQ X)
// after a 256-bit one has dirtied the upper YMM halves costs a state
// transition on some CPUs; mixing them in packAT6NF32's masked-panel loop
// (and packAT6NF64's) made those routines 30–70 times slower.

// func packA6x8F32(dst, src *float32, lda, n8 int)
//
// Packs six rows of a row-major float32 matrix (row stride lda elements),
// 8*n8 columns, into dst with the six elements of each column contiguous:
// dst[p*6+i] = src[i*lda+p]. Each group of 8 columns is a 6×8 transpose in
// registers, written as six 32-byte stores.
TEXT ·packA6x8F32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), AX
	MOVQ lda+16(FP), R8
	MOVQ n8+24(FP), CX
	SHLQ $2, R8
	LEAQ (AX)(R8*2), R9
	ADDQ R8, R9 // R9 = row 3
	LEAQ (R9)(R8*2), R10
	ADDQ R8, R10 // R10 = row 6, the next panel's first row
	LEAQ (R10)(R8*2), R11
	ADDQ R8, R11 // R11 = row 9
	TESTQ CX, CX
	JZ   pa32_done

pa32_loop:
	// Fetch the same columns of the next six rows: the next call packs
	// them, and each row segment is too short for hardware prefetch.
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(R8*1)
	PREFETCHT0 (R10)(R8*2)
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(R8*1)
	PREFETCHT0 (R11)(R8*2)
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(R8*1), Y1
	VMOVUPS (AX)(R8*2), Y2
	VMOVUPS (R9), Y3
	VMOVUPS (R9)(R8*1), Y4
	VMOVUPS (R9)(R8*2), Y5

	// t(2j), t(2j+1): rows 2j and 2j+1 interleaved; as 64-bit pairs
	// P(p) = (row 2j [p], row 2j+1 [p]):
	// lo = [P0 P1 | P4 P5], hi = [P2 P3 | P6 P7].
	VUNPCKLPS Y1, Y0, Y6
	VUNPCKHPS Y1, Y0, Y7
	VUNPCKLPS Y3, Y2, Y8
	VUNPCKHPS Y3, Y2, Y9
	VUNPCKLPS Y5, Y4, Y10
	VUNPCKHPS Y5, Y4, Y11

	// 16-byte chunks of the output in order, low lanes for columns 0..3,
	// high lanes for 4..7.
	VUNPCKLPD Y8, Y6, Y0       // [P01(0) P23(0)]
	VSHUFPD   $0x0A, Y6, Y10, Y1 // [P45(0) P01(1)]
	VUNPCKHPD Y10, Y8, Y2      // [P23(1) P45(1)]
	VUNPCKLPD Y9, Y7, Y3       // [P01(2) P23(2)]
	VSHUFPD   $0x0A, Y7, Y11, Y4 // [P45(2) P01(3)]
	VUNPCKHPD Y11, Y9, Y5      // [P23(3) P45(3)]

	VPERM2F128 $0x20, Y1, Y0, Y12
	VPERM2F128 $0x20, Y3, Y2, Y13
	VPERM2F128 $0x20, Y5, Y4, Y14
	VPERM2F128 $0x31, Y1, Y0, Y6
	VPERM2F128 $0x31, Y3, Y2, Y7
	VPERM2F128 $0x31, Y5, Y4, Y8
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, 32(DI)
	VMOVUPS Y14, 64(DI)
	VMOVUPS Y6, 96(DI)
	VMOVUPS Y7, 128(DI)
	VMOVUPS Y8, 160(DI)

	ADDQ $32, AX
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $192, DI
	DECQ CX
	JNZ  pa32_loop

pa32_done:
	VZEROUPPER
	RET

// func packA6x4F64(dst, src *float64, lda, n4 int)
//
// The float64 version of packA6x8F32, four columns per step.
TEXT ·packA6x4F64(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), AX
	MOVQ lda+16(FP), R8
	MOVQ n4+24(FP), CX
	SHLQ $3, R8
	LEAQ (AX)(R8*2), R9
	ADDQ R8, R9 // R9 = row 3
	LEAQ (R9)(R8*2), R10
	ADDQ R8, R10 // R10 = row 6, the next panel's first row
	LEAQ (R10)(R8*2), R11
	ADDQ R8, R11 // R11 = row 9
	TESTQ CX, CX
	JZ   pa64_done

pa64_loop:
	// Fetch the same columns of the next six rows: the next call packs
	// them, and each row segment is too short for hardware prefetch.
	PREFETCHT0 (R10)
	PREFETCHT0 (R10)(R8*1)
	PREFETCHT0 (R10)(R8*2)
	PREFETCHT0 (R11)
	PREFETCHT0 (R11)(R8*1)
	PREFETCHT0 (R11)(R8*2)
	VMOVUPD (AX), Y0
	VMOVUPD (AX)(R8*1), Y1
	VMOVUPD (AX)(R8*2), Y2
	VMOVUPD (R9), Y3
	VMOVUPD (R9)(R8*1), Y4
	VMOVUPD (R9)(R8*2), Y5

	// Pairs (row 2j [p], row 2j+1 [p]): lo = [p0 | p2], hi = [p1 | p3].
	VUNPCKLPD Y1, Y0, Y6
	VUNPCKHPD Y1, Y0, Y7
	VUNPCKLPD Y3, Y2, Y8
	VUNPCKHPD Y3, Y2, Y9
	VUNPCKLPD Y5, Y4, Y10
	VUNPCKHPD Y5, Y4, Y11

	VPERM2F128 $0x20, Y8, Y6, Y0   // column 0: rows 0-1, 2-3
	VPERM2F128 $0x20, Y7, Y10, Y1  // rows 4-5 of column 0, rows 0-1 of 1
	VPERM2F128 $0x20, Y11, Y9, Y2  // column 1: rows 2-3, 4-5
	VPERM2F128 $0x31, Y8, Y6, Y3   // column 2
	VPERM2F128 $0x31, Y7, Y10, Y4
	VPERM2F128 $0x31, Y11, Y9, Y5  // column 3
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, 128(DI)
	VMOVUPD Y5, 160(DI)

	ADDQ $32, AX
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $192, DI
	DECQ CX
	JNZ  pa64_loop

pa64_done:
	VZEROUPPER
	RET

// func copyRows64(dst, src *byte, stride, n int)
//
// Copies n rows of 64 bytes, src rows stride bytes apart, to consecutive
// 64-byte rows of dst: a full micro-panel of B (16 float32 or 8 float64
// per row) when B is not transposed.
TEXT ·copyRows64(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ stride+16(FP), R8
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ   cr_done

cr_loop:
	PREFETCHT0 (SI)(R8*8)
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     cr_loop

cr_done:
	VZEROUPPER
	RET

// func packAT6NF32(dst, src *float32, lda, kc, np int, mask *[8]int32)
//
// Packs np panels of six contiguous columns of a row-major float32 matrix
// (row stride lda), rows 0..kc-1, in one pass over the rows:
// dst[q*kc*6 + p*6 + i] = src[p*lda + q*6 + i]. Each row is read once
// for all panels, instead of once per panel. A non-nil mask adds one more
// panel of the columns whose mask lanes are set (the first ones), the
// others zero; masked-out lanes are not read.
TEXT ·packAT6NF32(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ kc+24(FP), CX
	MOVQ np+32(FP), R9
	MOVQ mask+40(FP), AX
	SHLQ $2, R8
	MOVQ R8, BX
	SHLQ $5, BX // prefetch 32 rows ahead
	LEAQ (CX)(CX*2), R10
	SHLQ $3, R10 // panel stride: kc*24 bytes
	TESTQ AX, AX
	JZ   patn32_nomask
	VMOVDQU (AX), Y15

patn32_nomask:
	TESTQ CX, CX
	JZ   patn32_done

patn32_row:
	PREFETCHT0 (SI)(BX*1)
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, R13
	TESTQ R13, R13
	JZ   patn32_partial

patn32_panel:
	VMOVUPS (R11), X0
	VMOVQ   16(R11), X1
	VMOVUPS X0, (R12)
	VMOVQ   X1, 16(R12)
	ADDQ   $24, R11
	ADDQ   R10, R12
	DECQ   R13
	JNZ    patn32_panel

patn32_partial:
	TESTQ AX, AX
	JZ   patn32_next
	VMASKMOVPS (R11), Y15, Y0
	VMOVUPS X0, (R12)
	VEXTRACTF128 $1, Y0, X1
	VMOVQ X1, 16(R12)

patn32_next:
	ADDQ R8, SI
	ADDQ $24, DI
	DECQ CX
	JNZ  patn32_row

patn32_done:
	VZEROUPPER
	RET

// func packAT6NF64(dst, src *float64, lda, kc, np int)
//
// The float64 version of packAT6NF32.
TEXT ·packAT6NF64(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ kc+24(FP), CX
	MOVQ np+32(FP), R9
	SHLQ $3, R8
	LEAQ (CX)(CX*2), R10
	SHLQ $4, R10 // panel stride: kc*48 bytes
	TESTQ CX, CX
	JZ   patn64_done
	TESTQ R9, R9
	JZ   patn64_done

patn64_row:
	PREFETCHT0 (SI)(R8*8)
	MOVQ SI, R11
	MOVQ DI, R12
	MOVQ R9, R13

patn64_panel:
	VMOVUPD (R11), Y0
	VMOVUPD 32(R11), X1
	VMOVUPD Y0, (R12)
	VMOVUPD X1, 32(R12)
	ADDQ    $48, R11
	ADDQ    R10, R12
	DECQ    R13
	JNZ     patn64_panel

	ADDQ R8, SI
	ADDQ $48, DI
	DECQ CX
	JNZ  patn64_row

patn64_done:
	VZEROUPPER
	RET
