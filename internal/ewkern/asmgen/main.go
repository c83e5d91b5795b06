// Command asmgen writes the assembly of package ewkern and the Go
// declarations of its routines, with avo: one file pair per ISA tier,
//
//	avx2_amd64.s,   avx2_amd64.go    AVX2, YMM registers, whole vectors only
//	avx512_amd64.s, avx512_amd64.go  AVX-512, ZMM registers, masked tail
//
// from one description of each loop (relu, reluGrad, addTo) parameterised by
// vector width and element size. Run it with go generate in
// internal/ewkern; the output is deterministic, so a second run leaves the
// tree unchanged.
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
		asm, stubs, err := generate(f.isa)
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
	isa  vecISA
}{
	{"avx2", ymm},
	{"avx512", zmm},
}

func write(path string, data []byte) {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
}

// generate writes every routine for one vector ISA and returns the
// assembly and the Go declarations.
func generate(isa vecISA) (asm, stubs []byte, err error) {
	ctx := build.NewContext()
	ctx.ConstraintExpr("amd64,!noasm,!gccgo,!safe")
	g := &gen{Context: ctx, isa: isa}
	for _, size := range []int{4, 8} {
		g.size = size
		relu(g)
		reluGrad(g)
		addTo(g)
	}
	return avogen.Render(ctx, "ewkern")
}

// gen is an avo context with the element size and vector ISA of the
// routine being written.
type gen struct {
	*build.Context
	isa  vecISA
	size int // element size in bytes: 4 (float32) or 8 (float64)
}

// vecISA is a vector register file and how the loops end on it.
type vecISA struct {
	name   string // in routine names: "AVX2" or "AVX512"
	bytes  int    // vector width in bytes
	regs   []reg.VecPhysical
	masked bool // a masked tail handles the last n mod lanes elements
}

var (
	ymm = vecISA{"AVX2", 32, []reg.VecPhysical{reg.Y0, reg.Y1, reg.Y2, reg.Y3, reg.Y4, reg.Y5}, false}
	zmm = vecISA{"AVX512", 64, []reg.VecPhysical{reg.Z0, reg.Z1, reg.Z2, reg.Z3, reg.Z4, reg.Z5}, true}
	// kregs are the compare results of the unrolled loop; K7 is the tail mask.
	kregs = []reg.Register{reg.K1, reg.K2, reg.K3, reg.K4}
	ktail = reg.K7
)

// unroll is the number of vectors per iteration of the main loop; a
// second loop takes one vector at a time.
const unroll = 4

func (g *gen) v(i int) reg.VecPhysical { return g.isa.regs[i] }

func (g *gen) lanes() int { return g.isa.bytes / g.size }

func (g *gen) goType() string {
	if g.size == 4 {
		return "float32"
	}
	return "float64"
}

func (g *gen) suffix() string {
	if g.size == 4 {
		return "F32"
	}
	return "F64"
}

// label makes a routine-local label name.
func (g *gen) label(routine, s string) string { return routine + g.isa.name + g.suffix() + s }

func mem(base reg.Register, disp int) operand.Mem { return operand.Mem{Base: base, Disp: disp} }

func imm(v int) operand.Constant {
	if v >= 0 && v < 256 {
		return operand.U8(v)
	}
	return operand.U32(v)
}

func lbl(name string) operand.LabelRef { return operand.LabelRef(name) }

// Element-typed instructions.

func (g *gen) vmov(src, dst operand.Op) {
	if g.size == 4 {
		g.VMOVUPS(src, dst)
	} else {
		g.VMOVUPD(src, dst)
	}
}

// vmovk is a store under write mask k.
func (g *gen) vmovk(src operand.Op, k reg.Register, dst operand.Op) {
	if g.size == 4 {
		g.VMOVUPS(src, k, dst)
	} else {
		g.VMOVUPD(src, k, dst)
	}
}

// vmovz is a load (or register move) under zeroing mask k.
func (g *gen) vmovz(src operand.Op, k reg.Register, dst operand.Op) {
	if g.size == 4 {
		g.VMOVUPS_Z(src, k, dst)
	} else {
		g.VMOVUPD_Z(src, k, dst)
	}
}

func (g *gen) zero(r operand.Op) {
	if g.size == 4 {
		g.VXORPS(r, r, r)
	} else {
		g.VXORPD(r, r, r)
	}
}

// max is dst = max(y, x) with Intel's rule: x when either is NaN or both
// are zero (VMAXPS x, y, dst).
func (g *gen) max(x, y, dst operand.Op) {
	if g.size == 4 {
		g.VMAXPS(x, y, dst)
	} else {
		g.VMAXPD(x, y, dst)
	}
}

func (g *gen) add(x, y, dst operand.Op) {
	if g.size == 4 {
		g.VADDPS(x, y, dst)
	} else {
		g.VADDPD(x, y, dst)
	}
}

func (g *gen) mul(x, y, dst operand.Op) {
	if g.size == 4 {
		g.VMULPS(x, y, dst)
	} else {
		g.VMULPD(x, y, dst)
	}
}

// cmpGT0 sets dst to (x > 0) from y holding zeros: VCMPPS $0x11 (LT_OQ)
// x, y, dst is y < x, ordered, so NaN gives false. dst is a vector (AVX2:
// all-ones lanes) or a mask register (AVX-512).
func (g *gen) cmpGT0(x, zero, dst operand.Op) {
	if g.size == 4 {
		g.VCMPPS(imm(0x11), x, zero, dst)
	} else {
		g.VCMPPD(imm(0x11), x, zero, dst)
	}
}

func (g *gen) and(x, y, dst operand.Op) {
	if g.size == 4 {
		g.VANDPS(x, y, dst)
	} else {
		g.VANDPD(x, y, dst)
	}
}

// shift is log2 of the element size.
func (g *gen) shift() int {
	if g.size == 4 {
		return 2
	}
	return 3
}

// fn starts a NOSPLIT function with a Go signature and its doc comment.
func (g *gen) fn(name, sig string, doc ...string) {
	g.Function(name)
	g.Attributes(attr.NOSPLIT)
	g.SignatureExpr(sig)
	g.Pragma("noescape")
	g.Doc(doc...)
}

func (g *gen) arg(name string) operand.Mem {
	b, err := g.Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// loops emits the streaming loop structure shared by the routines: CX
// holds the remaining byte count, ptrs the pointers advanced with it.
// The stages run in order, each for every vector of an iteration (all
// loads, then all operations, then all stores); stage(o, i) handles vector
// i at byte offset o of every pointer. tail
// (AVX-512 only) processes the last CX bytes under the mask in K7 (CX is
// then less than one vector and a multiple of the element size).
func (g *gen) loops(routine string, ptrs []reg.Register, stages []func(off, i int), tail func()) {
	w := g.isa.bytes
	big, one, done := g.label(routine, "4"), g.label(routine, "1"), g.label(routine, "done")
	body := func(n int) {
		for _, st := range stages {
			for i := range n {
				st(i*w, i)
			}
		}
	}
	step := func(n int) {
		for _, p := range ptrs {
			g.ADDQ(imm(n), p)
		}
		g.SUBQ(imm(n), reg.RCX)
	}
	g.Label(big)
	g.CMPQ(reg.RCX, imm(unroll*w))
	g.JLT(lbl(one))
	body(unroll)
	step(unroll * w)
	g.JMP(lbl(big))
	g.Label(one)
	g.CMPQ(reg.RCX, imm(w))
	g.JLT(lbl(done))
	body(1)
	step(w)
	g.JMP(lbl(one))
	g.Label(done)
	if g.isa.masked {
		// K7 = (1 << elements) - 1; nothing left when CX == 0.
		g.SHRQ(imm(g.shift()), reg.RCX)
		g.JZ(lbl(g.label(routine, "ret")))
		g.MOVL(operand.U32(1), reg.EAX)
		g.SHLL(reg.CL, reg.EAX)
		g.DECL(reg.EAX)
		if g.size == 4 {
			g.KMOVW(reg.EAX, ktail)
		} else {
			g.KMOVB(reg.EAX, ktail)
		}
		tail()
		g.Label(g.label(routine, "ret"))
	}
	g.VZEROUPPER()
	g.RET()
}

// relu writes reluISAFnn(out, x *T, n int): out[i] = max(x[i], 0).
func relu(g *gen) {
	name := "relu" + g.isa.name + g.suffix()
	t := g.goType()
	doc := []string{
		name + " sets out[i] = max(x[i], 0) for i < n as ReluGo computes it:",
		"VMAXP x, 0 returns x when x is NaN or ±0 (std::max(x, 0)).",
	}
	if g.isa.masked {
		doc = append(doc, "Any n >= 0; the last n mod "+fmt.Sprint(g.lanes())+" elements run under a mask.")
	} else {
		doc = append(doc, "n is a multiple of "+fmt.Sprint(g.lanes())+".")
	}
	g.fn(name, fmt.Sprintf("func(out, x *%s, n int)", t), doc...)
	g.MOVQ(g.arg("out"), reg.RDI)
	g.MOVQ(g.arg("x"), reg.RSI)
	g.MOVQ(g.arg("n"), reg.RCX)
	g.SHLQ(imm(g.shift()), reg.RCX)
	zero := g.v(0)
	g.zero(zero)
	g.loops("relu", []reg.Register{reg.RSI, reg.RDI}, stages(func(off, i int) {
		g.vmov(mem(reg.RSI, off), g.v(1+i))
	}, func(off, i int) {
		g.max(g.v(1+i), zero, g.v(1+i))
	}, func(off, i int) {
		g.vmov(g.v(1+i), mem(reg.RDI, off))
	}), func() {
		g.vmovz(mem(reg.RSI, 0), ktail, g.v(1))
		g.max(g.v(1), zero, g.v(1))
		g.vmovk(g.v(1), ktail, mem(reg.RDI, 0))
	})
}

// reluGrad writes reluGradISAFnn(out, dy, f *T, n int):
// out[i] = dy[i] · (f[i] > 0 ? 1 : 0).
func reluGrad(g *gen) {
	name := "reluGrad" + g.isa.name + g.suffix()
	t := g.goType()
	doc := []string{
		name + " sets out[i] = dy[i] · (f[i] > 0 ? 1 : 0) for i < n as",
		"ReluGradGo computes it: the 0/1 factor (ordered compare, NaN gives 0)",
		"times dy, so a NaN or Inf dy times 0 is NaN and a negative one −0.",
	}
	if g.isa.masked {
		doc = append(doc, "Any n >= 0; the last n mod "+fmt.Sprint(g.lanes())+" elements run under a mask.")
	} else {
		doc = append(doc, "n is a multiple of "+fmt.Sprint(g.lanes())+".")
	}
	g.fn(name, fmt.Sprintf("func(out, dy, f *%s, n int)", t), doc...)
	g.MOVQ(g.arg("out"), reg.RDI)
	g.MOVQ(g.arg("dy"), reg.RSI)
	g.MOVQ(g.arg("f"), reg.RDX)
	g.MOVQ(g.arg("n"), reg.RCX)
	g.SHLQ(imm(g.shift()), reg.RCX)
	zero, one := g.v(0), g.v(5)
	g.zero(zero)
	// one = broadcast 1.0
	if g.size == 4 {
		g.MOVQ(operand.U32(0x3f800000), reg.RAX)
		g.VMOVQ(reg.RAX, reg.X5)
		g.VBROADCASTSS(reg.X5, one)
	} else {
		g.MOVQ(operand.U64(0x3ff0000000000000), reg.RAX)
		g.VMOVQ(reg.RAX, reg.X5)
		g.VBROADCASTSD(reg.X5, one)
	}
	ptrs := []reg.Register{reg.RSI, reg.RDX, reg.RDI}
	if !g.isa.masked {
		// AVX2: the compare writes all-ones lanes; AND with 1.0 gives the factor.
		g.loops("rgrad", ptrs, stages(func(off, i int) {
			g.cmpGT0(mem(reg.RDX, off), zero, g.v(1+i))
		}, func(off, i int) {
			g.and(one, g.v(1+i), g.v(1+i))
		}, func(off, i int) {
			g.mul(mem(reg.RSI, off), g.v(1+i), g.v(1+i))
		}, func(off, i int) {
			g.vmov(g.v(1+i), mem(reg.RDI, off))
		}), nil)
		return
	}
	// AVX-512: the compare writes a mask register; 1.0 moved under it with
	// zeroing gives the factor.
	g.loops("rgrad", ptrs, stages(func(off, i int) {
		g.cmpGT0(mem(reg.RDX, off), zero, kregs[i])
	}, func(off, i int) {
		g.vmovz(one, kregs[i], g.v(1+i))
	}, func(off, i int) {
		g.mul(mem(reg.RSI, off), g.v(1+i), g.v(1+i))
	}, func(off, i int) {
		g.vmov(g.v(1+i), mem(reg.RDI, off))
	}), func() {
		g.vmovz(mem(reg.RDX, 0), ktail, g.v(2))
		g.vmovz(mem(reg.RSI, 0), ktail, g.v(3))
		g.cmpGT0(g.v(2), zero, kregs[0])
		g.vmovz(one, kregs[0], g.v(1))
		g.mul(g.v(3), g.v(1), g.v(1))
		g.vmovk(g.v(1), ktail, mem(reg.RDI, 0))
	})
}

// stages lists the stages of a loop body (see loops).
func stages(s ...func(off, i int)) []func(off, i int) { return s }

// addTo writes addToISAFnn(dst, src *T, n int): dst[i] = dst[i] + src[i]
// (VADDP src, dst, dst: dst is the first operand, whose NaN an addition of
// two NaNs returns, as Go's dst[i] += src[i] does).
func addTo(g *gen) {
	name := "addTo" + g.isa.name + g.suffix()
	t := g.goType()
	doc := []string{
		name + " sets dst[i] = dst[i] + src[i] for i < n as AddToGo computes it.",
	}
	if g.isa.masked {
		doc = append(doc, "Any n >= 0; the last n mod "+fmt.Sprint(g.lanes())+" elements run under a mask.")
	} else {
		doc = append(doc, "n is a multiple of "+fmt.Sprint(g.lanes())+".")
	}
	g.fn(name, fmt.Sprintf("func(dst, src *%s, n int)", t), doc...)
	g.MOVQ(g.arg("dst"), reg.RDI)
	g.MOVQ(g.arg("src"), reg.RSI)
	g.MOVQ(g.arg("n"), reg.RCX)
	g.SHLQ(imm(g.shift()), reg.RCX)
	g.loops("add", []reg.Register{reg.RSI, reg.RDI}, stages(func(off, i int) {
		g.vmov(mem(reg.RDI, off), g.v(1+i))
	}, func(off, i int) {
		g.add(mem(reg.RSI, off), g.v(1+i), g.v(1+i))
	}, func(off, i int) {
		g.vmov(g.v(1+i), mem(reg.RDI, off))
	}), func() {
		g.vmovz(mem(reg.RDI, 0), ktail, g.v(1))
		g.vmovz(mem(reg.RSI, 0), ktail, g.v(2))
		g.add(g.v(2), g.v(1), g.v(1))
		g.vmovk(g.v(1), ktail, mem(reg.RDI, 0))
	})
}
