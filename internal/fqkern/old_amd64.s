//go:build amd64 && !noasm && !gccgo && !safe

#include "textflag.h"

// AVX2 kernels of package fqkern (contracts in fqkern.go and
// kernel_amd64.go). Every kernel walks rows of n elements against a table
// whose rows (one per parameter) are AX = 4·l bytes apart: blocks of 16
// and 8 elements with YMM registers, then the n mod 8 tail one element
// at a time with the scalar forms of the same instructions (same
// rounding, same NaN rules), so every element gets the same operations
// wherever it falls.
//
// Operand order: Go's VMINPS b, a, d is Intel's vminps d, a, b, which
// computes a < b ? a : b and returns b when either is NaN (VMAXPS alike),
// and VCMPPS $p, b, a, d sets d = a (p) b. Predicates: $0x01 LT, $0x02 LE,
// $0x0D GE, $0x0E GT (all false on NaN).

// FWD8 quantises 8 elements at offset off of x (SI) into y (DI), table
// rows at R11 (AX, BX = 3 rows, R9 = 5 rows), 0.5 in Y15, using V, N, T:
// v = nmax < x ? nmax : x (x when NaN), v = nmin > v ? nmin : v,
// y = floor((v − nmin) OP row − qzero + 0.5)·scale & keep, where OP is
// VMULPS with R13 = 2 rows (the inverse scale) or VDIVPS with R13 = 4
// rows (the scale).
#define FWD8(OP, off, V, N, T) \
	VMOVUPS off(R11)(AX*1), T; \
	VMINPS off(SI), T, V; \
	VMOVUPS off(R11), N; \
	VMAXPS V, N, V; \
	VSUBPS N, V, V; \
	OP off(R11)(R13*1), V, V; \
	VSUBPS off(R11)(BX*1), V, V; \
	VADDPS Y15, V, V; \
	VROUNDPS $1, V, V; \
	VMULPS off(R11)(AX*4), V, V; \
	VANDPS off(R11)(R9*1), V, V; \
	VMOVUPS V, off(DI)

// FWD1 is FWD8 for one element with the scalar forms (OPS is VMULSS or
// VDIVSS), stepping SI, DI and R11 by one element.
#define FWD1(OPS) \
	VMOVSS   (R11)(AX*1), X2; \
	VMINSS   (SI), X2, X0; \
	VMOVSS   (R11), X1; \
	VMAXSS   X0, X1, X0; \
	VSUBSS   X1, X0, X0; \
	OPS      (R11)(R13*1), X0, X0; \
	VSUBSS   (R11)(BX*1), X0, X0; \
	VADDSS   X15, X0, X0; \
	VROUNDSS $1, X0, X0, X0; \
	VMULSS   (R11)(AX*4), X0, X0; \
	VMOVSS   (R11)(R9*1), X2; \
	VANDPS   X2, X0, X0; \
	VMOVSS   X0, (DI); \
	ADDQ     $4, SI; \
	ADDQ     $4, DI; \
	ADDQ     $4, R11

// FWDARGS loads the arguments of fwd32 and fwdDiv32 and sets AX, BX, R9,
// Y15 (R13 is set by the caller).
#define FWDARGS \
	MOVQ y+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ tab+16(FP), R8; \
	MOVQ l+24(FP), AX; \
	SHLQ $2, AX; \
	MOVQ n+32(FP), CX; \
	MOVQ rows+40(FP), DX; \
	LEAQ (AX)(AX*2), BX; \
	LEAQ (AX)(AX*4), R9; \
	MOVL $0x3f000000, R10; \
	VMOVD R10, X15; \
	VBROADCASTSS X15, Y15

// FWDARGS64 is FWDARGS for float64 (0.5 broadcast to the four lanes of
// Y15).
#define FWDARGS64 \
	MOVQ y+0(FP), DI; \
	MOVQ x+8(FP), SI; \
	MOVQ tab+16(FP), R8; \
	MOVQ l+24(FP), AX; \
	SHLQ $3, AX; \
	MOVQ n+32(FP), CX; \
	MOVQ rows+40(FP), DX; \
	LEAQ (AX)(AX*2), BX; \
	LEAQ (AX)(AX*4), R9; \
	MOVQ $0x3fe0000000000000, R10; \
	VMOVQ R10, X15; \
	VBROADCASTSD X15, Y15

// func fwd32(y, x, tab *float32, l, n, rows int)
TEXT ·old_fwd32(SB), NOSPLIT, $0-48
	FWDARGS
	LEAQ (AX)(AX*1), R13

fwdrow:
	MOVQ R8, R11
	MOVQ CX, R12

fwd16:
	CMPQ R12, $16
	JLT  fwd8
	FWD8(VMULPS, 0, Y0, Y1, Y2)
	FWD8(VMULPS, 32, Y3, Y4, Y5)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  fwd16

fwd8:
	CMPQ R12, $8
	JLT  fwd1
	FWD8(VMULPS, 0, Y0, Y1, Y2)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $8, R12

fwd1:
	TESTQ R12, R12
	JZ    fwdnext
	FWD1(VMULSS)
	DECQ  R12
	JMP   fwd1

fwdnext:
	DECQ DX
	JNZ  fwdrow
	VZEROUPPER
	RET

// func fwdDiv32(y, x, tab *float32, l, n, rows int)
TEXT ·old_fwdDiv32(SB), NOSPLIT, $0-48
	FWDARGS
	LEAQ (AX*4), R13

divrow:
	MOVQ R8, R11
	MOVQ CX, R12

div16:
	CMPQ R12, $16
	JLT  div8
	FWD8(VDIVPS, 0, Y0, Y1, Y2)
	FWD8(VDIVPS, 32, Y3, Y4, Y5)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  div16

div8:
	CMPQ R12, $8
	JLT  div1
	FWD8(VDIVPS, 0, Y0, Y1, Y2)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $8, R12

div1:
	TESTQ R12, R12
	JZ    divnext
	FWD1(VDIVSS)
	DECQ  R12
	JMP   div1

divnext:
	DECQ DX
	JNZ  divrow
	VZEROUPPER
	RET

// GRAD8 is the gradient of 8 elements at offset off (aoff, aoff2 = aoff
// + 32 in the float64 sums): x at SI, g at R13, bi at DI, table rows at
// R11 (AX apart), below sums at R10, above sums BX further. With X0..X5
// the low halves of Y0..Y5:
// in = (x >= lo & x <= hi) | pass, bi = g & in; below = x < lo,
// above = x > hi &^ below; the sums add g & below and g & above,
// widened to float64 four lanes at a time.
#define GRAD8(off, aoff, aoff2, Y0, Y1, Y2, Y3, Y4, Y5, X2, X3) \
	VMOVUPS off(SI), Y0; \
	VMOVUPS off(R13), Y1; \
	VMOVUPS off(R11), Y2; \
	VMOVUPS off(R11)(AX*1), Y3; \
	VCMPPS $0x0D, Y2, Y0, Y4; \
	VCMPPS $0x02, Y3, Y0, Y5; \
	VANDPS Y5, Y4, Y4; \
	VORPS off(R11)(AX*2), Y4, Y4; \
	VANDPS Y1, Y4, Y4; \
	VMOVUPS Y4, off(DI); \
	VCMPPS $0x01, Y2, Y0, Y2; \
	VCMPPS $0x0E, Y3, Y0, Y3; \
	VANDNPS Y3, Y2, Y3; \
	VANDPS Y1, Y2, Y2; \
	VANDPS Y1, Y3, Y3; \
	VCVTPS2PD X2, Y4; \
	VEXTRACTF128 $1, Y2, X2; \
	VCVTPS2PD X2, Y5; \
	VADDPD aoff(R10), Y4, Y4; \
	VADDPD aoff2(R10), Y5, Y5; \
	VMOVUPD Y4, aoff(R10); \
	VMOVUPD Y5, aoff2(R10); \
	VCVTPS2PD X3, Y4; \
	VEXTRACTF128 $1, Y3, X3; \
	VCVTPS2PD X3, Y5; \
	VADDPD aoff(R10)(BX*1), Y4, Y4; \
	VADDPD aoff2(R10)(BX*1), Y5, Y5; \
	VMOVUPD Y4, aoff(R10)(BX*1); \
	VMOVUPD Y5, aoff2(R10)(BX*1)

// func grad32(bi, gs, x, tab *float32, l, n, rows int, acc *float64)
TEXT ·old_grad32(SB), NOSPLIT, $0-64
	MOVQ bi+0(FP), DI
	MOVQ gs+8(FP), R13
	MOVQ x+16(FP), SI
	MOVQ tab+24(FP), R8
	MOVQ l+32(FP), AX
	MOVQ n+40(FP), CX
	MOVQ rows+48(FP), DX
	MOVQ acc+56(FP), R14
	MOVQ AX, BX
	SHLQ $3, BX
	SHLQ $2, AX

gradrow:
	MOVQ R8, R11
	MOVQ R14, R10
	MOVQ CX, R12

grad16:
	CMPQ R12, $16
	JLT  grad8
	GRAD8(0, 0, 32, Y0, Y1, Y2, Y3, Y4, Y5, X2, X3)
	GRAD8(32, 64, 96, Y6, Y7, Y8, Y9, Y10, Y11, X8, X9)
	ADDQ $64, SI
	ADDQ $64, R13
	ADDQ $64, DI
	ADDQ $64, R11
	ADDQ $128, R10
	SUBQ $16, R12
	JMP  grad16

grad8:
	CMPQ R12, $8
	JLT  grad1
	GRAD8(0, 0, 32, Y0, Y1, Y2, Y3, Y4, Y5, X2, X3)
	ADDQ $32, SI
	ADDQ $32, R13
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $64, R10
	SUBQ $8, R12

grad1:
	TESTQ R12, R12
	JZ    gradnext
	VMOVSS    (SI), X0
	VMOVSS    (R13), X1
	VMOVSS    (R11), X2
	VMOVSS    (R11)(AX*1), X3
	VCMPSS    $0x0D, X2, X0, X4
	VCMPSS    $0x02, X3, X0, X5
	VANDPS    X5, X4, X4
	VMOVSS    (R11)(AX*2), X5
	VORPS     X5, X4, X4
	VANDPS    X1, X4, X4
	VMOVSS    X4, (DI)
	VCMPSS    $0x01, X2, X0, X2
	VCMPSS    $0x0E, X3, X0, X3
	VANDNPS   X3, X2, X3
	VANDPS    X1, X2, X2
	VANDPS    X1, X3, X3
	VCVTSS2SD X2, X2, X4
	VADDSD    (R10), X4, X4
	VMOVSD    X4, (R10)
	VCVTSS2SD X3, X3, X5
	VADDSD    (R10)(BX*1), X5, X5
	VMOVSD    X5, (R10)(BX*1)
	ADDQ      $4, SI
	ADDQ      $4, R13
	ADDQ      $4, DI
	ADDQ      $4, R11
	ADDQ      $8, R10
	DECQ      R12
	JMP       grad1

gradnext:
	DECQ DX
	JNZ  gradrow
	VZEROUPPER
	RET

// ADJ8 is the adjoint of 8 elements at offset off: x at SI, d_backprops
// at R13, out at DI, table rows at R11 (AX apart, BX = 3 rows):
// out = (dbi & in) | (dmin & below) | (dmax & above), the three masks
// disjoint (in, below and above as in GRAD8).
#define ADJ8(off, Y0, Y2, Y3, Y4, Y5) \
	VMOVUPS off(SI), Y0; \
	VMOVUPS off(R11), Y2; \
	VMOVUPS off(R11)(AX*1), Y3; \
	VCMPPS $0x0D, Y2, Y0, Y4; \
	VCMPPS $0x02, Y3, Y0, Y5; \
	VANDPS Y5, Y4, Y4; \
	VORPS off(R11)(AX*2), Y4, Y4; \
	VANDPS off(R13), Y4, Y4; \
	VCMPPS $0x01, Y2, Y0, Y2; \
	VCMPPS $0x0E, Y3, Y0, Y3; \
	VANDNPS Y3, Y2, Y3; \
	VANDPS off(R11)(BX*1), Y2, Y2; \
	VANDPS off(R11)(AX*4), Y3, Y3; \
	VORPS Y2, Y4, Y4; \
	VORPS Y3, Y4, Y4; \
	VMOVUPS Y4, off(DI)

// func adj32(out, dbi, x, tab *float32, l, n, rows int)
TEXT ·old_adj32(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ dbi+8(FP), R13
	MOVQ x+16(FP), SI
	MOVQ tab+24(FP), R8
	MOVQ l+32(FP), AX
	SHLQ $2, AX
	MOVQ n+40(FP), CX
	MOVQ rows+48(FP), DX
	LEAQ (AX)(AX*2), BX

adjrow:
	MOVQ R8, R11
	MOVQ CX, R12

adj16:
	CMPQ R12, $16
	JLT  adj8
	ADJ8(0, Y0, Y2, Y3, Y4, Y5)
	ADJ8(32, Y6, Y8, Y9, Y10, Y11)
	ADDQ $64, SI
	ADDQ $64, R13
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $16, R12
	JMP  adj16

adj8:
	CMPQ R12, $8
	JLT  adj1
	ADJ8(0, Y0, Y2, Y3, Y4, Y5)
	ADDQ $32, SI
	ADDQ $32, R13
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $8, R12

adj1:
	TESTQ R12, R12
	JZ    adjnext
	VMOVSS  (SI), X0
	VMOVSS  (R11), X2
	VMOVSS  (R11)(AX*1), X3
	VCMPSS  $0x0D, X2, X0, X4
	VCMPSS  $0x02, X3, X0, X5
	VANDPS  X5, X4, X4
	VMOVSS  (R11)(AX*2), X5
	VORPS   X5, X4, X4
	VMOVSS  (R13), X5
	VANDPS  X5, X4, X4
	VCMPSS  $0x01, X2, X0, X2
	VCMPSS  $0x0E, X3, X0, X3
	VANDNPS X3, X2, X3
	VMOVSS  (R11)(BX*1), X5
	VANDPS  X5, X2, X2
	VMOVSS  (R11)(AX*4), X5
	VANDPS  X5, X3, X3
	VORPS   X2, X4, X4
	VORPS   X3, X4, X4
	VMOVSS  X4, (DI)
	ADDQ    $4, SI
	ADDQ    $4, R13
	ADDQ    $4, DI
	ADDQ    $4, R11
	DECQ    R12
	JMP     adj1

adjnext:
	DECQ DX
	JNZ  adjrow
	VZEROUPPER
	RET

// ---------------------------------------------------------------------
// float64: the same kernels four lanes at a time (blocks of 8 and 4
// elements, then the n mod 4 tail one element at a time), table rows and
// sums AX = 8·l bytes apart, with the PD/SD forms of the same
// instructions (same operand order, predicates and NaN rules).

// FWD4 is FWD8 for 4 float64 elements (OP is VMULPD or VDIVPD).
#define FWD4(OP, off, V, N, T) \
	VMOVUPD off(R11)(AX*1), T; \
	VMINPD off(SI), T, V; \
	VMOVUPD off(R11), N; \
	VMAXPD V, N, V; \
	VSUBPD N, V, V; \
	OP off(R11)(R13*1), V, V; \
	VSUBPD off(R11)(BX*1), V, V; \
	VADDPD Y15, V, V; \
	VROUNDPD $1, V, V; \
	VMULPD off(R11)(AX*4), V, V; \
	VANDPD off(R11)(R9*1), V, V; \
	VMOVUPD V, off(DI)

// FWD1D is FWD4 for one element (OPS is VMULSD or VDIVSD), stepping SI,
// DI and R11 by one element.
#define FWD1D(OPS) \
	VMOVSD   (R11)(AX*1), X2; \
	VMINSD   (SI), X2, X0; \
	VMOVSD   (R11), X1; \
	VMAXSD   X0, X1, X0; \
	VSUBSD   X1, X0, X0; \
	OPS      (R11)(R13*1), X0, X0; \
	VSUBSD   (R11)(BX*1), X0, X0; \
	VADDSD   X15, X0, X0; \
	VROUNDSD $1, X0, X0, X0; \
	VMULSD   (R11)(AX*4), X0, X0; \
	VMOVSD   (R11)(R9*1), X2; \
	VANDPD   X2, X0, X0; \
	VMOVSD   X0, (DI); \
	ADDQ     $8, SI; \
	ADDQ     $8, DI; \
	ADDQ     $8, R11

// func fwd64(y, x, tab *float64, l, n, rows int)
TEXT ·old_fwd64(SB), NOSPLIT, $0-48
	FWDARGS64
	LEAQ (AX)(AX*1), R13

f64row:
	MOVQ R8, R11
	MOVQ CX, R12

f64x8:
	CMPQ R12, $8
	JLT  f64x4
	FWD4(VMULPD, 0, Y0, Y1, Y2)
	FWD4(VMULPD, 32, Y3, Y4, Y5)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $8, R12
	JMP  f64x8

f64x4:
	CMPQ R12, $4
	JLT  f64x1
	FWD4(VMULPD, 0, Y0, Y1, Y2)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $4, R12

f64x1:
	TESTQ R12, R12
	JZ    f64next
	FWD1D(VMULSD)
	DECQ  R12
	JMP   f64x1

f64next:
	DECQ DX
	JNZ  f64row
	VZEROUPPER
	RET

// func fwdDiv64(y, x, tab *float64, l, n, rows int)
TEXT ·old_fwdDiv64(SB), NOSPLIT, $0-48
	FWDARGS64
	LEAQ (AX*4), R13

d64row:
	MOVQ R8, R11
	MOVQ CX, R12

d64x8:
	CMPQ R12, $8
	JLT  d64x4
	FWD4(VDIVPD, 0, Y0, Y1, Y2)
	FWD4(VDIVPD, 32, Y3, Y4, Y5)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $8, R12
	JMP  d64x8

d64x4:
	CMPQ R12, $4
	JLT  d64x1
	FWD4(VDIVPD, 0, Y0, Y1, Y2)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $4, R12

d64x1:
	TESTQ R12, R12
	JZ    d64next
	FWD1D(VDIVSD)
	DECQ  R12
	JMP   d64x1

d64next:
	DECQ DX
	JNZ  d64row
	VZEROUPPER
	RET

// GRAD4 is GRAD8 for 4 float64 elements at offset off: x at SI, g at
// R13, bi at DI, table rows at R11 and sums at R10 (below), R10+AX
// (above), all AX apart. The terms g & below and g & above add to the
// sums as they are.
#define GRAD4(off, Y0, Y1, Y2, Y3, Y4, Y5) \
	VMOVUPD off(SI), Y0; \
	VMOVUPD off(R13), Y1; \
	VMOVUPD off(R11), Y2; \
	VMOVUPD off(R11)(AX*1), Y3; \
	VCMPPD $0x0D, Y2, Y0, Y4; \
	VCMPPD $0x02, Y3, Y0, Y5; \
	VANDPD Y5, Y4, Y4; \
	VORPD off(R11)(AX*2), Y4, Y4; \
	VANDPD Y1, Y4, Y4; \
	VMOVUPD Y4, off(DI); \
	VCMPPD $0x01, Y2, Y0, Y2; \
	VCMPPD $0x0E, Y3, Y0, Y3; \
	VANDNPD Y3, Y2, Y3; \
	VANDPD Y1, Y2, Y2; \
	VANDPD Y1, Y3, Y3; \
	VADDPD off(R10), Y2, Y2; \
	VADDPD off(R10)(AX*1), Y3, Y3; \
	VMOVUPD Y2, off(R10); \
	VMOVUPD Y3, off(R10)(AX*1)

// func grad64(bi, gs, x, tab *float64, l, n, rows int, acc *float64)
TEXT ·old_grad64(SB), NOSPLIT, $0-64
	MOVQ bi+0(FP), DI
	MOVQ gs+8(FP), R13
	MOVQ x+16(FP), SI
	MOVQ tab+24(FP), R8
	MOVQ l+32(FP), AX
	MOVQ n+40(FP), CX
	MOVQ rows+48(FP), DX
	MOVQ acc+56(FP), R14
	SHLQ $3, AX

g64row:
	MOVQ R8, R11
	MOVQ R14, R10
	MOVQ CX, R12

g64x8:
	CMPQ R12, $8
	JLT  g64x4
	GRAD4(0, Y0, Y1, Y2, Y3, Y4, Y5)
	GRAD4(32, Y6, Y7, Y8, Y9, Y10, Y11)
	ADDQ $64, SI
	ADDQ $64, R13
	ADDQ $64, DI
	ADDQ $64, R11
	ADDQ $64, R10
	SUBQ $8, R12
	JMP  g64x8

g64x4:
	CMPQ R12, $4
	JLT  g64x1
	GRAD4(0, Y0, Y1, Y2, Y3, Y4, Y5)
	ADDQ $32, SI
	ADDQ $32, R13
	ADDQ $32, DI
	ADDQ $32, R11
	ADDQ $32, R10
	SUBQ $4, R12

g64x1:
	TESTQ R12, R12
	JZ    g64next
	VMOVSD  (SI), X0
	VMOVSD  (R13), X1
	VMOVSD  (R11), X2
	VMOVSD  (R11)(AX*1), X3
	VCMPSD  $0x0D, X2, X0, X4
	VCMPSD  $0x02, X3, X0, X5
	VANDPD  X5, X4, X4
	VMOVSD  (R11)(AX*2), X5
	VORPD   X5, X4, X4
	VANDPD  X1, X4, X4
	VMOVSD  X4, (DI)
	VCMPSD  $0x01, X2, X0, X2
	VCMPSD  $0x0E, X3, X0, X3
	VANDNPD X3, X2, X3
	VANDPD  X1, X2, X2
	VANDPD  X1, X3, X3
	VADDSD  (R10), X2, X2
	VMOVSD  X2, (R10)
	VADDSD  (R10)(AX*1), X3, X3
	VMOVSD  X3, (R10)(AX*1)
	ADDQ    $8, SI
	ADDQ    $8, R13
	ADDQ    $8, DI
	ADDQ    $8, R11
	ADDQ    $8, R10
	DECQ    R12
	JMP     g64x1

g64next:
	DECQ DX
	JNZ  g64row
	VZEROUPPER
	RET

// ADJ4 is ADJ8 for 4 float64 elements at offset off.
#define ADJ4(off, Y0, Y2, Y3, Y4, Y5) \
	VMOVUPD off(SI), Y0; \
	VMOVUPD off(R11), Y2; \
	VMOVUPD off(R11)(AX*1), Y3; \
	VCMPPD $0x0D, Y2, Y0, Y4; \
	VCMPPD $0x02, Y3, Y0, Y5; \
	VANDPD Y5, Y4, Y4; \
	VORPD off(R11)(AX*2), Y4, Y4; \
	VANDPD off(R13), Y4, Y4; \
	VCMPPD $0x01, Y2, Y0, Y2; \
	VCMPPD $0x0E, Y3, Y0, Y3; \
	VANDNPD Y3, Y2, Y3; \
	VANDPD off(R11)(BX*1), Y2, Y2; \
	VANDPD off(R11)(AX*4), Y3, Y3; \
	VORPD Y2, Y4, Y4; \
	VORPD Y3, Y4, Y4; \
	VMOVUPD Y4, off(DI)

// func adj64(out, dbi, x, tab *float64, l, n, rows int)
TEXT ·old_adj64(SB), NOSPLIT, $0-56
	MOVQ out+0(FP), DI
	MOVQ dbi+8(FP), R13
	MOVQ x+16(FP), SI
	MOVQ tab+24(FP), R8
	MOVQ l+32(FP), AX
	SHLQ $3, AX
	MOVQ n+40(FP), CX
	MOVQ rows+48(FP), DX
	LEAQ (AX)(AX*2), BX

a64row:
	MOVQ R8, R11
	MOVQ CX, R12

a64x8:
	CMPQ R12, $8
	JLT  a64x4
	ADJ4(0, Y0, Y2, Y3, Y4, Y5)
	ADJ4(32, Y6, Y8, Y9, Y10, Y11)
	ADDQ $64, SI
	ADDQ $64, R13
	ADDQ $64, DI
	ADDQ $64, R11
	SUBQ $8, R12
	JMP  a64x8

a64x4:
	CMPQ R12, $4
	JLT  a64x1
	ADJ4(0, Y0, Y2, Y3, Y4, Y5)
	ADDQ $32, SI
	ADDQ $32, R13
	ADDQ $32, DI
	ADDQ $32, R11
	SUBQ $4, R12

a64x1:
	TESTQ R12, R12
	JZ    a64next
	VMOVSD  (SI), X0
	VMOVSD  (R11), X2
	VMOVSD  (R11)(AX*1), X3
	VCMPSD  $0x0D, X2, X0, X4
	VCMPSD  $0x02, X3, X0, X5
	VANDPD  X5, X4, X4
	VMOVSD  (R11)(AX*2), X5
	VORPD   X5, X4, X4
	VMOVSD  (R13), X5
	VANDPD  X5, X4, X4
	VCMPSD  $0x01, X2, X0, X2
	VCMPSD  $0x0E, X3, X0, X3
	VANDNPD X3, X2, X3
	VMOVSD  (R11)(BX*1), X5
	VANDPD  X5, X2, X2
	VMOVSD  (R11)(AX*4), X5
	VANDPD  X5, X3, X3
	VORPD   X2, X4, X4
	VORPD   X3, X4, X4
	VMOVSD  X4, (DI)
	ADDQ    $8, SI
	ADDQ    $8, R13
	ADDQ    $8, DI
	ADDQ    $8, R11
	DECQ    R12
	JMP     a64x1

a64next:
	DECQ DX
	JNZ  a64row
	VZEROUPPER
	RET
