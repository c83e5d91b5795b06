//go:build !noasm && !gccgo && !safe

#include "textflag.h"

// AVX2 kernels of package bnkern (see kernel_amd64.go for the Go
// declarations and bnkern.go for the contracts). Every kernel walks
// channel blocks of 8 float32 (one YMM register, 32 bytes) with AX the
// byte offset of the block within a row; BX is the row stride in bytes.
// The operations and their order are those of the Go loops in
// kernel_go.go (no fused multiply-adds), so results are bit-identical.

// PFD is how far ahead (bytes) the reducing kernels prefetch their
// inputs. A group of four rows of c = 8·nb channels is 128·nb bytes, so
// two PREFETCHT0 per channel block at PFD(base)(AX*4) and
// PFD+64(base)(AX*4) cover the group PFD bytes ahead line by line (for
// other c the coverage is approximate; prefetches are hints and never
// fault). In same-process A/B runs of W7's forward+backward it was 3–10%
// faster at two threads, when both cores compete for memory (the
// hardware prefetchers stop at 4 KiB page boundaries), and neutral
// (±4%, noise) at one; 1, 4 and 8 KiB measured alike. The storing
// kernels gained nothing from it.
#define PFD 4096

// ACC64 converts the 8 float32 lanes of YS (XS is its low half) to
// float64 and adds them to the 8 accumulators at (P)(AX*2) (a block of 8
// float32 at offset AX is a block of 8 float64 at 2·AX). Clobbers Y14,
// Y15.
#define ACC64(XS, YS, P) \
	VCVTPS2PD    XS, Y15; \
	VEXTRACTF128 $1, YS, X14; \
	VCVTPS2PD    X14, Y14; \
	VADDPD       (P)(AX*2), Y15, Y15; \
	VADDPD       32(P)(AX*2), Y14, Y14; \
	VMOVUPD      Y15, (P)(AX*2); \
	VMOVUPD      Y14, 32(P)(AX*2)

// func stats(x, k *float32, p1, p2 *float64, n4, nb, stride int)
//
// For each of n4 groups of four rows and each block: d_i = x_i − k,
// p1 += float64((d0+d1)+(d2+d3)), p2 += float64((d0²+d1²)+(d2²+d3²)).
// SI is the group's first row.
TEXT ·old_stats(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ p1+16(FP), R8
	MOVQ p2+24(FP), R9
	MOVQ n4+32(FP), CX
	MOVQ nb+40(FP), DX
	MOVQ stride+48(FP), BX
	SHLQ $5, DX
	LEAQ (BX)(BX*2), R10

stats_group:
	MOVQ SI, R11
	XORQ AX, AX

stats_block:
	PREFETCHT0 PFD(SI)(AX*4)
	PREFETCHT0 PFD+64(SI)(AX*4)
	VMOVUPS (DI)(AX*1), Y0
	VMOVUPS (R11), Y1
	VMOVUPS (R11)(BX*1), Y2
	VMOVUPS (R11)(BX*2), Y3
	VMOVUPS (R11)(R10*1), Y4
	VSUBPS  Y0, Y1, Y1
	VSUBPS  Y0, Y2, Y2
	VSUBPS  Y0, Y3, Y3
	VSUBPS  Y0, Y4, Y4
	VADDPS  Y2, Y1, Y5
	VADDPS  Y4, Y3, Y6
	VADDPS  Y6, Y5, Y5
	VMULPS  Y1, Y1, Y1
	VMULPS  Y2, Y2, Y2
	VMULPS  Y3, Y3, Y3
	VMULPS  Y4, Y4, Y4
	VADDPS  Y2, Y1, Y1
	VADDPS  Y4, Y3, Y3
	VADDPS  Y3, Y1, Y1
	ACC64(X5, Y5, R8)
	ACC64(X1, Y1, R9)
	ADDQ    $32, R11
	ADDQ    $32, AX
	CMPQ    AX, DX
	JLT     stats_block
	LEAQ    (SI)(BX*4), SI
	DECQ    CX
	JNZ     stats_group
	VZEROUPPER
	RET

// func gradSums(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int)
//
// For each of n4 groups of four rows and each block:
// p1 += float64((g0+g1)+(g2+g3)),
// p2 += float64((g0·(x0−m) + g1·(x1−m)) + (g2·(x2−m) + g3·(x3−m))).
TEXT ·old_gradSums(SB), NOSPLIT, $0-64
	MOVQ dy+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ m+16(FP), R8
	MOVQ p1+24(FP), R9
	MOVQ p2+32(FP), R12
	MOVQ n4+40(FP), CX
	MOVQ nb+48(FP), DX
	MOVQ stride+56(FP), BX
	SHLQ $5, DX
	LEAQ (BX)(BX*2), R10

gs_group:
	MOVQ SI, R11
	MOVQ DI, R13
	XORQ AX, AX

gs_block:
	PREFETCHT0 PFD(SI)(AX*4)
	PREFETCHT0 PFD+64(SI)(AX*4)
	PREFETCHT0 PFD(DI)(AX*4)
	PREFETCHT0 PFD+64(DI)(AX*4)
	VMOVUPS (R8)(AX*1), Y0
	VMOVUPS (R11), Y1
	VMOVUPS (R11)(BX*1), Y2
	VMOVUPS (R11)(BX*2), Y3
	VMOVUPS (R11)(R10*1), Y4
	VADDPS  Y2, Y1, Y5
	VADDPS  Y4, Y3, Y6
	VADDPS  Y6, Y5, Y5
	VMOVUPS (R13), Y6
	VMOVUPS (R13)(BX*1), Y7
	VMOVUPS (R13)(BX*2), Y8
	VMOVUPS (R13)(R10*1), Y9
	VSUBPS  Y0, Y6, Y6
	VSUBPS  Y0, Y7, Y7
	VSUBPS  Y0, Y8, Y8
	VSUBPS  Y0, Y9, Y9
	VMULPS  Y6, Y1, Y1
	VMULPS  Y7, Y2, Y2
	VMULPS  Y8, Y3, Y3
	VMULPS  Y9, Y4, Y4
	VADDPS  Y2, Y1, Y1
	VADDPS  Y4, Y3, Y3
	VADDPS  Y3, Y1, Y1
	ACC64(X5, Y5, R9)
	ACC64(X1, Y1, R12)
	ADDQ    $32, R11
	ADDQ    $32, R13
	ADDQ    $32, AX
	CMPQ    AX, DX
	JLT     gs_block
	LEAQ    (SI)(BX*4), SI
	LEAQ    (DI)(BX*4), DI
	DECQ    CX
	JNZ     gs_group
	VZEROUPPER
	RET

// NORMBLOCK writes one block of y = (x − mu)·k + beta with the store ST:
// x row R11, y row R12, mu R8, k R9, beta R10.
#define NORMBLOCK(ST) \
	VMOVUPS (R11)(AX*1), Y0; \
	VSUBPS  (R8)(AX*1), Y0, Y0; \
	VMULPS  (R9)(AX*1), Y0, Y0; \
	VADDPS  (R10)(AX*1), Y0, Y0; \
	ST      Y0, (R12)(AX*1)

// func norm(x, y, mu, k, beta *float32, rows, nb, stride int)
TEXT ·old_norm(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), R11
	MOVQ y+8(FP), R12
	MOVQ mu+16(FP), R8
	MOVQ k+24(FP), R9
	MOVQ beta+32(FP), R10
	MOVQ rows+40(FP), CX
	MOVQ nb+48(FP), DX
	MOVQ stride+56(FP), BX
	SHLQ $5, DX

norm_row:
	XORQ AX, AX

norm_block:
	NORMBLOCK(VMOVUPS)
	ADDQ $32, AX
	CMPQ AX, DX
	JLT  norm_block
	ADDQ BX, R11
	ADDQ BX, R12
	DECQ CX
	JNZ  norm_row
	VZEROUPPER
	RET

// func normNT(x, y, mu, k, beta *float32, rows, nb, stride int)
//
// norm with non-temporal stores (y and stride 32-byte aligned).
TEXT ·old_normNT(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), R11
	MOVQ y+8(FP), R12
	MOVQ mu+16(FP), R8
	MOVQ k+24(FP), R9
	MOVQ beta+32(FP), R10
	MOVQ rows+40(FP), CX
	MOVQ nb+48(FP), DX
	MOVQ stride+56(FP), BX
	SHLQ $5, DX

normnt_row:
	XORQ AX, AX

normnt_block:
	NORMBLOCK(VMOVNTPS)
	ADDQ $32, AX
	CMPQ AX, DX
	JLT  normnt_block
	ADDQ BX, R11
	ADDQ BX, R12
	DECQ CX
	JNZ  normnt_row
	SFENCE
	VZEROUPPER
	RET

// DXBLOCK writes one block of dx = a·(dy − mdy) − b·(x − m) with the
// store ST: dy row R11, x row R12, dx row R13, a R8, mdy R9, b R10, m SI.
#define DXBLOCK(ST) \
	VMOVUPS (R11)(AX*1), Y0; \
	VSUBPS  (R9)(AX*1), Y0, Y0; \
	VMULPS  (R8)(AX*1), Y0, Y0; \
	VMOVUPS (R12)(AX*1), Y1; \
	VSUBPS  (SI)(AX*1), Y1, Y1; \
	VMULPS  (R10)(AX*1), Y1, Y1; \
	VSUBPS  Y1, Y0, Y0; \
	ST      Y0, (R13)(AX*1)

// func gradDx(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)
TEXT ·old_gradDx(SB), NOSPLIT, $0-80
	MOVQ dy+0(FP), R11
	MOVQ x+8(FP), R12
	MOVQ dx+16(FP), R13
	MOVQ a+24(FP), R8
	MOVQ mdy+32(FP), R9
	MOVQ b+40(FP), R10
	MOVQ m+48(FP), SI
	MOVQ rows+56(FP), CX
	MOVQ nb+64(FP), DX
	MOVQ stride+72(FP), BX
	SHLQ $5, DX

dx_row:
	XORQ AX, AX

dx_block:
	DXBLOCK(VMOVUPS)
	ADDQ $32, AX
	CMPQ AX, DX
	JLT  dx_block
	ADDQ BX, R11
	ADDQ BX, R12
	ADDQ BX, R13
	DECQ CX
	JNZ  dx_row
	VZEROUPPER
	RET

// func gradDxNT(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)
//
// gradDx with non-temporal stores (dx and stride 32-byte aligned).
TEXT ·old_gradDxNT(SB), NOSPLIT, $0-80
	MOVQ dy+0(FP), R11
	MOVQ x+8(FP), R12
	MOVQ dx+16(FP), R13
	MOVQ a+24(FP), R8
	MOVQ mdy+32(FP), R9
	MOVQ b+40(FP), R10
	MOVQ m+48(FP), SI
	MOVQ rows+56(FP), CX
	MOVQ nb+64(FP), DX
	MOVQ stride+72(FP), BX
	SHLQ $5, DX

dxnt_row:
	XORQ AX, AX

dxnt_block:
	DXBLOCK(VMOVNTPS)
	ADDQ $32, AX
	CMPQ AX, DX
	JLT  dxnt_block
	ADDQ BX, R11
	ADDQ BX, R12
	ADDQ BX, R13
	DECQ CX
	JNZ  dxnt_row
	SFENCE
	VZEROUPPER
	RET

// func scale(dy, dx, k *float32, rows, nb, stride int)
//
// dx = dy·k.
TEXT ·old_scale(SB), NOSPLIT, $0-48
	MOVQ dy+0(FP), R11
	MOVQ dx+8(FP), R12
	MOVQ k+16(FP), R8
	MOVQ rows+24(FP), CX
	MOVQ nb+32(FP), DX
	MOVQ stride+40(FP), BX
	SHLQ $5, DX

scale_row:
	XORQ AX, AX

scale_block:
	VMOVUPS (R11)(AX*1), Y0
	VMULPS  (R8)(AX*1), Y0, Y0
	VMOVUPS Y0, (R12)(AX*1)
	ADDQ    $32, AX
	CMPQ    AX, DX
	JLT     scale_block
	ADDQ    BX, R11
	ADDQ    BX, R12
	DECQ    CX
	JNZ     scale_row
	VZEROUPPER
	RET
