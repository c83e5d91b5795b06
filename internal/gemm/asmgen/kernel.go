package main

import (
	"fmt"

	"github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

// kernelShape describes a micro-kernel's tile: rows of C (at most 6), nv
// vectors per row, and whether the columns are masked (a mask argument
// selects the columns written, and C is read only there).
//
// Every kernel computes, for each element of its tile,
//
//	acc = 0; for p in 0..k-1: acc = fma(a(i, p), b[p*nr+j], acc)
//	c = alpha*acc, then c = fma(beta, c_old, c) unless beta == ±0
//
// so that all kernels of one tier and element type give an element of C
// the same bits, whatever the tile's number of rows, its masking or the
// way A is addressed. Registers: accumulator (i, v) is vector i*nv+v; the
// current row of B is vectors 6*nv..7*nv-1; the broadcasts of A alternate
// between the two vectors after those (alpha and beta at the end).
type kernelShape struct {
	rows, nv int
	masked   bool
}

func (s kernelShape) acc(g *gen, i, v int) reg.VecPhysical { return g.v(i*s.nv + v) }
func (s kernelShape) bvec(g *gen, v int) reg.VecPhysical   { return g.v(s.top()*s.nv + v) }
func (s kernelShape) tmp(g *gen, t int) reg.VecPhysical    { return g.v((s.top()+1)*s.nv + t) }

// top is the number of accumulator rows the register layout reserves: 6,
// or the rows of a taller tile.
func (s kernelShape) top() int { return max(6, s.rows) }

// nr is the tile's number of columns.
func (s kernelShape) nr(g *gen) int { return s.nv * g.lanes() }

// rowBytes is the size of one row of B (and of the tile's C rows).
func (s kernelShape) rowBytes(g *gen) int { return s.nv * g.isa.bytes }

// step emits one step of k: B's row at bo(BX), A's row elements at a(i).
func (s kernelShape) step(g *gen, bo int, a func(i int) operand.Mem) {
	for v := range s.nv {
		g.vmov(mem(reg.RBX, bo+v*g.isa.bytes), s.bvec(g, v))
	}
	for i := range s.rows {
		t := s.tmp(g, i%2)
		g.bcast(a(i), t)
		for v := range s.nv {
			g.fma(s.bvec(g, v), t, s.acc(g, i, v))
		}
	}
}

// prefetchC brings the tile's C rows (DI, stride DX bytes) towards L1,
// using R8.
func (s kernelShape) prefetchC(g *gen) {
	g.MOVQ(reg.RDI, reg.R8)
	w := s.rowBytes(g)
	for i := range s.rows {
		for o := 0; o < w-1; o += 64 {
			g.PREFETCHT0(mem(reg.R8, o))
		}
		g.PREFETCHT0(mem(reg.R8, w-1))
		if i < s.rows-1 {
			g.ADDQ(reg.RDX, reg.R8)
		}
	}
}

func (s kernelShape) zeroAcc(g *gen) {
	for i := range s.rows {
		for v := range s.nv {
			g.zero(s.acc(g, i, v))
		}
	}
}

// loadMasks loads the column mask argument into K1.. (one per vector).
func (s kernelShape) loadMasks(g *gen) {
	if !s.masked {
		return
	}
	g.MOVQ(g.arg("mask"), reg.R8)
	for v := range s.nv {
		g.KMOVW(reg.R8L, kregs[v])
		if v < s.nv-1 {
			g.SHRQ(imm(g.lanes()), reg.R8)
		}
	}
}

// store scales the accumulators by alpha, adds beta*C unless beta is ±0,
// and writes the tile to C at DI (row stride DX), then returns; epilogue
// runs before each return (it may set results).
func (s kernelShape) store(g *gen, epilogue func()) {
	alpha, beta := s.tmp(g, 0), s.tmp(g, 1)
	g.bcast(g.arg("alpha"), alpha)
	for i := range s.rows {
		for v := range s.nv {
			g.mul(alpha, s.acc(g, i, v), s.acc(g, i, v))
		}
	}
	if g.size == 4 {
		g.MOVL(g.arg("beta"), reg.R8L)
		g.SHLL(imm(1), reg.R8L)
	} else {
		g.MOVQ(g.arg("beta"), reg.R8)
		g.SHLQ(imm(1), reg.R8)
	}
	g.Comment("beta == ±0: C is not read")
	g.JZ(lbl("beta0"))
	g.bcast(g.arg("beta"), beta)
	s.storeRows(g, beta)
	epilogue()
	g.VZEROUPPER()
	g.RET()
	g.Label("beta0")
	s.storeRows(g, nil)
	epilogue()
	g.VZEROUPPER()
	g.RET()
}

func (s kernelShape) storeRows(g *gen, beta reg.VecPhysical) {
	for i := range s.rows {
		for v := range s.nv {
			if beta == nil {
				continue
			}
			c := mem(reg.RDI, v*g.isa.bytes)
			if s.masked {
				g.fmak(c, beta, kregs[v], s.acc(g, i, v))
			} else {
				g.fma(c, beta, s.acc(g, i, v))
			}
		}
		for v := range s.nv {
			c := mem(reg.RDI, v*g.isa.bytes)
			if s.masked {
				g.vmovk(s.acc(g, i, v), kregs[v], c)
			} else {
				g.vmov(s.acc(g, i, v), c)
			}
		}
		if i < s.rows-1 {
			g.ADDQ(reg.RDX, reg.RDI)
		}
	}
}

// prefetchA is how far ahead of the current step the packed kernels
// prefetch A, in bytes.
func prefetchA(g *gen) int {
	if g.size == 4 {
		return 384
	}
	return 576
}

// kernelPacked writes the micro-kernel for a packed A (6 elements per
// step of k) and packed B (nr per step).
func kernelPacked(g *gen, s kernelShape) {
	nr := s.nr(g)
	name := fmt.Sprintf("%sgemmKernel%dx%d%s", g.prefix(), s.rows, nr, g.tag)
	t := g.goType()
	g.fn(name, fmt.Sprintf("func(k int, a, b, c *%s, ldc int, alpha, beta %s)", t, t),
		fmt.Sprintf("%s is the %s micro-kernel for %s: a %d×%d tile of C,", name, t, g.isa.name, s.rows, nr),
		fmt.Sprintf("c[i*ldc+j] = alpha*Σ_p a[p*6+i]*b[p*%d+j] + beta*c[i*ldc+j], summed over", nr),
		"p = 0..k-1 in order with fused multiply-adds (k >= 1). beta == ±0",
		"means C is not read.")
	g.Load(g.Param("k"), reg.RCX)
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("b"), reg.RBX)
	g.Load(g.Param("c"), reg.RDI)
	g.Load(g.Param("ldc"), reg.RDX)
	g.shlSize(reg.RDX)
	g.Comment("Bring the C tile towards L1 while the loop runs.")
	s.prefetchC(g)
	s.zeroAcc(g)

	astep := 6 * g.size
	bstep := s.rowBytes(g)
	g.MOVQ(reg.RCX, reg.R9)
	g.SHRQ(imm(2), reg.R9)
	g.JZ(lbl("tail"))
	g.Label("loop4")
	g.PREFETCHT0(mem(reg.RAX, prefetchA(g)))
	for u := range 4 {
		s.step(g, u*bstep, func(i int) operand.Mem { return mem(reg.RAX, u*astep+i*g.size) })
	}
	g.ADDQ(imm(4*astep), reg.RAX)
	g.ADDQ(imm(4*bstep), reg.RBX)
	g.DECQ(reg.R9)
	g.JNZ(lbl("loop4"))
	g.Label("tail")
	g.ANDQ(imm(3), reg.RCX)
	g.JZ(lbl("store"))
	g.Label("loop1")
	s.step(g, 0, func(i int) operand.Mem { return mem(reg.RAX, i*g.size) })
	g.ADDQ(imm(astep), reg.RAX)
	g.ADDQ(imm(bstep), reg.RBX)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop1"))
	g.Label("store")
	s.store(g, func() {})
}

// kernelStrided writes the micro-kernel with A at a stride: row i of A
// for step p is a[p*lda+i]. lda = 6 is a packed panel; a larger lda reads
// an A stored k×m (op(A) = Aᵀ) in place.
func kernelStrided(g *gen, s kernelShape) {
	nr := s.nr(g)
	name := fmt.Sprintf("%sgemmKernelS%dx%d%s", g.prefix(), s.rows, nr, g.tag)
	t := g.goType()
	sig := fmt.Sprintf("func(k int, a *%s, lda int, b, c *%s, ldc int, alpha, beta %s)", t, t, t)
	if s.masked {
		sig = fmt.Sprintf("func(k int, a *%s, lda int, b, c *%s, ldc int, alpha, beta %s, mask uint64)", t, t, t)
	}
	doc := []string{
		fmt.Sprintf("%s computes rows 0..%d of a 6×%d tile (%s, %s),", name, s.rows-1, nr, t, g.isa.name),
		fmt.Sprintf("with A element (i, p) at a[p*lda+i] and B packed as for %sgemmKernel6x%d%s.", g.prefix(), nr, g.tag),
	}
	if s.masked {
		doc = append(doc, "Only the columns whose bit is set in mask (bit j: column j) are",
			"written, and read when beta != ±0.")
	}
	doc = append(doc, "Every element gets the full kernel's operations in the same order.")
	g.fn(name, sig, doc...)
	g.Load(g.Param("k"), reg.RCX)
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("lda"), reg.R10)
	g.Load(g.Param("b"), reg.RBX)
	g.Load(g.Param("c"), reg.RDI)
	g.Load(g.Param("ldc"), reg.RDX)
	g.shlSize(reg.R10)
	g.shlSize(reg.RDX)
	g.Comment("R11: eight steps of A, the prefetch distance.")
	g.MOVQ(reg.R10, reg.R11)
	g.SHLQ(imm(3), reg.R11)
	s.prefetchC(g)
	s.zeroAcc(g)

	bstep := s.rowBytes(g)
	a := func(i int) operand.Mem { return mem(reg.RAX, i*g.size) }
	g.MOVQ(reg.RCX, reg.R9)
	g.SHRQ(imm(2), reg.R9)
	g.JZ(lbl("tail"))
	g.Label("loop4")
	g.PREFETCHT0(memi(reg.RAX, reg.R11, 1, 0))
	for u := range 4 {
		s.step(g, u*bstep, a)
		g.ADDQ(reg.R10, reg.RAX)
	}
	g.ADDQ(imm(4*bstep), reg.RBX)
	g.DECQ(reg.R9)
	g.JNZ(lbl("loop4"))
	g.Label("tail")
	g.ANDQ(imm(3), reg.RCX)
	g.JZ(lbl("store"))
	g.Label("loop1")
	s.step(g, 0, a)
	g.ADDQ(reg.R10, reg.RAX)
	g.ADDQ(imm(bstep), reg.RBX)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop1"))
	g.Label("store")
	s.loadMasks(g)
	s.store(g, func() {})
}

// kernelRows writes the micro-kernel reading A in place from a Rows
// operand: for segment t < nseg, row i of A is seglen elements at
// a[offs[t*ldo+i]+start], or the zero buffer when that offset is
// negative; an offset greater than limit returns bad = true without
// writing C.
func kernelRows(g *gen, s kernelShape) {
	nr := s.nr(g)
	name := fmt.Sprintf("%sgemmKernelRows%dx%d%s", g.prefix(), s.rows, nr, g.tag)
	t := g.goType()
	g.fn(name, fmt.Sprintf("func(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *%s, ldc int, alpha, beta %s, limit int) (bad bool)", t, t),
		fmt.Sprintf("%s is the %d×%d %s micro-kernel (%s) with A read in place:", name, s.rows, nr, t, g.isa.name),
		"for segment t < nseg, row i of A is seglen elements at",
		"a[offs[t*ldo+i]+start], or the zero buffer when that offset is negative.",
		fmt.Sprintf("B is packed (%d per step of k, nseg*seglen steps), C as in %sgemmKernel6x%d%s.", nr, g.prefix(), nr, g.tag),
		"At the first offset greater than limit it returns bad = true without",
		"writing C.")
	rowRegs := []reg.Register{reg.R8, reg.R9, reg.R10, reg.R11, reg.R12, reg.R13}
	g.Load(g.Param("c"), reg.RDI)
	g.Load(g.Param("ldc"), reg.RDX)
	g.shlSize(reg.RDX)
	g.Comment("Bring the C tile towards L1 while the loop runs.")
	s.prefetchC(g)
	g.Load(g.Param("nseg"), reg.RDI)
	g.Load(g.Param("offs"), reg.RSI)
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("start"), reg.RDX)
	g.LEAQ(memi(reg.RAX, reg.RDX, uint8(g.size), 0), reg.RAX)
	g.Load(g.Param("zero"), reg.RDX)
	g.Load(g.Param("b"), reg.RBX)
	s.zeroAcc(g)
	g.TESTQ(reg.RDI, reg.RDI)
	g.JZ(lbl("store"))

	g.Label("seg")
	g.Comment("Row pointers: a + offset, or the zero buffer for a negative offset.")
	for i, r := range rowRegs[:s.rows] {
		g.MOVQ(mem(reg.RSI, 8*i), r)
		g.CMPQ(r, g.arg("limit"))
		g.JGT(lbl("bad"))
		g.TESTQ(r, r)
		g.LEAQ(memi(reg.RAX, r, uint8(g.size), 0), r)
		g.CMOVQLT(reg.RDX, r)
	}
	bstep := s.rowBytes(g)
	advance := func(n int) {
		for _, r := range rowRegs[:s.rows] {
			g.ADDQ(imm(n), r)
		}
	}
	g.Load(g.Param("seglen"), reg.RCX)
	g.SHRQ(imm(2), reg.RCX)
	g.JZ(lbl("tail"))
	g.Label("loop4")
	for u := range 4 {
		s.step(g, u*bstep, func(i int) operand.Mem { return mem(rowRegs[i], u*g.size) })
	}
	advance(4 * g.size)
	g.ADDQ(imm(4*bstep), reg.RBX)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop4"))
	g.Label("tail")
	g.Load(g.Param("seglen"), reg.RCX)
	g.ANDQ(imm(3), reg.RCX)
	g.JZ(lbl("next"))
	g.Label("loop1")
	s.step(g, 0, func(i int) operand.Mem { return mem(rowRegs[i], 0) })
	advance(g.size)
	g.ADDQ(imm(bstep), reg.RBX)
	g.DECQ(reg.RCX)
	g.JNZ(lbl("loop1"))
	g.Label("next")
	g.Load(g.Param("ldo"), reg.RCX)
	g.LEAQ(memi(reg.RSI, reg.RCX, 8, 0), reg.RSI)
	g.DECQ(reg.RDI)
	g.JNZ(lbl("seg"))

	storeRowsTile(g, s, "store")
}

// kernelRowsTall writes the Rows kernel of a tile of s.rows (more than 6,
// two 6-row tiles stacked) by one vector per row, with A read in place as
// for kernelRows. With twelve row pointers there are not enough general
// registers for kernelRows' bookkeeping, so rows are addressed as a moving
// base (CX: a + (start+p)·size) plus each row's element offset scaled by
// the element size (a zero segment's offset points the row at the zero
// buffer), B's end marks the end of a segment's loop, and the segment
// state lives in the frame. Every element gets kernelRows' operations in
// the same order.
func kernelRowsTall(g *gen, s kernelShape) { kernelRowsA(g, s, false) }

// kernelRowsPair writes the pair-order Rows kernel of s.rows rows by one
// float32 ZMM vector of columns (sgemmKernelRows12x16P, 6x16P): A read in
// place as by kernelRowsTall, but each load of A broadcasts two adjacent
// elements of a row (k = 2q, 2q+1) and feeds two products, one per half
// of the tile's columns, so a row of A costs half a load per product
// instead of one. B is packed by pairs of k (pairPanels): for pair q,
// vector 0 holds columns 0,1,4,5,8,9,12,13 and vector 1 columns
// 2,3,6,7,10,11,14,15, each column as its two elements b[2q], b[2q+1].
// Each element of C so gets two chains of fused multiply-adds, over the
// even and over the odd k in order, added at the end (the shuffles put
// the columns back in order), then the alpha/beta epilogue. Segments must
// have an even length.
func kernelRowsPair(g *gen, s kernelShape) { kernelRowsA(g, s, true) }

// kernelRowsA writes kernelRowsTall's kernel, or kernelRowsPair's.
func kernelRowsA(g *gen, s kernelShape, pair bool) {
	nr := s.nr(g)
	tag := g.tag
	if pair {
		tag = "P"
	}
	name := fmt.Sprintf("%sgemmKernelRows%dx%d%s", g.prefix(), s.rows, nr, tag)
	t := g.goType()
	doc := []string{
		fmt.Sprintf("%s is the %d×%d %s micro-kernel (%s) with A read in place,", name, s.rows, nr, t, g.isa.name),
		fmt.Sprintf("as %sgemmKernelRows6x%d%s for %d rows: row i of A in segment t is", g.prefix(), nr, g.tag, s.rows),
		"seglen elements at a[offs[t*ldo+i]+start], or the zero buffer when that",
		"offset is negative. At the first offset greater than limit it returns",
		"bad = true without writing C.",
	}
	if pair {
		doc = []string{
			fmt.Sprintf("%s is the %d×%d %s micro-kernel (%s) with A read in place", name, s.rows, nr, t, g.isa.name),
			"as by the Rows kernels (row i of A in segment t is seglen elements at",
			"a[offs[t*ldo+i]+start], or the zero buffer when that offset is",
			"negative), summing the even and the odd steps of k apart: B is packed",
			"by pairs of k (pairPanels) and seglen must be even. At the first",
			"offset greater than limit it returns bad = true without writing C.",
		}
	}
	g.fn(name, fmt.Sprintf("func(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *%s, ldc int, alpha, beta %s, limit int) (bad bool)", t, t), doc...)
	// The pair kernel's accumulators: row i's two halves in vectors i and
	// rows+i; then two B vectors and two broadcasts.
	pacc := func(i, h int) reg.VecPhysical { return g.v(h*s.rows + i) }
	pb := func(h int) reg.VecPhysical { return g.v(2*s.rows + h) }
	ptmp := func(t int) reg.VecPhysical { return g.v(2*s.rows + 2 + t) }
	rowRegs := []reg.Register{reg.R8, reg.R9, reg.R10, reg.R11, reg.R12, reg.R13, reg.R14, reg.R15, reg.RSI, reg.RDI, reg.RDX, reg.RAX}
	if s.rows > len(rowRegs) {
		panic("asmgen: too many rows")
	}
	// Frame: the offsets of the current segment, the segments left, the
	// zero buffer's offset from A's base, A's base, and B's end of the
	// 4-step loop and of the segment.
	frame := g.AllocLocal(48)
	at := func(i int) operand.Mem { m := frame; m.Disp += 8 * i; return m }
	offsCur, segsLeft, zoff, abase, b4end, bend := at(0), at(1), at(2), at(3), at(4), at(5)

	g.Load(g.Param("c"), reg.RDI)
	g.Load(g.Param("ldc"), reg.RDX)
	g.shlSize(reg.RDX)
	g.Comment("Bring the C tile towards L1 while the loop runs.")
	s.prefetchC(g)
	s.zeroAcc(g)
	if pair {
		for i := range s.rows {
			g.zero(pacc(i, 1))
		}
	}
	g.Load(g.Param("nseg"), reg.RAX)
	g.TESTQ(reg.RAX, reg.RAX)
	g.JZ(lbl("store"))
	g.MOVQ(reg.RAX, segsLeft)
	g.Load(g.Param("offs"), reg.RAX)
	g.MOVQ(reg.RAX, offsCur)
	g.Comment("A's base: a + start; the zero buffer's offset from it, in elements.")
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("start"), reg.RDX)
	g.LEAQ(memi(reg.RAX, reg.RDX, uint8(g.size), 0), reg.RAX)
	g.MOVQ(reg.RAX, abase)
	g.Load(g.Param("zero"), reg.RDX)
	g.SUBQ(reg.RAX, reg.RDX)
	if g.size == 4 {
		g.SARQ(imm(2), reg.RDX)
	} else {
		g.SARQ(imm(3), reg.RDX)
	}
	g.MOVQ(reg.RDX, zoff)
	g.Load(g.Param("b"), reg.RBX)

	bstep := s.rowBytes(g)
	g.Label("seg")
	g.Comment("Row offsets: the segment's, or the zero buffer's for a negative one.")
	g.MOVQ(offsCur, reg.RCX)
	for i, r := range rowRegs[:s.rows] {
		g.MOVQ(mem(reg.RCX, 8*i), r)
		g.CMPQ(r, g.arg("limit"))
		g.JGT(lbl("bad"))
		g.TESTQ(r, r)
		g.CMOVQLT(zoff, r)
	}
	g.Comment("B's ends: of the 4-step loop and of the segment.")
	g.Load(g.Param("seglen"), reg.RCX)
	g.SHRQ(imm(2), reg.RCX)
	g.IMUL3Q(imm(4*bstep), reg.RCX, reg.RCX)
	g.ADDQ(reg.RBX, reg.RCX)
	g.MOVQ(reg.RCX, b4end)
	g.Load(g.Param("seglen"), reg.RCX)
	g.ANDQ(imm(3), reg.RCX)
	g.IMUL3Q(imm(bstep), reg.RCX, reg.RCX)
	g.ADDQ(b4end, reg.RCX)
	g.MOVQ(reg.RCX, bend)
	g.MOVQ(abase, reg.RCX)
	a := func(u int) func(i int) operand.Mem {
		return func(i int) operand.Mem { return memi(reg.RCX, rowRegs[i], uint8(g.size), u*g.size) }
	}
	// step does k steps u, u+1 (the pair kernel) or step u (the others).
	step := func(u int) {
		if !pair {
			s.step(g, u*bstep, a(u))
			return
		}
		for h := range 2 {
			g.vmov(mem(reg.RBX, u*bstep+h*g.isa.bytes), pb(h))
		}
		for i := range s.rows {
			t := ptmp(i % 2)
			g.VBROADCASTSD(a(u)(i), t) // two float32 elements: 64 bits to every pair of lanes
			for h := range 2 {
				g.fma(pb(h), t, pacc(i, h))
			}
		}
	}
	per := 1 // k steps per step call
	if pair {
		per = 2
	}
	g.Label("loop4")
	g.CMPQ(reg.RBX, b4end)
	g.JAE(lbl("tail"))
	for u := 0; u < 4; u += per {
		step(u)
	}
	g.ADDQ(imm(4*g.size), reg.RCX)
	g.ADDQ(imm(4*bstep), reg.RBX)
	g.JMP(lbl("loop4"))
	g.Label("tail")
	g.CMPQ(reg.RBX, bend)
	g.JAE(lbl("next"))
	step(0)
	g.ADDQ(imm(per*g.size), reg.RCX)
	g.ADDQ(imm(per*bstep), reg.RBX)
	g.JMP(lbl("tail"))
	g.Label("next")
	g.Load(g.Param("ldo"), reg.RCX)
	g.SHLQ(imm(3), reg.RCX)
	g.ADDQ(reg.RCX, offsCur)
	g.DECQ(segsLeft)
	g.JNZ(lbl("seg"))

	if !pair {
		storeRowsTile(g, s, "store")
		return
	}
	g.Label("store")
	g.Comment("Even plus odd sums; the shuffles put the columns in order.")
	for i := range s.rows {
		t := ptmp(0)
		g.VSHUFPS(imm(0x88), pacc(i, 1), pacc(i, 0), t)
		g.VSHUFPS(imm(0xdd), pacc(i, 1), pacc(i, 0), pacc(i, 0))
		g.VADDPS(t, pacc(i, 0), pacc(i, 0))
	}
	storeRowsTile(g, s, "")
}

// kernelStridedRowsB writes the kernel of a tile of s.rows rows by s.nv
// vectors of columns with both operands read in place: A at a stride, as
// kernelStrided reads it (row i of step p at a[p*lda+i]), and B a Rows
// operand's segment of s.nv vectors per step (row p at data[offs[p]], or
// the zero buffer when that offset is negative; an offset greater than
// limit returns bad = true without writing C). For a convolution's filter
// gradient with 16 or 32 input channels per tap (A = dYᵀ, B = im2col(x))
// it needs no packing at all. With one vector per row the products use
// A's elements as embedded broadcasts; every element gets kernelStrided's
// operations in the same order (a chain of fused multiply-adds over p,
// then the alpha/beta epilogue), so its bits. (genAVX512 uses it for
// two-vector segments; kernelStridedRowsBSegs takes one-vector ones.)
func kernelStridedRowsB(g *gen, s kernelShape) {
	nr := s.nr(g)
	name := fmt.Sprintf("%sgemmKernelSR%dx%d", g.prefix(), s.rows, nr)
	t := g.goType()
	g.fn(name, fmt.Sprintf("func(k int, a *%s, lda int, offs *int, data, zero, c *%s, ldc int, alpha, beta %s, limit int) (bad bool)", t, t, t),
		fmt.Sprintf("%s computes a %d×%d tile (%s, %s) with A element (i, p) at", name, s.rows, nr, t, g.isa.name),
		fmt.Sprintf("a[p*lda+i] and B's row p the %d elements at data[offs[p]], or the zero", nr),
		"buffer when offs[p] is negative, for p < k (k >= 1): as",
		fmt.Sprintf("%sgemmKernelS6x%d computes its tile, element by element. At the first", g.prefix(), nr),
		"offset greater than limit it returns bad = true without writing C.")
	loadStridedRowsArgs(g, s, false)
	// B's row p: R8 (and R9 for p+1) = data + offs[p], or the zero buffer.
	brow := func(o int, r reg.Register) {
		g.MOVQ(mem(reg.RSI, 8*o), r)
		g.CMPQ(r, reg.R13)
		g.JGT(lbl("bad"))
		g.TESTQ(r, r)
		g.LEAQ(memi(reg.R11, r, uint8(g.size), 0), r)
		g.CMOVQLT(reg.R12, r)
	}
	// Registers past the accumulators: B's row for each of two steps
	// (nv vectors each), then two broadcast temporaries.
	base := s.top() * s.nv
	bvec := func(u, v int) reg.VecPhysical { return g.v(base + u*s.nv + v) }
	// fmas multiplies step u's B row by A's row at a: one embedded
	// broadcast per product with one vector per row, else each element
	// broadcast once for its row's vectors.
	fmas := func(u int, a operand.Mem) {
		for i := range s.rows {
			m := a
			m.Disp += i * g.size
			if s.nv == 1 {
				if g.size == 4 {
					g.VFMADD231PS_BCST(m, bvec(u, 0), s.acc(g, i, 0))
				} else {
					g.VFMADD231PD_BCST(m, bvec(u, 0), s.acc(g, i, 0))
				}
				continue
			}
			t := g.v(base + 2*s.nv + i%2)
			g.bcast(m, t)
			for v := range s.nv {
				g.fma(bvec(u, v), t, s.acc(g, i, v))
			}
		}
	}
	loadB := func(u int, r reg.Register) {
		for v := range s.nv {
			g.vmov(mem(r, v*g.isa.bytes), bvec(u, v))
		}
	}
	g.Comment("Two steps per iteration: both B rows' addresses first.")
	g.MOVQ(reg.RCX, reg.R9)
	g.SHRQ(imm(1), reg.R9)
	g.JZ(lbl("tail"))
	g.MOVQ(reg.R9, reg.R14)
	g.Label("loop2")
	brow(0, reg.R8)
	brow(1, reg.R9)
	loadB(0, reg.R8)
	loadB(1, reg.R9)
	fmas(0, mem(reg.RAX, 0))
	g.ADDQ(reg.R10, reg.RAX)
	fmas(1, mem(reg.RAX, 0))
	g.ADDQ(reg.R10, reg.RAX)
	g.ADDQ(imm(16), reg.RSI)
	g.DECQ(reg.R14)
	g.JNZ(lbl("loop2"))
	g.Label("tail")
	g.ANDQ(imm(1), reg.RCX)
	g.JZ(lbl("done"))
	brow(0, reg.R8)
	loadB(0, reg.R8)
	fmas(0, mem(reg.RAX, 0))
	storeRowsTile(g, s, "done")
}

// kernelStridedRowsBSegs writes the kernel of a tile of s.rows rows by
// s.nv consecutive segments of a Rows B of one vector each, both operands
// read in place: A at a stride (row i of step p at a[p*lda+i]) and
// segment v's row p at data[offs[v*ldo+p]], or the zero buffer when that
// offset is negative (an offset greater than limit returns bad = true
// without writing C). Each element of A is broadcast once for the nv
// segments' products, so a step loads nv rows of B and s.rows elements
// of A for rows·nv fused multiply-adds: for a convolution's filter
// gradient with 16 float32 (8 float64) input channels per tap, several
// taps at once. Every element gets kernelStridedRowsB's operations in the
// same order, so its bits.
func kernelStridedRowsBSegs(g *gen, s kernelShape) {
	seg := g.lanes()
	name := fmt.Sprintf("%sgemmKernelSR%dx%dx%d", g.prefix(), s.rows, seg, s.nv)
	t := g.goType()
	g.fn(name, fmt.Sprintf("func(k int, a *%s, lda int, offs *int, ldo int, data, zero, c *%s, ldc int, alpha, beta %s, limit int) (bad bool)", t, t, t),
		fmt.Sprintf("%s computes a %d×%d tile (%s, %s): %d segments of %d columns,", name, s.rows, s.nv*seg, t, g.isa.name, s.nv, seg),
		fmt.Sprintf("with A element (i, p) at a[p*lda+i] and segment v's row p the %d", seg),
		"elements at data[offs[v*ldo+p]], or the zero buffer when that offset is",
		"negative, for p < k (k >= 1): element by element as the strided",
		"kernels compute their tiles. At the first offset greater than limit it",
		"returns bad = true without writing C.")
	loadStridedRowsArgs(g, s, true)
	ptrs := []reg.Register{reg.R8, reg.R9, reg.RBX}
	if s.nv > len(ptrs) {
		panic("asmgen: too many segments")
	}
	// offs of segment v, step u: RSI + v*ldo*8 + 8u.
	offAt := func(u, v int) operand.Mem {
		switch v {
		case 0:
			return mem(reg.RSI, 8*u)
		case 1:
			return memi(reg.RSI, reg.R15, 1, 8*u)
		}
		return memi(reg.RSI, reg.R15, 2, 8*u)
	}
	base := s.top() * s.nv
	bvec := func(u, v int) reg.VecPhysical { return g.v(base + u*s.nv + v) }
	tmp := func(i int) reg.VecPhysical { return g.v(base + 2*s.nv + i%2) }
	if base+2*s.nv+2 > len(g.isa.regs) {
		panic("asmgen: too many registers")
	}
	// loadB loads step u's rows of B: each segment's address (data +
	// offset, or the zero buffer), then its vector.
	loadB := func(u int) {
		for v := range s.nv {
			r := ptrs[v]
			g.MOVQ(offAt(u, v), r)
			g.CMPQ(r, reg.R13)
			g.JGT(lbl("bad"))
			g.TESTQ(r, r)
			g.LEAQ(memi(reg.R11, r, uint8(g.size), 0), r)
			g.CMOVQLT(reg.R12, r)
			g.vmov(mem(r, 0), bvec(u, v))
		}
	}
	fmas := func(u int) {
		for i := range s.rows {
			g.bcast(mem(reg.RAX, i*g.size), tmp(i))
			for v := range s.nv {
				g.fma(bvec(u, v), tmp(i), s.acc(g, i, v))
			}
		}
	}
	g.Comment("Two steps per iteration: both steps' B rows first.")
	g.MOVQ(reg.RCX, reg.R14)
	g.SHRQ(imm(1), reg.R14)
	g.JZ(lbl("tail"))
	g.Label("loop2")
	loadB(0)
	loadB(1)
	fmas(0)
	g.ADDQ(reg.R10, reg.RAX)
	fmas(1)
	g.ADDQ(reg.R10, reg.RAX)
	g.ADDQ(imm(16), reg.RSI)
	g.DECQ(reg.R14)
	g.JNZ(lbl("loop2"))
	g.Label("tail")
	g.ANDQ(imm(1), reg.RCX)
	g.JZ(lbl("done"))
	loadB(0)
	fmas(0)
	storeRowsTile(g, s, "done")
}

// loadStridedRowsArgs writes the prologue of the kernels with a strided A
// and a Rows B read in place: C (RDI) and its byte stride (RDX), C
// prefetched, the accumulators zeroed, then k (RCX), a (RAX), lda in bytes
// (R10), offs (RSI), with segs the offsets' segment stride ldo in bytes
// (R15), data (R11), the zero buffer (R12) and limit (R13).
func loadStridedRowsArgs(g *gen, s kernelShape, segs bool) {
	g.Load(g.Param("c"), reg.RDI)
	g.Load(g.Param("ldc"), reg.RDX)
	g.shlSize(reg.RDX)
	s.prefetchC(g)
	s.zeroAcc(g)
	g.Load(g.Param("k"), reg.RCX)
	g.Load(g.Param("a"), reg.RAX)
	g.Load(g.Param("lda"), reg.R10)
	g.shlSize(reg.R10)
	g.Load(g.Param("offs"), reg.RSI)
	if segs {
		g.Load(g.Param("ldo"), reg.R15)
		g.SHLQ(imm(3), reg.R15)
	}
	g.Load(g.Param("data"), reg.R11)
	g.Load(g.Param("zero"), reg.R12)
	g.Load(g.Param("limit"), reg.R13)
}

// storeRowsTile writes the epilogue of the kernels that read a Rows
// operand: the label (none for ""), C's pointer and stride loaded from
// the frame, the tile stored, and bad = false returned.
func storeRowsTile(g *gen, s kernelShape, label string) {
	if label != "" {
		g.Label(label)
	}
	g.Load(g.Param("c"), reg.RDI)
	g.Load(g.Param("ldc"), reg.RDX)
	g.shlSize(reg.RDX)
	bad := g.arg("bad")
	s.store(g, func() { g.MOVB(imm(0), bad) })
	g.badExit(bad)
}
