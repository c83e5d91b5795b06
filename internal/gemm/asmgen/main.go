// Command asmgen writes the assembly of package gemm and the Go
// declarations of its routines, with avo: one file pair per ISA tier,
//
//	avx2_amd64.s,   avx2_amd64.go    AVX2/FMA, YMM registers
//	avx512_amd64.s, avx512_amd64.go  AVX-512, ZMM and mask registers
//
// from one description of each routine family (kernel.go: micro-kernels
// by tile shape, vector width and A addressing; pack.go: packing). Run it
// with go generate in internal/gemm; the output is deterministic, so a
// second run leaves the tree unchanged.
package main

import (
	"flag"
	"fmt"
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
		asm, stubs, err := generate(f.body)
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
	body func(g *gen)
}{
	{"avx2", genAVX2},
	{"avx512", genAVX512},
}

func write(path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
}

// generate runs body on a fresh avo context and returns the assembly and
// the Go declarations it produces.
func generate(body func(g *gen)) (asm, stubs []byte, err error) {
	ctx := build.NewContext()
	ctx.ConstraintExpr("amd64,!noasm")
	g := &gen{Context: ctx}
	body(g)
	return avogen.Render(ctx, "gemm")
}

// gen is an avo context with the element type and vector width of the
// routine being written.
type gen struct {
	*build.Context
	isa  vecISA
	size int // element size in bytes: 4 (float32) or 8 (float64)
	// tag ends the names of the kernels being written: "Z" for AVX-512's
	// kernels of AVX2's tile shape (see genAVX512).
	tag string
}

// vecISA is a vector register file.
type vecISA struct {
	name  string
	bytes int // vector width in bytes
	regs  []reg.VecPhysical
}

var (
	ymm = vecISA{"AVX2", 32, []reg.VecPhysical{
		reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5, reg.Y6, reg.Y7,
		reg.Y8, reg.Y9, reg.Y10, reg.Y11, reg.Y12, reg.Y13, reg.Y14, reg.Y15}}
	zmm = vecISA{"AVX-512", 64, []reg.VecPhysical{
		reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5, reg.Z6, reg.Z7,
		reg.Z8, reg.Z9, reg.Z10, reg.Z11, reg.Z12, reg.Z13, reg.Z14, reg.Z15,
		reg.Z16, reg.Z17, reg.Z18, reg.Z19, reg.Z20, reg.Z21, reg.Z22, reg.Z23,
		reg.Z24, reg.Z25, reg.Z26, reg.Z27, reg.Z28, reg.Z29, reg.Z30, reg.Z31}}
	kregs = []reg.Register{reg.K1, reg.K2, reg.K3, reg.K4, reg.K5, reg.K6, reg.K7}
)

// v returns vector register i of the current ISA.
func (g *gen) v(i int) reg.VecPhysical { return g.isa.regs[i] }

// lanes is the number of elements in a vector.
func (g *gen) lanes() int { return g.isa.bytes / g.size }

// goType is the Go element type.
func (g *gen) goType() string {
	if g.size == 4 {
		return "float32"
	}
	return "float64"
}

// suffix is the element type's name suffix: "F32" or "F64".
func (g *gen) suffix() string {
	if g.size == 8 {
		return "F64"
	}
	return "F32"
}

// badExit emits the "bad" label of a routine that reports bad input: it
// sets bad to true and returns.
func (g *gen) badExit(bad operand.Mem) {
	g.Label("bad")
	g.MOVB(imm(1), bad)
	g.VZEROUPPER()
	g.RET()
}

// prefix is the BLAS type letter: "s" or "d".
func (g *gen) prefix() string {
	if g.size == 4 {
		return "s"
	}
	return "d"
}

// fn starts a NOSPLIT function with a Go signature and its doc comment.
func (g *gen) fn(name, sig string, doc ...string) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(sig)
	g.Pragma("noescape")
	g.Doc(doc...)
}

// arg returns the frame address of a parameter or result.
func (g *gen) arg(name string) operand.Mem {
	b, err := g.Param(name).Resolve()
	if err != nil {
		b, err = g.Return(name).Resolve()
	}
	if err != nil {
		panic(err)
	}
	return b.Addr
}

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

func memi(base, index reg.Register, scale uint8, disp int) operand.Mem {
	return operand.Mem{Base: base, Index: index, Scale: scale, Disp: disp}
}

// imm is an immediate operand; avo checks forms by the constant's type
// (8 or 32 bits), the Go assembler picks the encoding from the value.
func imm(v int) operand.Constant {
	if v >= 0 && v < 256 {
		return operand.U8(v)
	}
	return operand.U32(v)
}

func lbl(name string) operand.LabelRef { return operand.LabelRef(name) }

// The element-typed vector instructions.

func (g *gen) vmov(src, dst operand.Op) {
	if g.size == 4 {
		g.VMOVUPS(src, dst)
	} else {
		g.VMOVUPD(src, dst)
	}
}

// vmovk is vmov with a write mask (a store: dst is memory).
func (g *gen) vmovk(src operand.Op, k reg.Register, dst operand.Op) {
	if g.size == 4 {
		g.VMOVUPS(src, k, dst)
	} else {
		g.VMOVUPD(src, k, dst)
	}
}

func (g *gen) bcast(src, dst operand.Op) {
	if g.size == 4 {
		g.VBROADCASTSS(src, dst)
	} else {
		g.VBROADCASTSD(src, dst)
	}
}

// fma computes acc += x*y (VFMADD231: x is the register or memory operand).
func (g *gen) fma(x, y, acc operand.Op) {
	if g.size == 4 {
		g.VFMADD231PS(x, y, acc)
	} else {
		g.VFMADD231PD(x, y, acc)
	}
}

// fmak is fma under a merge mask.
func (g *gen) fmak(x, y operand.Op, k reg.Register, acc operand.Op) {
	if g.size == 4 {
		g.VFMADD231PS(x, y, k, acc)
	} else {
		g.VFMADD231PD(x, y, k, acc)
	}
}

func (g *gen) mul(x, y, dst operand.Op) {
	if g.size == 4 {
		g.VMULPS(x, y, dst)
	} else {
		g.VMULPD(x, y, dst)
	}
}

func (g *gen) zero(r operand.Op) {
	if g.size == 4 {
		g.VXORPS(r, r, r)
	} else {
		g.VXORPD(r, r, r)
	}
}

// shlSize shifts r left by log2 of the element size (elements to bytes).
func (g *gen) shlSize(r reg.Register) {
	if g.size == 4 {
		g.SHLQ(imm(2), r)
	} else {
		g.SHLQ(imm(3), r)
	}
}

// genAVX2 writes the AVX2/FMA routines: the 6×16 float32 and 6×8 float64
// micro-kernels (packed A, strided A for 2, 4 and 6 rows, A read in place
// from a Rows operand), and packing (B panels gathered from a Rows
// operand whole or in 32-byte segments).
func genAVX2(g *gen) {
	g.isa = ymm
	for _, size := range []int{4, 8} {
		g.size = size
		kernelPacked(g, kernelShape{rows: 6, nv: 2})
	}
	for _, size := range []int{4, 8} {
		g.size = size
		for _, rows := range []int{2, 4, 6} {
			kernelStrided(g, kernelShape{rows: rows, nv: 2})
		}
	}
	g.size = 4
	packA6x8F32(g)
	g.size = 8
	packA6x4F64(g)
	copyRows(g, 2)
	packAT6NF32(g)
	packAT6NF64(g)
	for _, size := range []int{4, 8} {
		g.size = size
		kernelRows(g, kernelShape{rows: 6, nv: 2})
	}
	for _, size := range []int{4, 8} {
		g.size = size
		gatherRows(g, 2)
		gatherSegs(g)
	}
	addOffsets(g)
}

// genAVX512 writes the AVX-512 routines: the 6×32 float32 and 6×16
// float64 micro-kernels (packed A; strided A for 1 to 6 rows with masked
// columns; A read in place from a Rows operand) and the B panel copies for
// their 128-byte rows, whole or from 64-byte segments; the filter
// gradient's tiles reading both operands in place. A packing is shared
// with the AVX2 tier.
func genAVX512(g *gen) {
	g.isa = zmm
	for _, size := range []int{4, 8} {
		g.size = size
		kernelPacked(g, kernelShape{rows: 6, nv: 2})
	}
	for _, size := range []int{4, 8} {
		g.size = size
		for rows := 1; rows <= 6; rows++ {
			kernelStrided(g, kernelShape{rows: rows, nv: 2, masked: true})
		}
	}
	copyRows(g, 2)
	for _, size := range []int{4, 8} {
		g.size = size
		kernelRows(g, kernelShape{rows: 6, nv: 2})
	}
	for _, size := range []int{4, 8} {
		g.size = size
		gatherRows(g, 2)
		gatherSegs(g)
	}
	// AVX2's tile shapes (6×16 float32, 6×8 float64; strided 2, 4 and 6
	// rows) on one ZMM vector per row, named with a Z: for products no
	// wider than an AVX2 tile. Every element gets AVX2's operations in
	// AVX2's order, so they give AVX2's bits, at up to twice its FMA
	// width (6 accumulators); and a Rows kernel for two such tiles
	// stacked (12 accumulators, the FMA units' full rate).
	g.tag = "Z"
	for _, size := range []int{4, 8} {
		g.size = size
		kernelPacked(g, kernelShape{rows: 6, nv: 1})
		for _, rows := range []int{2, 4, 6} {
			kernelStrided(g, kernelShape{rows: rows, nv: 1})
		}
		kernelRows(g, kernelShape{rows: 6, nv: 1})
		kernelRowsTall(g, kernelShape{rows: 12, nv: 1})
	}
	g.tag = ""
	// Tiles with A at a stride and B a Rows operand, both read in place:
	// 8 rows by one two-vector segment (sixteen accumulators), and 8 rows
	// by one to three one-vector segments (up to 24 accumulators, each
	// broadcast of A used for every segment).
	for _, size := range []int{4, 8} {
		g.size = size
		kernelStridedRowsB(g, kernelShape{rows: 8, nv: 2})
	}
	addOffsets(g)
	for _, size := range []int{4, 8} {
		g.size = size
		for segs := 1; segs <= 3; segs++ {
			kernelStridedRowsBSegs(g, kernelShape{rows: 8, nv: segs})
		}
	}
	// Float32 Rows kernels of one ZMM vector per row in pair order: half a
	// load of A per product (kernelRowsPair), for 12 rows and for 6. They
	// come last so that adding them moved no other routine in the file.
	g.size = 4
	for _, rows := range []int{12, 6} {
		kernelRowsPair(g, kernelShape{rows: rows, nv: 1})
	}
}

// must panics on an error, for registers that always exist.
func must(err error) {
	if err != nil {
		panic(fmt.Sprint("asmgen: ", err))
	}
}
