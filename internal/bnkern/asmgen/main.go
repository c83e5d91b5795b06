// Command asmgen writes the assembly of package bnkern and the Go
// declarations of its block kernels, with avo: one file pair per ISA tier,
//
//	avx2_amd64.s,   avx2_amd64.go    AVX2, channel blocks of 8 (YMM)
//	avx512_amd64.s, avx512_amd64.go  AVX-512, pairs of blocks (ZMM), an
//	                                 odd last block on YMM
//
// from one description of each kernel's block (kernel_go.go's loops, same
// operations in the same order, no fused multiply-adds), so every tier
// gives the same bits. Run it with go generate in internal/bnkern; the
// output is deterministic, so a second run leaves the tree unchanged.
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"

	"github.com/tapegrad/tapegrad/internal/avogen"
)

func main() {
	dir := flag.String("dir", ".", "directory to write the files to")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("asmgen: ")
	for _, f := range files {
		asm, stubs, err := generate(f.zmm)
		if err != nil {
			log.Fatalf("%s: %+v", f.name, err)
		}
		write(filepath.Join(*dir, f.name+"_amd64.s"), asm)
		write(filepath.Join(*dir, f.name+"_amd64.go"), stubs)
	}
}

// files are the file pairs asmgen writes: name_amd64.s and name_amd64.go.
var files = []struct {
	name string
	zmm  bool
}{
	{"avx2", false},
	{"avx512", true},
}

func write(path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
}

// generate writes every kernel of one tier and returns the assembly and
// the Go declarations.
func generate(zmm bool) (asm, stubs []byte, err error) {
	ctx := build.NewContext()
	ctx.ConstraintExpr("amd64,!noasm,!gccgo,!safe")
	g := &gen{Context: ctx, zmm: zmm}
	g.tier = "AVX2"
	if zmm {
		g.tier = "AVX512"
	}
	stats(g)
	gradSums(g)
	norm(g, false)
	gradDx(g, false)
	if !zmm {
		// The streaming variants exist on AVX2 only: a ZMM non-temporal
		// store needs 64-byte alignment, which rows of 8k channels lack.
		norm(g, true)
		gradDx(g, true)
	}
	scale(g)
	return avogen.Render(ctx, "bnkern")
}

// gen is an avo context writing one tier's kernels.
type gen struct {
	*build.Context
	zmm  bool   // the tier has ZMM: blocks run in pairs
	tier string // "AVX2" or "AVX512", in routine names
	w    int    // bytes of the block being emitted: 32 (YMM) or 64 (ZMM)
}

var (
	ymms = []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7, reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15}
	zmms = []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7, reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15}
	xmms = []reg.VecPhysical{reg.X0, reg.X1, reg.X2, reg.X3, reg.X4, reg.X5, reg.X6, reg.X7, reg.X8, reg.X9, reg.X10, reg.X11, reg.X12, reg.X13, reg.X14, reg.X15}
)

// v is vector register i at the current block width; half is its low half.
func (g *gen) v(i int) reg.VecPhysical {
	if g.w == 64 {
		return zmms[i]
	}
	return ymms[i]
}

func (g *gen) half(i int) reg.VecPhysical {
	if g.w == 64 {
		return ymms[i]
	}
	return xmms[i]
}

// pfd is how far ahead (bytes) the reducing kernels prefetch their
// inputs. A group of four rows of c = 8·nb channels is 128·nb bytes, so
// PREFETCHT0 at pfd(base)(AX*4), pfd+64(base)(AX*4), ... per block cover
// the group pfd bytes ahead line by line (for other c the coverage is
// approximate; prefetches are hints and never fault). In same-process A/B
// runs of W7's forward+backward it was 3–10% faster at two threads and
// neutral at one (AVX2, hand-written kernels).
const pfd = 4096

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

func memi(base, index reg.Register, scale uint8, disp int) operand.Mem {
	return operand.Mem{Base: base, Index: index, Scale: scale, Disp: disp}
}

func imm(v int) operand.Constant {
	if v >= 0 && v < 256 {
		return operand.U8(v)
	}
	return operand.U32(v)
}

func lbl(name string) operand.LabelRef { return operand.LabelRef(name) }

// fn starts a NOSPLIT function with a Go signature and its doc comment.
func (g *gen) fn(name, sig string, doc ...string) string {
	name += g.tier
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(sig)
	g.Pragma("noescape")
	g.Doc(append([]string{name + " " + doc[0]}, doc[1:]...)...)
	return name
}

// args loads parameters into registers.
func (g *gen) args(pairs ...any) {
	for i := 0; i < len(pairs); i += 2 {
		b, err := g.Param(pairs[i].(string)).Resolve()
		if err != nil {
			panic(err)
		}
		g.MOVQ(b.Addr, pairs[i+1].(reg.Register))
	}
}

// blocks emits the loop over a row's channel blocks (AX the byte offset,
// DX = 32·nb its end): body(), then AX and the pointers inner advance by
// the block. With ZMM, blocks run in pairs up to R14 = DX &^ 63 and an odd
// last block on YMM.
func (g *gen) blocks(name string, body func(), inner ...reg.Register) {
	step := func() {
		for _, r := range inner {
			g.ADDQ(imm(g.w), r)
		}
		g.ADDQ(imm(g.w), reg.RAX)
	}
	if !g.zmm {
		g.w = 32
		g.Label(name + "_block")
		body()
		step()
		g.CMPQ(reg.RAX, reg.RDX)
		g.JLT(lbl(name + "_block"))
		return
	}
	g.w = 64
	g.Label(name + "_zblock")
	g.CMPQ(reg.RAX, reg.R14)
	g.JGE(lbl(name + "_ytail"))
	body()
	step()
	g.JMP(lbl(name + "_zblock"))
	g.Label(name + "_ytail")
	g.CMPQ(reg.RAX, reg.RDX)
	g.JGE(lbl(name + "_next"))
	g.w = 32
	body()
	g.Label(name + "_next")
}

// blockEnd sets DX = 32·nb (from nb in DX) and, with ZMM, R14 = DX &^ 63.
func (g *gen) blockEnd() {
	g.SHLQ(imm(5), reg.RDX)
	if g.zmm {
		g.MOVQ(reg.RDX, reg.R14)
		g.ANDQ(operand.I8(-64), reg.R14)
	}
}

// prefetch emits the look-ahead prefetches of a block at base.
func (g *gen) prefetch(base reg.Register) {
	for o := 0; o < 4*g.w; o += 64 {
		g.PREFETCHT0(memi(base, reg.RAX, 4, pfd+o))
	}
}

// acc64 converts the float32 lanes of v(s) to float64 and adds them to
// the accumulators at (p)(AX*2) (a block of float32 at offset AX is a
// block of float64 at 2·AX). Clobbers v(14), v(15).
func (g *gen) acc64(s int, p reg.Register) {
	g.VCVTPS2PD(g.half(s), g.v(15))
	if g.w == 64 {
		g.VEXTRACTF32X8(imm(1), g.v(s), g.half(14))
	} else {
		g.VEXTRACTF128(imm(1), g.v(s), g.half(14))
	}
	g.VCVTPS2PD(g.half(14), g.v(14))
	g.VADDPD(memi(p, reg.RAX, 2, 0), g.v(15), g.v(15))
	g.VADDPD(memi(p, reg.RAX, 2, g.w), g.v(14), g.v(14))
	g.VMOVUPD(g.v(15), memi(p, reg.RAX, 2, 0))
	g.VMOVUPD(g.v(14), memi(p, reg.RAX, 2, g.w))
}

// load4 loads the block of four rows at base (row stride BX, R10 = 3·BX)
// into v(r)..v(r+3).
func (g *gen) load4(base reg.Register, r int) {
	g.VMOVUPS(mem(base, 0), g.v(r))
	g.VMOVUPS(memi(base, reg.RBX, 1, 0), g.v(r+1))
	g.VMOVUPS(memi(base, reg.RBX, 2, 0), g.v(r+2))
	g.VMOVUPS(memi(base, reg.R10, 1, 0), g.v(r+3))
}

func (g *gen) done() {
	g.VZEROUPPER()
	g.RET()
}

func stats(g *gen) {
	g.fn("stats", "func(x, k *float32, p1, p2 *float64, n4, nb, stride int)",
		"is, per group of four rows and channel < 8·nb, d_i = x_i − k,",
		"p1 += float64((d0+d1)+(d2+d3)), p2 += float64((d0²+d1²)+(d2²+d3²))",
		"with every square rounded to float32 (SI is the group's first row).")
	g.args("x", reg.RSI, "k", reg.RDI, "p1", reg.R8, "p2", reg.R9, "n4", reg.RCX, "nb", reg.RDX, "stride", reg.RBX)
	g.blockEnd()
	g.LEAQ(memi(reg.RBX, reg.RBX, 2, 0), reg.R10)
	g.Label("stats_group")
	g.MOVQ(reg.RSI, reg.R11)
	g.XORQ(reg.RAX, reg.RAX)
	g.blocks("stats", func() {
		g.prefetch(reg.RSI)
		g.VMOVUPS(memi(reg.RDI, reg.RAX, 1, 0), g.v(0))
		g.load4(reg.R11, 1)
		for i := 1; i <= 4; i++ {
			g.VSUBPS(g.v(0), g.v(i), g.v(i))
		}
		g.VADDPS(g.v(2), g.v(1), g.v(5))
		g.VADDPS(g.v(4), g.v(3), g.v(6))
		g.VADDPS(g.v(6), g.v(5), g.v(5))
		for i := 1; i <= 4; i++ {
			g.VMULPS(g.v(i), g.v(i), g.v(i))
		}
		g.VADDPS(g.v(2), g.v(1), g.v(1))
		g.VADDPS(g.v(4), g.v(3), g.v(3))
		g.VADDPS(g.v(3), g.v(1), g.v(1))
		g.acc64(5, reg.R8)
		g.acc64(1, reg.R9)
	}, reg.R11)
	g.LEAQ(memi(reg.RSI, reg.RBX, 4, 0), reg.RSI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("stats_group"))
	g.done()
}

func gradSums(g *gen) {
	g.fn("gradSums", "func(dy, x, m *float32, p1, p2 *float64, n4, nb, stride int)",
		"is, per group of four rows and channel < 8·nb,",
		"p1 += float64((g0+g1)+(g2+g3)),",
		"p2 += float64((g0·(x0−m)+g1·(x1−m))+(g2·(x2−m)+g3·(x3−m))) with every",
		"product rounded to float32.")
	g.args("dy", reg.RSI, "x", reg.RDI, "m", reg.R8, "p1", reg.R9, "p2", reg.R12, "n4", reg.RCX, "nb", reg.RDX, "stride", reg.RBX)
	g.blockEnd()
	g.LEAQ(memi(reg.RBX, reg.RBX, 2, 0), reg.R10)
	g.Label("gs_group")
	g.MOVQ(reg.RSI, reg.R11)
	g.MOVQ(reg.RDI, reg.R13)
	g.XORQ(reg.RAX, reg.RAX)
	g.blocks("gs", func() {
		g.prefetch(reg.RSI)
		g.prefetch(reg.RDI)
		g.VMOVUPS(memi(reg.R8, reg.RAX, 1, 0), g.v(0))
		g.load4(reg.R11, 1)
		g.VADDPS(g.v(2), g.v(1), g.v(5))
		g.VADDPS(g.v(4), g.v(3), g.v(6))
		g.VADDPS(g.v(6), g.v(5), g.v(5))
		g.load4(reg.R13, 6)
		for i := 6; i <= 9; i++ {
			g.VSUBPS(g.v(0), g.v(i), g.v(i))
		}
		for i := 1; i <= 4; i++ {
			g.VMULPS(g.v(i+5), g.v(i), g.v(i))
		}
		g.VADDPS(g.v(2), g.v(1), g.v(1))
		g.VADDPS(g.v(4), g.v(3), g.v(3))
		g.VADDPS(g.v(3), g.v(1), g.v(1))
		g.acc64(5, reg.R9)
		g.acc64(1, reg.R12)
	}, reg.R11, reg.R13)
	g.LEAQ(memi(reg.RSI, reg.RBX, 4, 0), reg.RSI)
	g.LEAQ(memi(reg.RDI, reg.RBX, 4, 0), reg.RDI)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("gs_group"))
	g.done()
}

// rows emits the row loop of a storing kernel: the blocks of each row,
// then the row pointers advance by the stride BX.
func (g *gen) rows(name string, body func(), rowRegs ...reg.Register) {
	g.blockEnd()
	g.Label(name + "_row")
	g.XORQ(reg.RAX, reg.RAX)
	g.blocks(name, body)
	for _, r := range rowRegs {
		g.ADDQ(reg.RBX, r)
	}
	g.DECQ(reg.RCX)
	g.JNZ(lbl(name + "_row"))
}

// store writes v(0) to (base)(AX*1), non-temporally if nt.
func (g *gen) store(nt bool, base reg.Register) {
	if nt {
		g.VMOVNTPS(g.v(0), memi(base, reg.RAX, 1, 0))
	} else {
		g.VMOVUPS(g.v(0), memi(base, reg.RAX, 1, 0))
	}
}

func norm(g *gen, nt bool) {
	name, doc := "norm", []string{"is, per row and channel < 8·nb, y = float32((x−mu)·k) + beta."}
	if nt {
		name, doc = "normNT", []string{"is norm with non-temporal stores (y and stride 32-byte aligned)."}
	}
	g.fn(name, "func(x, y, mu, k, beta *float32, rows, nb, stride int)", doc...)
	g.args("x", reg.R11, "y", reg.R12, "mu", reg.R8, "k", reg.R9, "beta", reg.R10, "rows", reg.RCX, "nb", reg.RDX, "stride", reg.RBX)
	g.rows(name, func() {
		g.VMOVUPS(memi(reg.R11, reg.RAX, 1, 0), g.v(0))
		g.VSUBPS(memi(reg.R8, reg.RAX, 1, 0), g.v(0), g.v(0))
		g.VMULPS(memi(reg.R9, reg.RAX, 1, 0), g.v(0), g.v(0))
		g.VADDPS(memi(reg.R10, reg.RAX, 1, 0), g.v(0), g.v(0))
		g.store(nt, reg.R12)
	}, reg.R11, reg.R12)
	if nt {
		g.SFENCE()
	}
	g.done()
}

func gradDx(g *gen, nt bool) {
	name, doc := "gradDx", []string{"is, per row and channel < 8·nb,", "dx = float32(a·(dy−mdy)) − float32(b·(x−m))."}
	if nt {
		name, doc = "gradDxNT", []string{"is gradDx with non-temporal stores (dx and stride 32-byte aligned)."}
	}
	g.fn(name, "func(dy, x, dx, a, mdy, b, m *float32, rows, nb, stride int)", doc...)
	g.args("dy", reg.R11, "x", reg.R12, "dx", reg.R13, "a", reg.R8, "mdy", reg.R9, "b", reg.R10, "m", reg.RSI, "rows", reg.RCX, "nb", reg.RDX, "stride", reg.RBX)
	g.rows(name, func() {
		g.VMOVUPS(memi(reg.R11, reg.RAX, 1, 0), g.v(0))
		g.VSUBPS(memi(reg.R9, reg.RAX, 1, 0), g.v(0), g.v(0))
		g.VMULPS(memi(reg.R8, reg.RAX, 1, 0), g.v(0), g.v(0))
		g.VMOVUPS(memi(reg.R12, reg.RAX, 1, 0), g.v(1))
		g.VSUBPS(memi(reg.RSI, reg.RAX, 1, 0), g.v(1), g.v(1))
		g.VMULPS(memi(reg.R10, reg.RAX, 1, 0), g.v(1), g.v(1))
		g.VSUBPS(g.v(1), g.v(0), g.v(0))
		g.store(nt, reg.R13)
	}, reg.R11, reg.R12, reg.R13)
	if nt {
		g.SFENCE()
	}
	g.done()
}

func scale(g *gen) {
	g.fn("scale", "func(dy, dx, k *float32, rows, nb, stride int)", "is, per row and channel < 8·nb, dx = dy·k.")
	g.args("dy", reg.R11, "dx", reg.R12, "k", reg.R8, "rows", reg.RCX, "nb", reg.RDX, "stride", reg.RBX)
	g.rows("scale", func() {
		g.VMOVUPS(memi(reg.R11, reg.RAX, 1, 0), g.v(0))
		g.VMULPS(memi(reg.R8, reg.RAX, 1, 0), g.v(0), g.v(0))
		g.store(false, reg.R12)
	}, reg.R11, reg.R12)
	g.done()
}
