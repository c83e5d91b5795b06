//go:build !noasm && !gccgo && !safe

#include "textflag.h"

// AVX2/FMA kernels of package dwconv (see kernel_amd64.go for the Go
// declarations and dwconv.go for the contracts). Every kernel walks
// channel blocks of 8 float32 (one YMM register, 32 bytes); px is the
// pixel stride in bytes (channels·4) of every operand, so tap k of a
// [3][3][c] filter and input pixel k of a row are both at k·px.
//
// Offsets k·px, k = 0..8, are addressed with AX = px, BX = 3px, CX = 5px,
// R13 = 7px: 0 (R), 1 (R)(AX*1), 2 (R)(AX*2), 3 (R)(BX*1), 4 (R)(AX*4),
// 5 (R)(CX*1), 6 (R)(BX*2), 7 (R)(R13*1), 8 (R)(AX*8).

// LOADTAPS loads the nine taps of the current channel block (R9) into
// Y0..Y8, tap k = 3p+q in Yk.
#define LOADTAPS \
	VMOVUPS (R9), Y0; \
	VMOVUPS (R9)(AX*1), Y1; \
	VMOVUPS (R9)(AX*2), Y2; \
	VMOVUPS (R9)(BX*1), Y3; \
	VMOVUPS (R9)(AX*4), Y4; \
	VMOVUPS (R9)(CX*1), Y5; \
	VMOVUPS (R9)(BX*2), Y6; \
	VMOVUPS (R9)(R13*1), Y7; \
	VMOVUPS (R9)(AX*8), Y8

// ONEPIX adds row R's three taps TA, TB, TC (q = 0, 1, 2) at input pixels
// 0, 1, 2 into Y9.
#define ONEPIX(R, TA, TB, TC) \
	VFMADD231PS (R), TA, Y9; \
	VFMADD231PS (R)(AX*1), TB, Y9; \
	VFMADD231PS (R)(AX*2), TC, Y9

// ROW6S1 adds one filter row (taps TA, TB, TC) to six consecutive output
// pixels Y9..Y14 at stride 1: input pixels 0..7 of row R, each loaded once.
// Every output gets its q = 0, 1, 2 terms in that order.
#define ROW6S1(R, TA, TB, TC) \
	VFMADD231PS (R), TA, Y9; \
	VMOVUPS (R)(AX*1), Y15; \
	VFMADD231PS Y15, TB, Y9; \
	VFMADD231PS Y15, TA, Y10; \
	VMOVUPS (R)(AX*2), Y15; \
	VFMADD231PS Y15, TC, Y9; \
	VFMADD231PS Y15, TB, Y10; \
	VFMADD231PS Y15, TA, Y11; \
	VMOVUPS (R)(BX*1), Y15; \
	VFMADD231PS Y15, TC, Y10; \
	VFMADD231PS Y15, TB, Y11; \
	VFMADD231PS Y15, TA, Y12; \
	VMOVUPS (R)(AX*4), Y15; \
	VFMADD231PS Y15, TC, Y11; \
	VFMADD231PS Y15, TB, Y12; \
	VFMADD231PS Y15, TA, Y13; \
	VMOVUPS (R)(CX*1), Y15; \
	VFMADD231PS Y15, TC, Y12; \
	VFMADD231PS Y15, TB, Y13; \
	VFMADD231PS Y15, TA, Y14; \
	VMOVUPS (R)(BX*2), Y15; \
	VFMADD231PS Y15, TC, Y13; \
	VFMADD231PS Y15, TB, Y14; \
	VFMADD231PS (R)(R13*1), TC, Y14

// ROW4S2 is ROW6S1 for four output pixels Y9..Y12 at stride 2: output j
// reads input pixels 2j..2j+2 of row R (pixels 0..8).
#define ROW4S2(R, TA, TB, TC) \
	VFMADD231PS (R), TA, Y9; \
	VFMADD231PS (R)(AX*1), TB, Y9; \
	VMOVUPS (R)(AX*2), Y13; \
	VFMADD231PS Y13, TC, Y9; \
	VFMADD231PS Y13, TA, Y10; \
	VFMADD231PS (R)(BX*1), TB, Y10; \
	VMOVUPS (R)(AX*4), Y14; \
	VFMADD231PS Y14, TC, Y10; \
	VFMADD231PS Y14, TA, Y11; \
	VFMADD231PS (R)(CX*1), TB, Y11; \
	VMOVUPS (R)(BX*2), Y15; \
	VFMADD231PS Y15, TC, Y11; \
	VFMADD231PS Y15, TA, Y12; \
	VFMADD231PS (R)(R13*1), TB, Y12; \
	VFMADD231PS (R)(AX*8), TC, Y12

// FWDPROLOGUE loads the arguments of fwd3x3S1/fwd3x3S2/bwd3x3S2.
//   DI o, SI x0, DX x1, R8 x2, R9 taps, R11 pixels left, R12 prefetch
//   pointer; the nb argument slot becomes nb·32 and, once the pixels are
//   in R11, the npix slot counts down the channel blocks of a pixel block
//   (R10 is the prefetch count there). Argument slots are the callee's.
#define FWDPROLOGUE \
	MOVQ o+0(FP), DI; \
	MOVQ x0+8(FP), SI; \
	MOVQ x1+16(FP), DX; \
	MOVQ x2+24(FP), R8; \
	MOVQ t+32(FP), R9; \
	MOVQ npix+40(FP), R11; \
	MOVQ pf+64(FP), R12; \
	MOVQ px+56(FP), AX; \
	LEAQ (AX)(AX*2), BX; \
	LEAQ (AX)(AX*4), CX; \
	LEAQ (BX)(AX*4), R13; \
	SHLQ $5, nb+48(FP)

// FPROLOGUE loads the arguments of filt3x3S1/S2, s the stride.
//   SI dy, DX x0, R8 x1, R9 x2, AX px, BX 3px, R10 blocks left,
//   CX x rewind (npix·s·px − 32), R13 dy rewind (npix·px − 32),
//   R12 prefetch pointer. The accumulator pointer stays in its argument
//   slot (DI while loading and storing them, the prefetch count between).
#define FPROLOGUE(s) \
	MOVQ dy+8(FP), SI; \
	MOVQ x0+16(FP), DX; \
	MOVQ x1+24(FP), R8; \
	MOVQ x2+32(FP), R9; \
	MOVQ nb+48(FP), R10; \
	MOVQ px+56(FP), AX; \
	MOVQ pf+64(FP), R12; \
	LEAQ (AX)(AX*2), BX; \
	MOVQ npix+40(FP), R13; \
	IMULQ AX, R13; \
	MOVQ R13, CX; \
	IMULQ $s, CX; \
	SUBQ $32, R13; \
	SUBQ $32, CX

// FLOADACC and FSTOREACC load and store the current block's nine tap
// sums (packed: tap k at 32k bytes).
#define FLOADACC \
	MOVQ acc+0(FP), DI; \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS 64(DI), Y2; \
	VMOVUPS 96(DI), Y3; \
	VMOVUPS 128(DI), Y4; \
	VMOVUPS 160(DI), Y5; \
	VMOVUPS 192(DI), Y6; \
	VMOVUPS 224(DI), Y7; \
	VMOVUPS 256(DI), Y8

#define FSTOREACC \
	MOVQ acc+0(FP), DI; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	VMOVUPS Y4, 128(DI); \
	VMOVUPS Y5, 160(DI); \
	VMOVUPS Y6, 192(DI); \
	VMOVUPS Y7, 224(DI); \
	VMOVUPS Y8, 256(DI)

// FREWIND moves the filter kernels' pointers to the next channel block:
// the accumulators to the next packed block, the pixel pointers back to
// the first pixel (32 bytes further).
#define FREWIND \
	ADDQ $288, acc+0(FP); \
	SUBQ R13, SI; \
	SUBQ CX, DX; \
	SUBQ CX, R8; \
	SUBQ CX, R9

// NEXTCB advances the pointers of fwd3x3 to the next channel block.
#define NEXTCB \
	ADDQ $32, DI; \
	ADDQ $32, SI; \
	ADDQ $32, DX; \
	ADDQ $32, R8; \
	ADDQ $32, R9

// REWIND moves the pointers of fwd3x3 back to the first channel block.
#define REWIND \
	SUBQ nb+48(FP), DI; \
	SUBQ nb+48(FP), SI; \
	SUBQ nb+48(FP), DX; \
	SUBQ nb+48(FP), R8; \
	SUBQ nb+48(FP), R9

// func fwd3x3S1(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)
TEXT ·fwd3x3S1(SB), NOSPLIT, $0-88
	FWDPROLOGUE
	CMPQ R11, $6
	JLT  f1_pixel

f1_block:
	MOVQ nb+48(FP), R10
	MOVQ R10, npix+40(FP)

f1_cb:
	LOADTAPS
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	ROW6S1(SI, Y0, Y1, Y2)
	ROW6S1(DX, Y3, Y4, Y5)
	ROW6S1(R8, Y6, Y7, Y8)
	VMOVUPS Y9, (DI)
	VMOVUPS Y10, (DI)(AX*1)
	VMOVUPS Y11, (DI)(AX*2)
	VMOVUPS Y12, (DI)(BX*1)
	VMOVUPS Y13, (DI)(AX*4)
	VMOVUPS Y14, (DI)(CX*1)
	NEXTCB
	MOVQ pfk+80(FP), R10

f1_pf:
	CMPQ R12, pfend+72(FP)
	JAE  f1_pfdone
	PREFETCHT2 (R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	ADDQ $256, R12
	DECQ R10
	JNZ  f1_pf

f1_pfdone:
	SUBQ $32, npix+40(FP)
	JNZ  f1_cb

	REWIND
	LEAQ (DI)(BX*2), DI
	LEAQ (SI)(BX*2), SI
	LEAQ (DX)(BX*2), DX
	LEAQ (R8)(BX*2), R8
	SUBQ $6, R11
	CMPQ R11, $6
	JGE  f1_block
	TESTQ R11, R11
	JZ   f1_done

	// 1..5 pixels left: redo the last six (same values, stored again).
	MOVQ $6, R10
	SUBQ R11, R10
	IMULQ AX, R10
	SUBQ R10, DI
	SUBQ R10, SI
	SUBQ R10, DX
	SUBQ R10, R8
	MOVQ $6, R11
	JMP  f1_block

f1_pixel:
	// Fewer than six pixels: one at a time.
	MOVQ nb+48(FP), R10

f1_pcb:
	LOADTAPS
	VXORPS Y9, Y9, Y9
	ONEPIX(SI, Y0, Y1, Y2)
	ONEPIX(DX, Y3, Y4, Y5)
	ONEPIX(R8, Y6, Y7, Y8)
	VMOVUPS Y9, (DI)
	NEXTCB
	SUBQ $32, R10
	JNZ  f1_pcb

	REWIND
	ADDQ AX, DI
	ADDQ AX, SI
	ADDQ AX, DX
	ADDQ AX, R8
	DECQ R11
	JNZ  f1_pixel

f1_done:
	VZEROUPPER
	RET

// func fwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)
TEXT ·fwd3x3S2(SB), NOSPLIT, $0-88
	FWDPROLOGUE
	CMPQ R11, $4
	JLT  f2_pixel

f2_block:
	MOVQ nb+48(FP), R10
	MOVQ R10, npix+40(FP)

f2_cb:
	LOADTAPS
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	ROW4S2(SI, Y0, Y1, Y2)
	ROW4S2(DX, Y3, Y4, Y5)
	ROW4S2(R8, Y6, Y7, Y8)
	VMOVUPS Y9, (DI)
	VMOVUPS Y10, (DI)(AX*1)
	VMOVUPS Y11, (DI)(AX*2)
	VMOVUPS Y12, (DI)(BX*1)
	NEXTCB
	MOVQ pfk+80(FP), R10

f2_pf:
	CMPQ R12, pfend+72(FP)
	JAE  f2_pfdone
	PREFETCHT2 (R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	ADDQ $256, R12
	DECQ R10
	JNZ  f2_pf

f2_pfdone:
	SUBQ $32, npix+40(FP)
	JNZ  f2_cb

	REWIND
	LEAQ (DI)(AX*4), DI
	LEAQ (SI)(AX*8), SI
	LEAQ (DX)(AX*8), DX
	LEAQ (R8)(AX*8), R8
	SUBQ $4, R11
	CMPQ R11, $4
	JGE  f2_block
	TESTQ R11, R11
	JZ   f2_done

	// 1..3 pixels left: redo the last four.
	MOVQ $4, R10
	SUBQ R11, R10
	IMULQ AX, R10
	SUBQ R10, DI
	SUBQ R10, SI
	SUBQ R10, SI
	SUBQ R10, DX
	SUBQ R10, DX
	SUBQ R10, R8
	SUBQ R10, R8
	MOVQ $4, R11
	JMP  f2_block

f2_pixel:
	MOVQ nb+48(FP), R10

f2_pcb:
	LOADTAPS
	VXORPS Y9, Y9, Y9
	ONEPIX(SI, Y0, Y1, Y2)
	ONEPIX(DX, Y3, Y4, Y5)
	ONEPIX(R8, Y6, Y7, Y8)
	VMOVUPS Y9, (DI)
	NEXTCB
	SUBQ $32, R10
	JNZ  f2_pcb

	REWIND
	ADDQ AX, DI
	LEAQ (SI)(AX*2), SI
	LEAQ (DX)(AX*2), DX
	LEAQ (R8)(AX*2), R8
	DECQ R11
	JNZ  f2_pixel

f2_done:
	VZEROUPPER
	RET

// BPAIR4 adds one filter row of the stride-2 input gradient to four pixel
// pairs: Y3,Y5,Y7,Y9 are the even pixels e0..e3, Y4,Y6,Y8,Y10 the odd
// ones o0..o3; R points at out_backprop pixel m−1 of pair 0, the row's
// taps q = 0, 1, 2 are in Y0, Y1, Y2. e_m += d[m]·t2 then d[m+1]·t0;
// o_m += d[m+1]·t1 (d relative to R: d[m] is pixel m).
#define BPAIR4(R) \
	VFMADD231PS (R), Y2, Y3; \
	VMOVUPS (R)(AX*1), Y15; \
	VFMADD231PS Y15, Y0, Y3; \
	VFMADD231PS Y15, Y1, Y4; \
	VFMADD231PS Y15, Y2, Y5; \
	VMOVUPS (R)(AX*2), Y14; \
	VFMADD231PS Y14, Y0, Y5; \
	VFMADD231PS Y14, Y1, Y6; \
	VFMADD231PS Y14, Y2, Y7; \
	VMOVUPS (R)(BX*1), Y13; \
	VFMADD231PS Y13, Y0, Y7; \
	VFMADD231PS Y13, Y1, Y8; \
	VFMADD231PS Y13, Y2, Y9; \
	VMOVUPS (R)(AX*4), Y12; \
	VFMADD231PS Y12, Y0, Y9; \
	VFMADD231PS Y12, Y1, Y10

// BPAIR1 is BPAIR4 for one pair (Y3 even, Y4 odd).
#define BPAIR1(R) \
	VFMADD231PS (R), Y2, Y3; \
	VMOVUPS (R)(AX*1), Y15; \
	VFMADD231PS Y15, Y0, Y3; \
	VFMADD231PS Y15, Y1, Y4

// BTAPS loads the taps of filter row p (offsets a, b, c) into Y0..Y2.
#define BTAPS(a, b, c) \
	VMOVUPS a, Y0; \
	VMOVUPS b, Y1; \
	VMOVUPS c, Y2

// func bwd3x3S2(o, x0, x1, x2, t *float32, npix, nb, px int, pf, pfend uintptr, pfk int)
TEXT ·bwd3x3S2(SB), NOSPLIT, $0-88
	FWDPROLOGUE
	CMPQ R11, $4
	JLT  b2_pair

b2_block:
	MOVQ nb+48(FP), R10
	MOVQ R10, npix+40(FP)

b2_cb:
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	BTAPS((R9), (R9)(AX*1), (R9)(AX*2))
	BPAIR4(SI)
	BTAPS((R9)(BX*1), (R9)(AX*4), (R9)(CX*1))
	BPAIR4(DX)
	BTAPS((R9)(BX*2), (R9)(R13*1), (R9)(AX*8))
	BPAIR4(R8)
	VMOVUPS Y3, (DI)
	VMOVUPS Y4, (DI)(AX*1)
	VMOVUPS Y5, (DI)(AX*2)
	VMOVUPS Y6, (DI)(BX*1)
	VMOVUPS Y7, (DI)(AX*4)
	VMOVUPS Y8, (DI)(CX*1)
	VMOVUPS Y9, (DI)(BX*2)
	VMOVUPS Y10, (DI)(R13*1)
	NEXTCB
	MOVQ pfk+80(FP), R10

b2_pf:
	CMPQ R12, pfend+72(FP)
	JAE  b2_pfdone
	PREFETCHT2 (R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	ADDQ $256, R12
	DECQ R10
	JNZ  b2_pf

b2_pfdone:
	SUBQ $32, npix+40(FP)
	JNZ  b2_cb

	REWIND
	LEAQ (DI)(AX*8), DI
	LEAQ (SI)(AX*4), SI
	LEAQ (DX)(AX*4), DX
	LEAQ (R8)(AX*4), R8
	SUBQ $4, R11
	CMPQ R11, $4
	JGE  b2_block
	TESTQ R11, R11
	JZ   b2_done

	// 1..3 pairs left: redo the last four.
	MOVQ $4, R10
	SUBQ R11, R10
	IMULQ AX, R10
	SUBQ R10, DI
	SUBQ R10, DI
	SUBQ R10, SI
	SUBQ R10, DX
	SUBQ R10, R8
	MOVQ $4, R11
	JMP  b2_block

b2_pair:
	MOVQ nb+48(FP), R10

b2_pcb:
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	BTAPS((R9), (R9)(AX*1), (R9)(AX*2))
	BPAIR1(SI)
	BTAPS((R9)(BX*1), (R9)(AX*4), (R9)(CX*1))
	BPAIR1(DX)
	BTAPS((R9)(BX*2), (R9)(R13*1), (R9)(AX*8))
	BPAIR1(R8)
	VMOVUPS Y3, (DI)
	VMOVUPS Y4, (DI)(AX*1)
	NEXTCB
	SUBQ $32, R10
	JNZ  b2_pcb

	REWIND
	LEAQ (DI)(AX*2), DI
	ADDQ AX, SI
	ADDQ AX, DX
	ADDQ AX, R8
	DECQ R11
	JNZ  b2_pair

b2_done:
	VZEROUPPER
	RET

// Filter gradient. Accumulators Y0..Y8 hold taps k = 3p+q of the current
// channel block; Y9, Y10 are the out_backprop pixels j, j+1. A pair of
// pixels adds d_j·x + d_{j+1}·x' (a product and a fused multiply-add)
// to each accumulator: the accumulators' dependency chains get one add
// per pair, and the adds run beside the multiplies.

// FPAIRS1 adds a pixel pair's products with row R (input pixels 0..3) to
// the row's accumulators A0..A2.
#define FPAIRS1(R, A0, A1, A2) \
	VMOVUPS (R)(AX*1), Y11; \
	VMOVUPS (R)(AX*2), Y12; \
	VMULPS (R), Y9, Y13; \
	VFMADD231PS Y11, Y10, Y13; \
	VMULPS Y11, Y9, Y14; \
	VFMADD231PS Y12, Y10, Y14; \
	VMULPS Y12, Y9, Y15; \
	VFMADD231PS (R)(BX*1), Y10, Y15; \
	VADDPS Y13, A0, A0; \
	VADDPS Y14, A1, A1; \
	VADDPS Y15, A2, A2

// FPAIRS2 is FPAIRS1 at stride 2 (input pixels 0..4).
#define FPAIRS2(R, A0, A1, A2) \
	VMOVUPS (R)(AX*2), Y11; \
	VMULPS (R), Y9, Y13; \
	VFMADD231PS Y11, Y10, Y13; \
	VMULPS (R)(AX*1), Y9, Y14; \
	VFMADD231PS (R)(BX*1), Y10, Y14; \
	VMULPS Y11, Y9, Y15; \
	VFMADD231PS (R)(AX*4), Y10, Y15; \
	VADDPS Y13, A0, A0; \
	VADDPS Y14, A1, A1; \
	VADDPS Y15, A2, A2

// FONE adds one output pixel's products with row R (input pixels 0..2).
#define FONE(R, A0, A1, A2) \
	VFMADD231PS (R), Y9, A0; \
	VFMADD231PS (R)(AX*1), Y9, A1; \
	VFMADD231PS (R)(AX*2), Y9, A2

// After each pixel pair the filter kernels issue up to pfk groups of four
// prefetches into L2 (one per 64-byte line) from R12 on, stopping at
// pfend (the last group may pass it by up to three lines): the caller
// spreads a region it will read soon over the iterations. The forward
// kernels do the same after each block of pixels and channels.

// func filt3x3S1(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int)
TEXT ·filt3x3S1(SB), NOSPLIT, $0-88
	FPROLOGUE(1)

g1_cb:
	FLOADACC
	MOVQ npix+40(FP), R11
	SHRQ $1, R11
	JZ   g1_one

g1_pair:
	VMOVUPS (SI), Y9
	VMOVUPS (SI)(AX*1), Y10
	FPAIRS1(DX, Y0, Y1, Y2)
	FPAIRS1(R8, Y3, Y4, Y5)
	FPAIRS1(R9, Y6, Y7, Y8)
	LEAQ (SI)(AX*2), SI
	LEAQ (DX)(AX*2), DX
	LEAQ (R8)(AX*2), R8
	LEAQ (R9)(AX*2), R9
	MOVQ pfk+80(FP), DI

g1_pf:
	CMPQ R12, pfend+72(FP)
	JAE  g1_pfdone
	PREFETCHT2 (R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	ADDQ $256, R12
	DECQ DI
	JNZ  g1_pf

g1_pfdone:
	DECQ R11
	JNZ  g1_pair

g1_one:
	TESTQ $1, npix+40(FP)
	JZ    g1_store
	VMOVUPS (SI), Y9
	FONE(DX, Y0, Y1, Y2)
	FONE(R8, Y3, Y4, Y5)
	FONE(R9, Y6, Y7, Y8)
	ADDQ AX, SI
	ADDQ AX, DX
	ADDQ AX, R8
	ADDQ AX, R9

g1_store:
	FSTOREACC
	FREWIND
	DECQ R10
	JNZ  g1_cb
	VZEROUPPER
	RET

// func filt3x3S2(acc, dy, x0, x1, x2 *float32, npix, nb, px int, pf, pfend uintptr, pfk int)
TEXT ·filt3x3S2(SB), NOSPLIT, $0-88
	FPROLOGUE(2)

g2_cb:
	FLOADACC
	MOVQ npix+40(FP), R11
	SHRQ $1, R11
	JZ   g2_one

g2_pair:
	VMOVUPS (SI), Y9
	VMOVUPS (SI)(AX*1), Y10
	FPAIRS2(DX, Y0, Y1, Y2)
	FPAIRS2(R8, Y3, Y4, Y5)
	FPAIRS2(R9, Y6, Y7, Y8)
	LEAQ (SI)(AX*2), SI
	LEAQ (DX)(AX*4), DX
	LEAQ (R8)(AX*4), R8
	LEAQ (R9)(AX*4), R9
	MOVQ pfk+80(FP), DI

g2_pf:
	CMPQ R12, pfend+72(FP)
	JAE  g2_pfdone
	PREFETCHT2 (R12)
	PREFETCHT2 64(R12)
	PREFETCHT2 128(R12)
	PREFETCHT2 192(R12)
	ADDQ $256, R12
	DECQ DI
	JNZ  g2_pf

g2_pfdone:
	DECQ R11
	JNZ  g2_pair

g2_one:
	TESTQ $1, npix+40(FP)
	JZ    g2_store
	VMOVUPS (SI), Y9
	FONE(DX, Y0, Y1, Y2)
	FONE(R8, Y3, Y4, Y5)
	FONE(R9, Y6, Y7, Y8)
	ADDQ AX, SI
	LEAQ (DX)(AX*2), DX
	LEAQ (R8)(AX*2), R8
	LEAQ (R9)(AX*2), R9

g2_store:
	FSTOREACC
	FREWIND
	DECQ R10
	JNZ  g2_cb
	VZEROUPPER
	RET

// func dotTaps(o *float32, xs, ts **float32, n, nb int)
//   o[b] = Σ_{i<n} xs[i][b]·ts[i][b] for channel blocks b < nb, taps in
//   list order; four blocks at a time (independent chains), then single
//   blocks. n ≥ 1.
//   DI o, SI xs, DX ts, CX n, R10 blocks left, R11 channel byte offset,
//   R12 tap index, R8, R9 the tap's pointers
TEXT ·dotTaps(SB), NOSPLIT, $0-40
	MOVQ o+0(FP), DI
	MOVQ xs+8(FP), SI
	MOVQ ts+16(FP), DX
	MOVQ n+24(FP), CX
	MOVQ nb+32(FP), R10
	XORQ R11, R11
	CMPQ R10, $4
	JLT  d_single

d_four:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ R12, R12

d_four_tap:
	MOVQ (SI)(R12*8), R8
	MOVQ (DX)(R12*8), R9
	ADDQ R11, R8
	ADDQ R11, R9
	VMOVUPS (R9), Y4
	VFMADD231PS (R8), Y4, Y0
	VMOVUPS 32(R9), Y5
	VFMADD231PS 32(R8), Y5, Y1
	VMOVUPS 64(R9), Y6
	VFMADD231PS 64(R8), Y6, Y2
	VMOVUPS 96(R9), Y7
	VFMADD231PS 96(R8), Y7, Y3
	INCQ R12
	CMPQ R12, CX
	JLT  d_four_tap

	VMOVUPS Y0, (DI)(R11*1)
	VMOVUPS Y1, 32(DI)(R11*1)
	VMOVUPS Y2, 64(DI)(R11*1)
	VMOVUPS Y3, 96(DI)(R11*1)
	ADDQ $128, R11
	SUBQ $4, R10
	CMPQ R10, $4
	JGE  d_four

d_single:
	TESTQ R10, R10
	JZ   d_done

d_one:
	VXORPS Y0, Y0, Y0
	XORQ R12, R12

d_one_tap:
	MOVQ (SI)(R12*8), R8
	MOVQ (DX)(R12*8), R9
	VMOVUPS (R9)(R11*1), Y4
	VFMADD231PS (R8)(R11*1), Y4, Y0
	INCQ R12
	CMPQ R12, CX
	JLT  d_one_tap

	VMOVUPS Y0, (DI)(R11*1)
	ADDQ $32, R11
	DECQ R10
	JNZ  d_one

d_done:
	VZEROUPPER
	RET

// func axpyTaps(acc, xs **float32, n int, dy *float32, nb int)
//   acc[i][b·72] += dy[b]·xs[i][b] (8 lanes) for channel blocks b < nb
//   and taps i < n: acc[i] points at its tap's slot in block 0 of a
//   packed [nb][9][8] buffer (blocks 288 bytes apart), xs[i] and dy at
//   channel 0 of pixels with 8-channel blocks 32 bytes apart. n ≥ 1.
//   DI acc, SI xs, CX n, DX dy, R10 blocks left, R11 block·32,
//   R13 block·288, R12 tap index
TEXT ·axpyTaps(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), DI
	MOVQ xs+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ dy+24(FP), DX
	MOVQ nb+32(FP), R10
	XORQ R11, R11
	XORQ R13, R13

a_cb:
	VMOVUPS (DX)(R11*1), Y0
	XORQ R12, R12

a_tap:
	MOVQ (SI)(R12*8), R8
	MOVQ (DI)(R12*8), R9
	VMOVUPS (R8)(R11*1), Y1
	VFMADD213PS (R9)(R13*1), Y0, Y1
	VMOVUPS Y1, (R9)(R13*1)
	INCQ R12
	CMPQ R12, CX
	JLT  a_tap

	ADDQ $32, R11
	ADDQ $288, R13
	DECQ R10
	JNZ  a_cb
	VZEROUPPER
	RET

// func addF64(dst *float64, src *float32, n int)
//   dst[i] += float64(src[i]), n a positive multiple of 8.
TEXT ·addF64(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

c_loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VADDPD (DI), Y0, Y0
	VADDPD 32(DI), Y1, Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $8, CX
	JNZ  c_loop
	VZEROUPPER
	RET

// func prefetch(p *float32, n int)
//   PREFETCHT2 (into L2) every 64-byte line of [p, p+n) bytes, n > 0.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX

p_loop:
	PREFETCHT2 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLT  p_loop
	RET
