package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// The packing routines use VEX or EVEX encodings only: a legacy SSE
// instruction (MOVUPS, MOVQ X) after a 256-bit one has dirtied the upper
// YMM halves costs a state transition on some CPUs; mixing them in
// packAT6NF32's masked-panel loop made those routines 30–70 times slower.

// packA6x8F32 packs six rows of A, 8 columns per step, with a 6×8
// register transpose.
func packA6x8F32(g *gen) {
	g.fn("packA6x8F32", "func(dst, src *float32, lda, n8 int)",
		"packA6x8F32 packs six rows of a row-major float32 matrix (row stride",
		"lda elements), 8*n8 columns, into dst with the six elements of each",
		"column contiguous: dst[p*6+i] = src[i*lda+p]. Each group of 8 columns",
		"is a 6×8 transpose in registers, written as six 32-byte stores.")
	packA6Prologue(g)
	g.JZ(lbl("done"))
	g.Label("loop")
	packA6Loads(g)
	Y := g.v
	g.Comment("t(2j), t(2j+1): rows 2j and 2j+1 interleaved; as 64-bit pairs",
		"P(p) = (row 2j [p], row 2j+1 [p]): lo = [P0 P1 | P4 P5], hi = [P2 P3 | P6 P7].")
	g.VUNPCKLPS(Y(1), Y(0), Y(6))
	g.VUNPCKHPS(Y(1), Y(0), Y(7))
	g.VUNPCKLPS(Y(3), Y(2), Y(8))
	g.VUNPCKHPS(Y(3), Y(2), Y(9))
	g.VUNPCKLPS(Y(5), Y(4), Y(10))
	g.VUNPCKHPS(Y(5), Y(4), Y(11))
	g.Comment("16-byte chunks of the output in order, low lanes for columns 0..3,",
		"high lanes for 4..7.")
	g.VUNPCKLPD(Y(8), Y(6), Y(0))
	g.VSHUFPD(imm(0x0A), Y(6), Y(10), Y(1))
	g.VUNPCKHPD(Y(10), Y(8), Y(2))
	g.VUNPCKLPD(Y(9), Y(7), Y(3))
	g.VSHUFPD(imm(0x0A), Y(7), Y(11), Y(4))
	g.VUNPCKHPD(Y(11), Y(9), Y(5))
	g.VPERM2F128(imm(0x20), Y(1), Y(0), Y(12))
	g.VPERM2F128(imm(0x20), Y(3), Y(2), Y(13))
	g.VPERM2F128(imm(0x20), Y(5), Y(4), Y(14))
	g.VPERM2F128(imm(0x31), Y(1), Y(0), Y(6))
	g.VPERM2F128(imm(0x31), Y(3), Y(2), Y(7))
	g.VPERM2F128(imm(0x31), Y(5), Y(4), Y(8))
	for i, r := range []int{12, 13, 14, 6, 7, 8} {
		g.VMOVUPS(Y(r), mem(reg.RDI, 32*i))
	}
	packA6Epilogue(g)
}

// packA6x4F64 is packA6x8F32 for float64, 4 columns per step.
func packA6x4F64(g *gen) {
	g.fn("packA6x4F64", "func(dst, src *float64, lda, n4 int)",
		"packA6x4F64 is packA6x8F32 for float64, 4*n4 columns.")
	packA6Prologue(g)
	g.JZ(lbl("done"))
	g.Label("loop")
	packA6Loads(g)
	Y := g.v
	g.Comment("Pairs (row 2j [p], row 2j+1 [p]): lo = [p0 | p2], hi = [p1 | p3].")
	g.VUNPCKLPD(Y(1), Y(0), Y(6))
	g.VUNPCKHPD(Y(1), Y(0), Y(7))
	g.VUNPCKLPD(Y(3), Y(2), Y(8))
	g.VUNPCKHPD(Y(3), Y(2), Y(9))
	g.VUNPCKLPD(Y(5), Y(4), Y(10))
	g.VUNPCKHPD(Y(5), Y(4), Y(11))
	g.VPERM2F128(imm(0x20), Y(8), Y(6), Y(0))
	g.VPERM2F128(imm(0x20), Y(7), Y(10), Y(1))
	g.VPERM2F128(imm(0x20), Y(11), Y(9), Y(2))
	g.VPERM2F128(imm(0x31), Y(8), Y(6), Y(3))
	g.VPERM2F128(imm(0x31), Y(7), Y(10), Y(4))
	g.VPERM2F128(imm(0x31), Y(11), Y(9), Y(5))
	for i := range 6 {
		g.VMOVUPD(Y(i), mem(reg.RDI, 32*i))
	}
	packA6Epilogue(g)
}

// packA6Prologue loads the arguments of packA6x8F32/packA6x4F64: DI dst,
// AX row 0, R8 the row stride in bytes, CX the column groups, R9 row 3,
// R10 row 6 (the next panel's first row), R11 row 9; it ends with the
// flags of TESTQ CX.
func packA6Prologue(g *gen) {
	g.Load(g.ParamIndex(0), reg.RDI)
	g.Load(g.ParamIndex(1), reg.RAX)
	g.Load(g.ParamIndex(2), reg.R8)
	g.Load(g.ParamIndex(3), reg.RCX)
	g.shlSize(reg.R8)
	g.LEAQ(memi(reg.RAX, reg.R8, 2, 0), reg.R9)
	g.ADDQ(reg.R8, reg.R9)
	g.LEAQ(memi(reg.R9, reg.R8, 2, 0), reg.R10)
	g.ADDQ(reg.R8, reg.R10)
	g.LEAQ(memi(reg.R10, reg.R8, 2, 0), reg.R11)
	g.ADDQ(reg.R8, reg.R11)
	g.TESTQ(reg.RCX, reg.RCX)
}

func packA6Loads(g *gen) {
	g.Comment("Fetch the same columns of the next six rows: the next call packs",
		"them, and each row segment is too short for hardware prefetch.")
	g.PREFETCHT0(mem(reg.R10, 0))
	g.PREFETCHT0(memi(reg.R10, reg.R8, 1, 0))
	g.PREFETCHT0(memi(reg.R10, reg.R8, 2, 0))
	g.PREFETCHT0(mem(reg.R11, 0))
	g.PREFETCHT0(memi(reg.R11, reg.R8, 1, 0))
	g.PREFETCHT0(memi(reg.R11, reg.R8, 2, 0))
	g.vmov(mem(reg.RAX, 0), g.v(0))
	g.vmov(memi(reg.RAX, reg.R8, 1, 0), g.v(1))
	g.vmov(memi(reg.RAX, reg.R8, 2, 0), g.v(2))
	g.vmov(mem(reg.R9, 0), g.v(3))
	g.vmov(memi(reg.R9, reg.R8, 1, 0), g.v(4))
	g.vmov(memi(reg.R9, reg.R8, 2, 0), g.v(5))
}

func packA6Epilogue(g *gen) {
	for _, r := range []reg.Register{reg.RAX, reg.R9, reg.R10, reg.R11} {
		g.ADDQ(imm(32), r)
	}
	g.ADDQ(imm(192), reg.RDI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop"))
	g.Label("done")
	g.VZEROUPPER()
	g.RET()
}

// copyRows writes copyRows<W>: n rows of W = nv vectors, a full B
// micro-panel of the tier's kernels when B is not transposed.
func copyRows(g *gen, nv int) {
	w := nv * g.isa.bytes
	name := fmt.Sprintf("copyRows%d", w)
	g.fn(name, "func(dst, src *byte, stride, n int)",
		fmt.Sprintf("%s copies n rows of %d bytes, src rows stride bytes apart, to", name, w),
		fmt.Sprintf("consecutive %d-byte rows of dst (%s).", w, g.isa.name))
	g.Load(g.Param("dst"), reg.RDI)
	g.Load(g.Param("src"), reg.RSI)
	g.Load(g.Param("stride"), reg.R8)
	g.Load(g.Param("n"), reg.RCX)
	g.TESTQ(reg.RCX, reg.RCX)
	g.JZ(lbl("done"))
	g.Label("loop")
	g.PREFETCHT0(memi(reg.RSI, reg.R8, 8, 0))
	for v := range nv {
		g.VMOVUPS(mem(reg.RSI, v*g.isa.bytes), g.v(v))
	}
	for v := range nv {
		g.VMOVUPS(g.v(v), mem(reg.RDI, v*g.isa.bytes))
	}
	g.ADDQ(reg.R8, reg.RSI)
	g.ADDQ(imm(w), reg.RDI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop"))
	g.Label("done")
	g.VZEROUPPER()
	g.RET()
}

// packAT6NF32 packs panels of six contiguous columns in one pass over the
// rows, with a masked last panel.
func packAT6NF32(g *gen) {
	g.fn("packAT6NF32", "func(dst, src *float32, lda, kc, np int, mask *[8]int32)",
		"packAT6NF32 packs np panels of six contiguous columns of a row-major",
		"float32 matrix (row stride lda), rows 0..kc-1, in one pass over the rows:",
		"dst[q*kc*6 + p*6 + i] = src[p*lda + q*6 + i]. Each row is read once for",
		"all panels, instead of once per panel. A non-nil mask adds one more",
		"panel of the columns whose mask lanes are set (the first ones), the",
		"others zero; masked-out lanes are not read.")
	Y := g.v
	g.Load(g.Param("dst"), reg.RDI)
	g.Load(g.Param("src"), reg.RSI)
	g.Load(g.Param("lda"), reg.R8)
	g.Load(g.Param("kc"), reg.RCX)
	g.Load(g.Param("np"), reg.R9)
	g.Load(g.Param("mask"), reg.RAX)
	g.SHLQ(imm(2), reg.R8)
	g.MOVQ(reg.R8, reg.RBX)
	g.Comment("Prefetch 32 rows ahead.")
	g.SHLQ(imm(5), reg.RBX)
	g.Comment("R10: panel stride, kc*24 bytes.")
	g.LEAQ(memi(reg.RCX, reg.RCX, 2, 0), reg.R10)
	g.SHLQ(imm(3), reg.R10)
	g.TESTQ(reg.RAX, reg.RAX)
	g.JZ(lbl("nomask"))
	g.VMOVDQU(mem(reg.RAX, 0), Y(15))
	g.Label("nomask")
	g.TESTQ(reg.RCX, reg.RCX)
	g.JZ(lbl("done"))
	g.Label("row")
	g.PREFETCHT0(memi(reg.RSI, reg.RBX, 1, 0))
	g.MOVQ(reg.RSI, reg.R11)
	g.MOVQ(reg.RDI, reg.R12)
	g.MOVQ(reg.R9, reg.R13)
	g.TESTQ(reg.R13, reg.R13)
	g.JZ(lbl("partial"))
	g.Label("panel")
	g.VMOVUPS(mem(reg.R11, 0), reg.X0)
	g.VMOVQ(mem(reg.R11, 16), reg.X1)
	g.VMOVUPS(reg.X0, mem(reg.R12, 0))
	g.VMOVQ(reg.X1, mem(reg.R12, 16))
	g.ADDQ(imm(24), reg.R11)
	g.ADDQ(reg.R10, reg.R12)
	g.DECQ(reg.R13)
	g.JNZ(lbl("panel"))
	g.Label("partial")
	g.TESTQ(reg.RAX, reg.RAX)
	g.JZ(lbl("next"))
	g.VMASKMOVPS(mem(reg.R11, 0), Y(15), Y(0))
	g.VMOVUPS(reg.X0, mem(reg.R12, 0))
	g.VEXTRACTF128(imm(1), Y(0), reg.X1)
	g.VMOVQ(reg.X1, mem(reg.R12, 16))
	g.Label("next")
	g.ADDQ(reg.R8, reg.RSI)
	g.ADDQ(imm(24), reg.RDI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("row"))
	g.Label("done")
	g.VZEROUPPER()
	g.RET()
}

// packAT6NF64 is packAT6NF32 for float64, without the partial panel.
func packAT6NF64(g *gen) {
	g.fn("packAT6NF64", "func(dst, src *float64, lda, kc, np int)",
		"packAT6NF64 is packAT6NF32 for float64, without the partial panel.")
	g.Load(g.Param("dst"), reg.RDI)
	g.Load(g.Param("src"), reg.RSI)
	g.Load(g.Param("lda"), reg.R8)
	g.Load(g.Param("kc"), reg.RCX)
	g.Load(g.Param("np"), reg.R9)
	g.SHLQ(imm(3), reg.R8)
	g.Comment("R10: panel stride, kc*48 bytes.")
	g.LEAQ(memi(reg.RCX, reg.RCX, 2, 0), reg.R10)
	g.SHLQ(imm(4), reg.R10)
	g.TESTQ(reg.RCX, reg.RCX)
	g.JZ(lbl("done"))
	g.TESTQ(reg.R9, reg.R9)
	g.JZ(lbl("done"))
	g.Label("row")
	g.PREFETCHT0(memi(reg.RSI, reg.R8, 8, 0))
	g.MOVQ(reg.RSI, reg.R11)
	g.MOVQ(reg.RDI, reg.R12)
	g.MOVQ(reg.R9, reg.R13)
	g.Label("panel")
	g.VMOVUPD(mem(reg.R11, 0), g.v(0))
	g.VMOVUPD(mem(reg.R11, 32), reg.X1)
	g.VMOVUPD(g.v(0), mem(reg.R12, 0))
	g.VMOVUPD(reg.X1, mem(reg.R12, 32))
	g.ADDQ(imm(48), reg.R11)
	g.ADDQ(reg.R10, reg.R12)
	g.DECQ(reg.R13)
	g.JNZ(lbl("panel"))
	g.ADDQ(reg.R8, reg.RSI)
	g.ADDQ(imm(48), reg.RDI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("row"))
	g.Label("done")
	g.VZEROUPPER()
	g.RET()
}

// gatherRows writes gatherRows<W>F32/F64: n rows of W = nv vectors, row
// r from a[offs[r]+delta] or zeros, into consecutive rows of dst.
func gatherRows(g *gen, nv int) {
	w := nv * g.isa.bytes
	suffix := g.suffix()
	t := g.goType()
	name := fmt.Sprintf("gatherRows%d%s", w, suffix)
	g.fn(name, fmt.Sprintf("func(dst, a, zero *%s, offs *int, n, delta, limit int) (bad bool)", t),
		fmt.Sprintf("%s copies n rows of %d bytes into consecutive rows of dst", name, w),
		fmt.Sprintf("(%s): row r from a[offs[r]+delta], or from the zero buffer when", g.isa.name),
		"offs[r] < 0. An offset greater than limit stops the copy and returns",
		"bad = true.")
	g.Load(g.Param("dst"), reg.RDI)
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("zero"), reg.RDX)
	g.Load(g.Param("offs"), reg.RSI)
	g.Load(g.Param("n"), reg.RCX)
	g.Load(g.Param("delta"), reg.R8)
	g.LEAQ(memi(reg.RAX, reg.R8, uint8(g.size), 0), reg.RAX)
	bad := g.arg("bad")
	g.TESTQ(reg.RCX, reg.RCX)
	g.JZ(lbl("done"))
	g.Label("loop")
	g.MOVQ(mem(reg.RSI, 0), reg.R9)
	g.CMPQ(reg.R9, g.arg("limit"))
	g.JGT(lbl("bad"))
	g.TESTQ(reg.R9, reg.R9)
	g.LEAQ(memi(reg.RAX, reg.R9, uint8(g.size), 0), reg.R9)
	g.CMOVQLT(reg.RDX, reg.R9)
	for v := range nv {
		g.vmov(mem(reg.R9, v*g.isa.bytes), g.v(v))
	}
	for v := range nv {
		g.vmov(g.v(v), mem(reg.RDI, v*g.isa.bytes))
	}
	g.ADDQ(imm(8), reg.RSI)
	g.ADDQ(imm(w), reg.RDI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop"))
	g.Label("done")
	g.MOVB(imm(0), bad)
	g.VZEROUPPER()
	g.RET()
	g.badExit(bad)
}

// gatherSegs writes gatherSegs<C>F32/F64: n rows of chunks chunks of C =
// one vector each, chunk c of row r from a[offs[c*ldo+r]:] or zeros: a B
// micro-panel whose columns span several whole segments of a Rows B.
func gatherSegs(g *gen) {
	w := g.isa.bytes
	suffix := g.suffix()
	t := g.goType()
	name := fmt.Sprintf("gatherSegs%d%s", w, suffix)
	g.fn(name, fmt.Sprintf("func(dst, a, zero *%s, offs *int, ldo, n, chunks, limit int) (bad bool)", t),
		fmt.Sprintf("%s copies n rows of chunks %d-byte chunks into consecutive", name, w),
		fmt.Sprintf("rows of dst (%s): chunk c of row r from a[offs[c*ldo+r]], or from the", g.isa.name),
		"zero buffer when that offset is negative. An offset greater than",
		"limit stops the copy and returns bad = true.")
	g.Load(g.Param("dst"), reg.RDI)
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("zero"), reg.RDX)
	g.Load(g.Param("offs"), reg.RSI)
	g.Load(g.Param("ldo"), reg.R8)
	g.SHLQ(imm(3), reg.R8)
	g.Load(g.Param("n"), reg.RCX)
	bad := g.arg("bad")
	g.TESTQ(reg.RCX, reg.RCX)
	g.JZ(lbl("done"))
	g.Label("row")
	g.MOVQ(reg.RSI, reg.R10)
	g.Load(g.Param("chunks"), reg.R11)
	g.Label("chunk")
	g.MOVQ(mem(reg.R10, 0), reg.R9)
	g.CMPQ(reg.R9, g.arg("limit"))
	g.JGT(lbl("bad"))
	g.TESTQ(reg.R9, reg.R9)
	g.LEAQ(memi(reg.RAX, reg.R9, uint8(g.size), 0), reg.R9)
	g.CMOVQLT(reg.RDX, reg.R9)
	g.vmov(mem(reg.R9, 0), g.v(0))
	g.vmov(g.v(0), mem(reg.RDI, 0))
	g.ADDQ(imm(w), reg.RDI)
	g.ADDQ(reg.R8, reg.R10)
	g.DECQ(reg.R11)
	g.JNZ(lbl("chunk"))
	g.ADDQ(imm(8), reg.RSI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("row"))
	g.Label("done")
	g.MOVB(imm(0), bad)
	g.VZEROUPPER()
	g.RET()
	g.badExit(bad)
}

// addOffsets writes the routine that adds v to n ints: dst[t] = src[t] + v
// (a Rows operand's segment offsets, rowsMap-style: a row's base plus a
// per-column template). The AVX-512 routine takes every element, the
// last partial vector under a mask; the AVX2 one whole vectors only.
func addOffsets(g *gen) {
	bits := g.isa.bytes * 8
	lanes := g.isa.bytes / 8
	name := fmt.Sprintf("addOffsets%d", bits)
	doc := fmt.Sprintf("%s sets dst[t] = src[t] + v for t < n (%s).", name, g.isa.name)
	if g.isa.bytes != 64 {
		doc = fmt.Sprintf("%s sets dst[t] = src[t] + v for t < n (%s; n a multiple of %d).", name, g.isa.name, lanes)
	}
	g.fn(name, "func(dst, src *int, n, v int)", doc)
	g.Load(g.Param("dst"), reg.RDI)
	g.Load(g.Param("src"), reg.RSI)
	g.Load(g.Param("n"), reg.RCX)
	vv, x := g.v(0), g.v(1)
	g.VPBROADCASTQ(g.arg("v"), vv)
	g.CMPQ(reg.RCX, imm(lanes))
	g.JL(lbl("tail"))
	g.Label("loop")
	g.VPADDQ(mem(reg.RSI, 0), vv, x)
	if g.isa.bytes == 64 {
		g.VMOVDQU64(x, mem(reg.RDI, 0))
	} else {
		g.VMOVDQU(x, mem(reg.RDI, 0))
	}
	g.ADDQ(imm(g.isa.bytes), reg.RSI)
	g.ADDQ(imm(g.isa.bytes), reg.RDI)
	g.SUBQ(imm(lanes), reg.RCX)
	g.CMPQ(reg.RCX, imm(lanes))
	g.JGE(lbl("loop"))
	g.Label("tail")
	if g.isa.bytes == 64 {
		g.Comment("The last n < 8 elements under a mask.")
		g.TESTQ(reg.RCX, reg.RCX)
		g.JZ(lbl("done"))
		g.MOVL(operand.U32(1), reg.R8L)
		g.SHLL(reg.CL, reg.R8L)
		g.DECL(reg.R8L)
		g.KMOVW(reg.R8L, reg.K1)
		g.VMOVDQU64_Z(mem(reg.RSI, 0), reg.K1, x)
		g.VPADDQ(x, vv, x)
		g.VMOVDQU64(x, reg.K1, mem(reg.RDI, 0))
	}
	g.Label("done")
	g.VZEROUPPER()
	g.RET()
}
