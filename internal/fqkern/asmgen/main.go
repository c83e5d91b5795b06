// Command asmgen writes the assembly of package fqkern and the Go
// declarations of its kernels, with avo: one file pair per ISA tier,
//
//	avx2_amd64.s,   avx2_amd64.go    AVX2: blocks of 2 and 1 YMM vectors,
//	                                 then the row's tail one element at a
//	                                 time with the scalar instructions
//	avx512_amd64.s, avx512_amd64.go  AVX-512: blocks of 2 and 1 ZMM
//	                                 vectors, then the tail under a mask
//
// from one description of each kernel's element operations (fwd, grad,
// adj for float32 and float64), in two loop nests: rows one at a time in
// memory order, the table operands from memory (every kernel), and for
// the forward also rows in groups of four, each block of table operands
// loaded into registers once for the group (fwd…Group…). Every element
// gets the same IEEE operations on every tier and in either nest
// (compares made into all-ones lanes, bitwise AND/OR/ANDN on them), so
// they all give the same bits. Run it with go generate in internal/fqkern;
// the output is deterministic.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"

	"github.com/mmcloughlin/avo/attr"
	"github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
	"github.com/mmcloughlin/avo/x86"

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

func generate(zmm bool) (asm, stubs []byte, err error) {
	ctx := build.NewContext()
	ctx.ConstraintExpr("amd64,!noasm,!gccgo,!safe")
	g := &gen{Context: ctx, zmm: zmm, tier: "AVX2", w: 32}
	if zmm {
		g.tier, g.w = "AVX512", 64
	}
	for _, size := range []int{4, 8} {
		g.size = size
		// The forward in both loop nests (rows one at a time, and in row
		// groups); the gradient and adjoint one row at a time.
		for _, group := range []bool{false, true} {
			g.group = group
			fwd(g, false)
			fwd(g, true)
		}
		g.group = false
		grad(g)
		adj(g)
	}
	return avogen.Render(ctx, "fqkern")
}

// gen is an avo context writing one tier's kernels for one element size.
type gen struct {
	*build.Context
	zmm  bool
	tier string
	w    int // vector bytes
	size int // element bytes

	masked  bool // emitting the masked tail: memory operands load under K7
	scratch int  // next scratch register of the masked tail, from scratch0
	// scratch0 is the first vector register the kernel leaves free for
	// the masked tail's loads of stream operands (below Z16, so that the
	// kernels leave the upper sixteen ZMM registers untouched).
	scratch0 int

	r3 reg.Register // three row strides (rowMem)

	// group selects the row-group loop nest (a kernel name with Group):
	// rows in groups of rowGroup, the table operands in registers.
	group bool
}

var (
	ktail = reg.K7 // the tail's elements
	khigh = reg.K6 // the tail's elements in the upper half (float32 sums)
	kcmp  = reg.K1 // compare results
)

func (g *gen) lanes() int { return g.w / g.size }

func (g *gen) sfx() string {
	if g.size == 4 {
		return "32"
	}
	return "64"
}

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

// emit adds an instruction built by an x86 constructor.
func (g *gen) emit(i *ir.Instruction, err error) {
	if err != nil {
		panic(fmt.Sprintf("%v", err))
	}
	g.Instruction(i)
}

type ctor = func(...operand.Op) (*ir.Instruction, error)

// fx adapts an x86 constructor of fixed arity to a ctor.
func fx(f any) ctor {
	fv := reflect.ValueOf(f)
	return func(ops ...operand.Op) (*ir.Instruction, error) {
		in := make([]reflect.Value, len(ops))
		for i, o := range ops {
			in[i] = reflect.ValueOf(&o).Elem()
		}
		out := fv.Call(in)
		err, _ := out[1].Interface().(error)
		return out[0].Interface().(*ir.Instruction), err
	}
}

// packed returns the packed-vector constructor of an operation for the
// element size (ps for float32, pd for float64).
func (g *gen) packed(ps, pd ctor) ctor {
	if g.size == 4 {
		return ps
	}
	return pd
}

// src returns a memory operand for the body: itself, or in the masked tail
// a scratch register loaded from it under the mask k with zeroing.
func (g *gen) src(m operand.Mem) operand.Op { return g.srck(m, ktail) }

func (g *gen) srck(m operand.Mem, k reg.Register) operand.Op {
	if !g.masked {
		return m
	}
	r := g.scratchReg()
	if g.size == 4 || k == khigh {
		g.emit(x86.VMOVUPS_Z(m, k, r))
	} else {
		g.emit(x86.VMOVUPD_Z(m, k, r))
	}
	return r
}

// scratchReg returns the masked tail's next scratch register.
func (g *gen) scratchReg() reg.VecPhysical {
	i := g.scratch0 + g.scratch
	if i >= 16 {
		panic("fqkern asmgen: out of scratch registers")
	}
	g.scratch++
	return g.vec(i)
}

// srcPD is src for float64 data (the float32 kernels' sums).
func (g *gen) srcPD(m operand.Mem, k reg.Register) operand.Op {
	if !g.masked {
		return m
	}
	r := g.scratchReg()
	g.emit(x86.VMOVUPD_Z(m, k, r))
	return r
}

// store writes v to m (under the tail mask in the masked tail).
func (g *gen) store(v operand.Op, m operand.Mem) {
	op := g.packed(x86.VMOVUPS, x86.VMOVUPD)
	if g.masked {
		g.emit(op(v, ktail, m))
	} else {
		g.emit(op(v, m))
	}
}

func (g *gen) storePD(v operand.Op, k reg.Register, m operand.Mem) {
	if g.masked {
		g.emit(x86.VMOVUPD(v, k, m))
	} else {
		g.emit(x86.VMOVUPD(v, m))
	}
}

// cmp sets vector dst to all-ones lanes where b (p) a (Go operand order:
// VCMPPS $p, a, b, dst), zeros elsewhere; AVX-512 goes through kcmp.
func (g *gen) cmp(p int, a, b, dst operand.Op) {
	op := g.packed(x86.VCMPPS, x86.VCMPPD)
	if !g.zmm {
		g.emit(op(imm(p), a, b, dst))
		return
	}
	g.emit(op(imm(p), a, b, kcmp))
	if g.size == 4 {
		g.emit(x86.VPMOVM2D(kcmp, dst))
	} else {
		g.emit(x86.VPMOVM2Q(kcmp, dst))
	}
}

var (
	xregs = []reg.VecPhysical{reg.X0, reg.X1, reg.X2, reg.X3, reg.X4, reg.X5, reg.X6, reg.X7, reg.X8, reg.X9, reg.X10, reg.X11, reg.X12, reg.X13, reg.X14, reg.X15}
	yregs = []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7, reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15}
	zregs = []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7, reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
		reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23, reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}
)

// vec is vector register i of the tier; half(i) is its lower half.
func (g *gen) vec(i int) reg.VecPhysical {
	if g.zmm {
		return zregs[i]
	}
	return yregs[i]
}

func (g *gen) half(i int) reg.VecPhysical {
	if g.zmm {
		return yregs[i]
	}
	return xregs[i]
}

// fn starts a NOSPLIT function with a Go signature and its doc comment.
func (g *gen) fn(name, sig string, doc ...string) string {
	name += g.sfx()
	if g.group {
		name += "Group"
		doc = append(doc, fmt.Sprintf("Rows in groups of %d while that many remain, then one at a time.", rowGroup))
	}
	name += g.tier
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(sig)
	g.Pragma("noescape")
	g.Doc(append([]string{name + " " + doc[0]}, doc[1:]...)...)
	return name
}

func (g *gen) args(pairs ...any) {
	for i := 0; i < len(pairs); i += 2 {
		b, err := g.Param(pairs[i].(string)).Resolve()
		if err != nil {
			panic(err)
		}
		g.MOVQ(b.Addr, pairs[i+1].(reg.Register))
	}
}

// tailMask sets K7 (and K6, its upper half for float32) to the n mod lanes
// tail elements of a row, from n at the parameter "n"; clobbers CX, R12.
func (g *gen) tailMask() {
	if !g.zmm {
		return
	}
	b, err := g.Param("n").Resolve()
	if err != nil {
		panic(err)
	}
	g.MOVQ(b.Addr, reg.RCX)
	g.ANDL(imm(g.lanes()-1), reg.ECX)
	g.MOVL(operand.U32(1), reg.R12L)
	g.SHLL(reg.CL, reg.R12L)
	g.DECL(reg.R12L)
	if g.size == 4 {
		g.KMOVW(reg.R12L, ktail)
		g.KSHIFTRW(imm(8), ktail, khigh)
	} else {
		g.KMOVB(reg.R12L, ktail)
	}
}

// rowGroup is the number of rows the row-group nest takes together: per
// block of one vector, the table operands are loaded into registers once
// and serve rowGroup rows (the table, in L1, would otherwise take most of
// the loads; on Zen 5, 512-bit loads of it slowed the AVX-512 forward to
// 0.7 of AVX2 while the other streams came from L3 or memory; see
// fqkern.StreamBytes).
const rowGroup = 4

// Registers of the loop nest: the row stride in bytes (n elements) and
// three times it, which address rows 1 to 3 of a group; R12 counts the
// elements left in the row, DX the rows.
var rs = reg.RCX

// rowMem returns the address off bytes into row r (< rowGroup) of the
// group starting at base: rows are n elements apart.
func (g *gen) rowMem(base reg.Register, r, off int) operand.Mem {
	switch r {
	case 0:
		return mem(base, off)
	case 1:
		return memi(base, rs, 1, off)
	case 2:
		return memi(base, rs, 2, off)
	case 3:
		return memi(base, g.r3, 1, off)
	}
	panic("row out of the group")
}

// rowStride sets rs to n elements in bytes and g.r3 to three times that,
// from the parameter "n".
func (g *gen) rowStride(r3 reg.Register) {
	g.r3 = r3
	g.args("n", rs)
	if g.size == 4 {
		g.SHLQ(imm(2), rs)
	} else {
		g.SHLQ(imm(3), rs)
	}
	g.LEAQ(memi(rs, rs, 2, 0), r3)
}

// nest describes one kernel's loop nest (see loops).
type nest struct {
	reset   func()                   // cursors (table, sums) to the row start
	load    func()                   // row groups: the block's table operands into registers
	body    func(slot, row, off int) // one vector, off bytes into row row, with temporaries slot
	advance func(bytes int)          // streams and cursors by bytes of elements
	streams []reg.Register           // the row streams (rows n elements apart)
	scalar  func(row int)            // AVX2: one tail element of row row
}

// loops writes the loop nest. The row-group kernels take groups of
// rowGroup rows while that many remain, then single rows: per group,
// blocks of one vector (load; body for each row, in row order),
// then the rows' tail, AVX2's scalar loop (per element, every row in
// order), AVX-512's block under the mask K7; then the streams move on to
// the next group. The others take one row at a time, in memory order: in
// blocks of two and one vectors with the table operands from memory, then
// the tail. Every element gets the same operations either way, so the
// kernels give the same bits.
func (g *gen) loops(name string, k nest) {
	if !g.group {
		g.rowLoops(name, k)
		return
	}
	L := g.lanes()
	for _, R := range []int{rowGroup, 1} {
		p := fmt.Sprintf("%sr%d", name, R)
		grp, col, tail, next, done := p+"rows", p+"block", p+"tail", p+"next", p+"done"
		g.Label(grp)
		g.CMPQ(reg.RDX, imm(R))
		g.JLT(lbl(done))
		k.reset()
		g.args("n", reg.R12)
		g.Label(col)
		g.CMPQ(reg.R12, imm(L))
		g.JLT(lbl(tail))
		k.load()
		for r := range R {
			k.body(r, r, 0)
		}
		k.advance(g.w)
		g.SUBQ(imm(L), reg.R12)
		g.JMP(lbl(col))
		g.Label(tail)
		g.TESTQ(reg.R12, reg.R12)
		g.JZ(lbl(next))
		if !g.zmm {
			for r := range R {
				k.scalar(r)
			}
			k.advance(g.size)
			g.DECQ(reg.R12)
			g.JMP(lbl(tail))
		} else {
			g.masked = true
			k.load()
			for r := range R {
				g.scratch = 0
				k.body(r, r, 0)
			}
			g.masked = false
			for _, s := range k.streams {
				g.LEAQ(memi(s, reg.R12, uint8(g.size), 0), s)
			}
		}
		g.Label(next)
		if R > 1 {
			for _, s := range k.streams {
				g.ADDQ(g.r3, s)
			}
		}
		g.SUBQ(imm(R), reg.RDX)
		g.JMP(lbl(grp))
		g.Label(done)
	}
	g.VZEROUPPER()
	g.RET()
}

// rowLoops writes the loops of the kernels that take one row at a time
// (see loops).
func (g *gen) rowLoops(name string, k nest) {
	L := g.lanes()
	row, x2, x1, t1, next := name+"row", name+"x2", name+"x1", name+"tail", name+"next"
	g.Label(row)
	k.reset()
	g.args("n", reg.R12)
	g.Label(x2)
	g.CMPQ(reg.R12, imm(2*L))
	g.JLT(lbl(x1))
	k.body(0, 0, 0)
	k.body(1, 0, g.w)
	k.advance(2 * g.w)
	g.SUBQ(imm(2*L), reg.R12)
	g.JMP(lbl(x2))
	g.Label(x1)
	g.CMPQ(reg.R12, imm(L))
	g.JLT(lbl(t1))
	k.body(0, 0, 0)
	k.advance(g.w)
	g.SUBQ(imm(L), reg.R12)
	g.Label(t1)
	g.TESTQ(reg.R12, reg.R12)
	g.JZ(lbl(next))
	if !g.zmm {
		k.scalar(0)
		k.advance(g.size)
		g.DECQ(reg.R12)
		g.JMP(lbl(t1))
	} else {
		g.masked, g.scratch = true, 0
		k.body(0, 0, 0)
		g.masked = false
		for _, s := range k.streams {
			g.LEAQ(memi(s, reg.R12, uint8(g.size), 0), s)
		}
	}
	g.Label(next)
	g.DECQ(reg.RDX)
	g.JNZ(lbl(row))
	g.VZEROUPPER()
	g.RET()
}

// tabOp returns a table operand: in a row-group kernel the register it
// was loaded into, else the memory operand itself (g.src).
func (g *gen) tabOp(m operand.Mem, v reg.VecPhysical) operand.Op {
	if !g.group {
		return g.src(m)
	}
	return v
}

// tab loads the table operand at m into v (under the tail mask, with
// zeroing, in the masked tail).
func (g *gen) tab(m operand.Mem, v reg.VecPhysical) {
	if !g.masked {
		g.emit(g.packed(x86.VMOVUPS, x86.VMOVUPD)(m, v))
	} else if g.size == 4 {
		g.emit(x86.VMOVUPS_Z(m, ktail, v))
	} else {
		g.emit(x86.VMOVUPD_Z(m, ktail, v))
	}
}

// fwd writes fwdNN / fwdDivNN.
func fwd(g *gen, div bool) {
	name, what := "fwd", "the multiplying forward (zero channels masked by the keep row)"
	if div {
		name, what = "fwdDiv", "the dividing forward (Vars)"
	}
	g.fn(name, fmt.Sprintf("func(y, x, tab *float%d, l, n, rows int)", 8*g.size),
		"is "+what+": v = min(x, nmax) (x when NaN), v = max(v, nmin),",
		"y = floor((v − nmin) OP row − qzero + 0.5)·scale & keep, table rows l apart.")
	g.tailMask()
	g.args("y", reg.RDI, "x", reg.RSI, "tab", reg.R8, "l", reg.RAX)
	if g.size == 4 {
		g.SHLQ(imm(2), reg.RAX)
	} else {
		g.SHLQ(imm(3), reg.RAX)
	}
	g.args("rows", reg.RDX)
	g.LEAQ(memi(reg.RAX, reg.RAX, 2, 0), reg.RBX)
	g.LEAQ(memi(reg.RAX, reg.RAX, 4, 0), reg.R9)
	half := g.vec(15)
	if g.size == 4 {
		g.MOVL(operand.U32(0x3f000000), reg.R10L)
		g.VMOVD(reg.R10L, reg.X15)
		g.VBROADCASTSS(reg.X15, half)
	} else {
		g.MOVQ(operand.U64(0x3fe0000000000000), reg.R10)
		g.VMOVQ(reg.R10, reg.X15)
		g.VBROADCASTSD(reg.X15, half)
	}
	if div {
		g.MOVQ(reg.RAX, reg.R13)
		g.SHLQ(imm(2), reg.R13)
	} else {
		g.LEAQ(memi(reg.RAX, reg.RAX, 1, 0), reg.R13)
	}
	g.rowStride(reg.R10)
	g.scratch0 = 14
	if !g.group {
		g.scratch0 = 6
	}
	op := g.packed(x86.VMULPS, x86.VMULPD)
	sop := x86.VMULSS
	if div {
		op = g.packed(x86.VDIVPS, x86.VDIVPD)
		sop = x86.VDIVSS
		if g.size == 8 {
			sop = x86.VDIVSD
		}
	} else if g.size == 8 {
		sop = x86.VMULSD
	}
	P := func(ps, pd ctor) ctor { return g.packed(ps, pd) }
	// The table rows of a block: nmax, nmin, the OP row (inv, or scale
	// when dividing), qzero, scale, keep.
	nmax, nmin, opr, qz, sc, keep := g.vec(8), g.vec(9), g.vec(10), g.vec(11), g.vec(12), g.vec(13)
	load := func() {
		g.tab(memi(reg.R11, reg.RAX, 1, 0), nmax)
		g.tab(mem(reg.R11, 0), nmin)
		g.tab(memi(reg.R11, reg.R13, 1, 0), opr)
		g.tab(memi(reg.R11, reg.RBX, 1, 0), qz)
		g.tab(memi(reg.R11, reg.RAX, 4, 0), sc)
		g.tab(memi(reg.R11, reg.R9, 1, 0), keep)
	}
	mov := P(x86.VMOVUPS, x86.VMOVUPD)
	body := func(slot, row, off int) {
		V, mx, mn := g.vec(row), nmax, nmin
		if !g.group { // nmax and nmin from memory into temporaries
			V, mx, mn = g.vec(3*slot), g.vec(3*slot+2), g.vec(3*slot+1)
			g.emit(mov(g.src(memi(reg.R11, reg.RAX, 1, off)), mx))
		}
		g.emit(P(x86.VMINPS, x86.VMINPD)(g.src(g.rowMem(reg.RSI, row, off)), mx, V))
		if !g.group {
			g.emit(mov(g.src(mem(reg.R11, off)), mn))
		}
		g.emit(P(x86.VMAXPS, x86.VMAXPD)(V, mn, V))
		g.emit(P(x86.VSUBPS, x86.VSUBPD)(mn, V, V))
		g.emit(op(g.tabOp(memi(reg.R11, reg.R13, 1, off), opr), V, V))
		g.emit(P(x86.VSUBPS, x86.VSUBPD)(g.tabOp(memi(reg.R11, reg.RBX, 1, off), qz), V, V))
		g.emit(P(x86.VADDPS, x86.VADDPD)(half, V, V))
		if g.zmm {
			g.emit(P(fx(fx(x86.VRNDSCALEPS)), fx(x86.VRNDSCALEPD))(imm(1), V, V))
		} else {
			g.emit(P(fx(fx(x86.VROUNDPS)), fx(x86.VROUNDPD))(imm(1), V, V))
		}
		g.emit(P(x86.VMULPS, x86.VMULPD)(g.tabOp(memi(reg.R11, reg.RAX, 4, off), sc), V, V))
		g.emit(P(x86.VANDPS, x86.VANDPD)(g.tabOp(memi(reg.R11, reg.R9, 1, off), keep), V, V))
		g.store(V, g.rowMem(reg.RDI, row, off))
	}
	scalar := func(r int) {
		S := func(ss, sd ctor) ctor {
			if g.size == 4 {
				return ss
			}
			return sd
		}
		X0, X1, X2 := reg.X0, reg.X1, reg.X2
		g.emit(S(x86.VMOVSS, x86.VMOVSD)(memi(reg.R11, reg.RAX, 1, 0), X2))
		g.emit(S(x86.VMINSS, x86.VMINSD)(g.rowMem(reg.RSI, r, 0), X2, X0))
		g.emit(S(x86.VMOVSS, x86.VMOVSD)(mem(reg.R11, 0), X1))
		g.emit(S(x86.VMAXSS, x86.VMAXSD)(X0, X1, X0))
		g.emit(S(x86.VSUBSS, x86.VSUBSD)(X1, X0, X0))
		g.emit(sop(memi(reg.R11, reg.R13, 1, 0), X0, X0))
		g.emit(S(x86.VSUBSS, x86.VSUBSD)(memi(reg.R11, reg.RBX, 1, 0), X0, X0))
		g.emit(S(x86.VADDSS, x86.VADDSD)(reg.X15, X0, X0))
		g.emit(S(fx(fx(x86.VROUNDSS)), fx(x86.VROUNDSD))(imm(1), X0, X0, X0))
		g.emit(S(x86.VMULSS, x86.VMULSD)(memi(reg.R11, reg.RAX, 4, 0), X0, X0))
		g.emit(S(x86.VMOVSS, x86.VMOVSD)(memi(reg.R11, reg.R9, 1, 0), X2))
		g.emit(P(x86.VANDPS, x86.VANDPD)(X2, X0, X0))
		g.emit(S(x86.VMOVSS, x86.VMOVSD)(X0, g.rowMem(reg.RDI, r, 0)))
	}
	g.loops(name+g.sfx(), nest{
		reset: func() { g.MOVQ(reg.R8, reg.R11) },
		load:  load,
		body:  body,
		advance: func(b int) {
			g.ADDQ(imm(b), reg.RSI)
			g.ADDQ(imm(b), reg.RDI)
			g.ADDQ(imm(b), reg.R11)
		},
		streams: []reg.Register{reg.RSI, reg.RDI},
		scalar:  scalar,
	})
}

// masks emits the in/below/above masks of a block, on the temporaries
// from vector register b: x in V0, the table's lo and hi in registers (or
// memory); in = ((x >= lo) & (x <= hi)) | pass into V4 (V5 clobbered),
// below = x < lo into V2, above = (x > hi) &^ below into V3 (lo and hi
// may be V2 and V3: they are read before).
func (g *gen) masks(b int, lo, hi, pass operand.Op, inAnd func(in reg.VecPhysical)) {
	P := func(ps, pd ctor) ctor { return g.packed(ps, pd) }
	V := func(i int) reg.VecPhysical { return g.vec(b + i) }
	g.cmp(0x0D, lo, V(0), V(4))
	g.cmp(0x02, hi, V(0), V(5))
	g.emit(P(x86.VANDPS, x86.VANDPD)(V(5), V(4), V(4)))
	g.emit(P(x86.VORPS, x86.VORPD)(pass, V(4), V(4)))
	inAnd(V(4))
	g.cmp(0x01, lo, V(0), V(2))
	g.cmp(0x0E, hi, V(0), V(3))
	g.emit(P(x86.VANDNPS, x86.VANDNPD)(V(3), V(2), V(3)))
}

func grad(g *gen) {
	t := fmt.Sprintf("float%d", 8*g.size)
	g.fn("grad", fmt.Sprintf("func(bi, gs, x, tab *%s, l, n, rows int, acc *float64)", t),
		"is the gradient: in = (x >= lo & x <= hi) | pass, bi = g & in;",
		"below = x < lo, above = x > hi &^ below; the float64 sums at acc (below)",
		"and l further (above) add g & below and g & above.")
	g.tailMask()
	g.args("bi", reg.RDI, "gs", reg.R13, "x", reg.RSI, "tab", reg.R8, "l", reg.RAX, "rows", reg.RDX, "acc", reg.R14)
	if g.size == 4 {
		g.MOVQ(reg.RAX, reg.RBX)
		g.SHLQ(imm(3), reg.RBX)
		g.SHLQ(imm(2), reg.RAX)
	} else {
		g.SHLQ(imm(3), reg.RAX)
	}
	g.scratch0 = 6
	P := func(ps, pd ctor) ctor { return g.packed(ps, pd) }
	body := func(slot, _, off int) {
		b := 6 * slot
		V := func(i int) reg.VecPhysical { return g.vec(b + i) }
		mov := P(x86.VMOVUPS, x86.VMOVUPD)
		g.emit(mov(g.src(mem(reg.RSI, off)), V(0)))
		g.emit(mov(g.src(mem(reg.R13, off)), V(1)))
		g.emit(mov(g.src(mem(reg.R11, off)), V(2)))
		g.emit(mov(g.src(memi(reg.R11, reg.RAX, 1, off)), V(3)))
		g.masks(b, V(2), V(3), g.src(memi(reg.R11, reg.RAX, 2, off)), func(in reg.VecPhysical) {
			g.emit(P(x86.VANDPS, x86.VANDPD)(V(1), in, in))
			g.store(in, mem(reg.RDI, off))
		})
		g.emit(P(x86.VANDPS, x86.VANDPD)(V(1), V(2), V(2)))
		g.emit(P(x86.VANDPS, x86.VANDPD)(V(1), V(3), V(3)))
		// add adds the float64 sums at m to v and stores them back.
		add := func(m operand.Mem, k reg.Register, v reg.VecPhysical) {
			g.emit(x86.VADDPD(g.srcPD(m, k), v, v))
			g.storePD(v, k, m)
		}
		if g.size == 8 {
			add(mem(reg.R10, off), ktail, V(2))
			add(memi(reg.R10, reg.RAX, 1, off), ktail, V(3))
			return
		}
		// float32: widen each half to float64 lanes.
		a := 2 * off
		for _, s := range []struct {
			v     int
			index reg.Register
		}{{2, nil}, {3, reg.RBX}} {
			at := func(d int) operand.Mem {
				if s.index == nil {
					return mem(reg.R10, a+d)
				}
				return memi(reg.R10, s.index, 1, a+d)
			}
			g.emit(x86.VCVTPS2PD(g.half(b+s.v), V(4)))
			if g.zmm {
				g.emit(x86.VEXTRACTF32X8(imm(1), V(s.v), g.half(b+s.v)))
			} else {
				g.emit(x86.VEXTRACTF128(imm(1), V(s.v), g.half(b+s.v)))
			}
			g.emit(x86.VCVTPS2PD(g.half(b+s.v), V(5)))
			add(at(0), ktail, V(4))
			add(at(g.w), khigh, V(5))
		}
	}
	scalar := func(int) {
		S := func(ss, sd ctor) ctor {
			if g.size == 4 {
				return ss
			}
			return sd
		}
		X := func(i int) reg.VecPhysical { return xregs[i] }
		mov := S(x86.VMOVSS, x86.VMOVSD)
		cmp := S(x86.VCMPSS, x86.VCMPSD)
		and, or, andn := P(x86.VANDPS, x86.VANDPD), P(x86.VORPS, x86.VORPD), P(x86.VANDNPS, x86.VANDNPD)
		g.emit(mov(mem(reg.RSI, 0), X(0)))
		g.emit(mov(mem(reg.R13, 0), X(1)))
		g.emit(mov(mem(reg.R11, 0), X(2)))
		g.emit(mov(memi(reg.R11, reg.RAX, 1, 0), X(3)))
		g.emit(cmp(imm(0x0D), X(2), X(0), X(4)))
		g.emit(cmp(imm(0x02), X(3), X(0), X(5)))
		g.emit(and(X(5), X(4), X(4)))
		g.emit(mov(memi(reg.R11, reg.RAX, 2, 0), X(5)))
		g.emit(or(X(5), X(4), X(4)))
		g.emit(and(X(1), X(4), X(4)))
		g.emit(mov(X(4), mem(reg.RDI, 0)))
		g.emit(cmp(imm(0x01), X(2), X(0), X(2)))
		g.emit(cmp(imm(0x0E), X(3), X(0), X(3)))
		g.emit(andn(X(3), X(2), X(3)))
		g.emit(and(X(1), X(2), X(2)))
		g.emit(and(X(1), X(3), X(3)))
		if g.size == 4 {
			g.emit(x86.VCVTSS2SD(X(2), X(2), X(4)))
			g.emit(x86.VADDSD(mem(reg.R10, 0), X(4), X(4)))
			g.emit(x86.VMOVSD(X(4), mem(reg.R10, 0)))
			g.emit(x86.VCVTSS2SD(X(3), X(3), X(5)))
			g.emit(x86.VADDSD(memi(reg.R10, reg.RBX, 1, 0), X(5), X(5)))
			g.emit(x86.VMOVSD(X(5), memi(reg.R10, reg.RBX, 1, 0)))
		} else {
			g.emit(x86.VADDSD(mem(reg.R10, 0), X(2), X(2)))
			g.emit(x86.VMOVSD(X(2), mem(reg.R10, 0)))
			g.emit(x86.VADDSD(memi(reg.R10, reg.RAX, 1, 0), X(3), X(3)))
			g.emit(x86.VMOVSD(X(3), memi(reg.R10, reg.RAX, 1, 0)))
		}
	}
	g.loops("grad"+g.sfx(), nest{
		reset: func() {
			g.MOVQ(reg.R8, reg.R11)
			g.MOVQ(reg.R14, reg.R10)
		},
		body: body,
		advance: func(b int) {
			g.ADDQ(imm(b), reg.RSI)
			g.ADDQ(imm(b), reg.R13)
			g.ADDQ(imm(b), reg.RDI)
			g.ADDQ(imm(b), reg.R11)
			g.ADDQ(imm(b*8/g.size), reg.R10)
		},
		streams: []reg.Register{reg.RSI, reg.R13, reg.RDI},
		scalar:  scalar,
	})
}

func adj(g *gen) {
	t := fmt.Sprintf("float%d", 8*g.size)
	g.fn("adj", fmt.Sprintf("func(out, dbi, x, tab *%s, l, n, rows int)", t),
		"is the adjoint: out = (dbi & in) | (dmin & below) | (dmax & above),",
		"the masks as for grad.")
	g.tailMask()
	g.args("out", reg.RDI, "dbi", reg.R13, "x", reg.RSI, "tab", reg.R8, "l", reg.RAX)
	if g.size == 4 {
		g.SHLQ(imm(2), reg.RAX)
	} else {
		g.SHLQ(imm(3), reg.RAX)
	}
	g.args("rows", reg.RDX)
	g.LEAQ(memi(reg.RAX, reg.RAX, 2, 0), reg.RBX)
	g.scratch0 = 6
	P := func(ps, pd ctor) ctor { return g.packed(ps, pd) }
	body := func(slot, _, off int) {
		b := 6 * slot
		V := func(i int) reg.VecPhysical { return g.vec(b + i) }
		mov := P(x86.VMOVUPS, x86.VMOVUPD)
		and, or := P(x86.VANDPS, x86.VANDPD), P(x86.VORPS, x86.VORPD)
		g.emit(mov(g.src(mem(reg.RSI, off)), V(0)))
		g.emit(mov(g.src(mem(reg.R11, off)), V(2)))
		g.emit(mov(g.src(memi(reg.R11, reg.RAX, 1, off)), V(3)))
		g.masks(b, V(2), V(3), g.src(memi(reg.R11, reg.RAX, 2, off)), func(in reg.VecPhysical) {
			g.emit(and(g.src(mem(reg.R13, off)), in, in))
		})
		g.emit(and(g.src(memi(reg.R11, reg.RBX, 1, off)), V(2), V(2)))
		g.emit(and(g.src(memi(reg.R11, reg.RAX, 4, off)), V(3), V(3)))
		g.emit(or(V(2), V(4), V(4)))
		g.emit(or(V(3), V(4), V(4)))
		g.store(V(4), mem(reg.RDI, off))
	}
	scalar := func(int) {
		S := func(ss, sd ctor) ctor {
			if g.size == 4 {
				return ss
			}
			return sd
		}
		X := func(i int) reg.VecPhysical { return xregs[i] }
		mov := S(x86.VMOVSS, x86.VMOVSD)
		cmp := S(x86.VCMPSS, x86.VCMPSD)
		and, or, andn := P(x86.VANDPS, x86.VANDPD), P(x86.VORPS, x86.VORPD), P(x86.VANDNPS, x86.VANDNPD)
		g.emit(mov(mem(reg.RSI, 0), X(0)))
		g.emit(mov(mem(reg.R11, 0), X(2)))
		g.emit(mov(memi(reg.R11, reg.RAX, 1, 0), X(3)))
		g.emit(cmp(imm(0x0D), X(2), X(0), X(4)))
		g.emit(cmp(imm(0x02), X(3), X(0), X(5)))
		g.emit(and(X(5), X(4), X(4)))
		g.emit(mov(memi(reg.R11, reg.RAX, 2, 0), X(5)))
		g.emit(or(X(5), X(4), X(4)))
		g.emit(mov(mem(reg.R13, 0), X(5)))
		g.emit(and(X(5), X(4), X(4)))
		g.emit(cmp(imm(0x01), X(2), X(0), X(2)))
		g.emit(cmp(imm(0x0E), X(3), X(0), X(3)))
		g.emit(andn(X(3), X(2), X(3)))
		g.emit(mov(memi(reg.R11, reg.RBX, 1, 0), X(5)))
		g.emit(and(X(5), X(2), X(2)))
		g.emit(mov(memi(reg.R11, reg.RAX, 4, 0), X(5)))
		g.emit(and(X(5), X(3), X(3)))
		g.emit(or(X(2), X(4), X(4)))
		g.emit(or(X(3), X(4), X(4)))
		g.emit(mov(X(4), mem(reg.RDI, 0)))
	}
	g.loops("adj"+g.sfx(), nest{
		reset: func() { g.MOVQ(reg.R8, reg.R11) },
		body:  body,
		advance: func(b int) {
			g.ADDQ(imm(b), reg.RSI)
			g.ADDQ(imm(b), reg.R13)
			g.ADDQ(imm(b), reg.RDI)
			g.ADDQ(imm(b), reg.R11)
		},
		streams: []reg.Register{reg.RSI, reg.R13, reg.RDI},
		scalar:  scalar,
	})
}
