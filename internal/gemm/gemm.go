package gemm

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/parallel"
)

// Float is the set of element types Gemm supports.
type Float interface{ float32 | float64 }

// mr is the number of rows of a micro-tile, for both element types.
const mr = 6

// blocking holds the cache-blocking parameters of one element type.
type blocking struct {
	nr int // columns of a micro-tile (the micro-kernel's width)
	mc int // rows of a packed A block (multiple of mr); sized for L2
	kc int // inner-dimension block; an nr×kc B micro-panel stays in L1
	nc int // columns of a packed B block (multiple of nr); sized for L3
}

// wholeKBytes bounds the packed B of all k blocks (see problem.run).
var wholeKBytes = 4 << 20

// kernelFunc computes, for an mr×nr tile,
//
//	c[i*ldc+j] = alpha * Σ_p a[p*mr+i]*b[p*nr+j] + beta*c[i*ldc+j]
//
// summing p = 0..kc-1 in order. With beta == 0, c is not read.
type kernelFunc[T Float] func(kc int, a, b, c []T, ldc int, alpha, beta T)

// stridedKernelFunc computes rows [0, rows) and columns [0, cols) of an
// mr×nr tile like kernelFunc, with A element (i, p) at a[p*lda+i]: lda =
// mr is a packed panel, a larger lda an A stored k×m read in place. For
// every element of C it performs the full kernel's operations in the same
// order. Which rows and cols a tier's kernel takes: see stridedKernel.
type stridedKernelFunc[T Float] func(rows, cols, kc int, a []T, lda int, b, c []T, ldc int, alpha, beta T)

// Gemm computes C = alpha*op(A)*op(B) + beta*C, op(X) = X or X^T, with C
// m×n, op(A) m×k and op(B) k×n. All matrices are row-major; lda, ldb and
// ldc are the row strides of A, B and C as stored (A is stored m×k, or k×m
// when transA; B is stored k×n, or n×k when transB). As in BLAS, beta == 0
// overwrites C without reading it (NaNs in C are ignored), and alpha == 0
// or k == 0 reduce the call to C = beta*C without reading A or B.
//
// threads <= 1 runs on the caller's goroutine; more threads split C into
// row and column ranges, and the result is bit-identical for any thread
// count. Packing buffers come from an internal free list of Workspaces.
//
// Gemm panics if a dimension is negative, a stride is smaller than the row
// it spans, or a slice is too short for the matrix it holds: callers check
// user input before they get here.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	GemmWS(nil, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
}

// GemmWS is Gemm with packing buffers from ws, which the caller keeps
// between calls so that steady-state calls do not allocate. A nil ws
// borrows one from the internal free list. A Workspace must not be used by
// two calls at the same time.
func GemmWS[T Float](ws *Workspace, transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	checkArgs(transA, transB, m, n, k, len(a), lda, len(b), ldb, len(c), ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	if ws == nil {
		ws = getWorkspace()
		defer putWorkspace(ws)
	}
	isa := problemTier[T](n)
	if storedRows[T](transA, n, isa) {
		ws.rowsA.lda = lda
		pr := problem[T]{transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta,
			b: b, ldb: ldb, c: c, ldc: ldc, ra: Rows[T]{Data: a, Seg: k, Map: &ws.rowsA}}
		gemmRowsWS(ws, &pr, threads)
		return
	}
	blk, kern := setup[T](isa)
	pr := problem[T]{
		transA: transA, transB: transB,
		m: m, n: n, k: k,
		alpha: alpha, beta: beta,
		a: a, lda: lda, b: b, ldb: ldb, c: c, ldc: ldc,
		blk: blk, kern: kern,
	}
	pr.kernS, pr.edgeAny = stridedKernel[T](isa)
	pr.inPlaceA = readsATInPlace[T](transA, n, pr.kernS != nil)
	// Inner-dimension blocks of near-equal size; they depend on k only.
	nkb := (k + blk.kc - 1) / blk.kc
	pr.kcb = (k + nkb - 1) / nkb

	stateOf[T](ws).solve(&pr, threads)
}

// solve runs pr on up to threads goroutines with st's buffers.
func (st *wsState[T]) solve(pr *problem[T], threads int) {
	tm, tn := grid(pr.m, pr.n, pr.k, threads, pr.blk)
	cells := tm * tn
	bufs := st.slots(cells)
	if cells == 1 {
		pr.run(bufs[0], 0, pr.m, 0, pr.n)
		return
	}
	st.runParallel(pr, tm, tn, min(threads, cells))
}

// runParallel computes C on a tm×tn grid of row and column ranges with
// st.bufs[:threads]. Large row ranges are cut further (rowSplit), and the
// goroutines take the cells as they become free, each from its own
// contiguous share of the cells first (parallel.Each: a goroutine mostly
// gets the rows of C, and of a row-split A, that it handled in the
// previous call), so that a goroutine that starts late (or a core busy
// with another process) delays one small cell rather than a fixed share.
// Cells are aligned to the micro-tile, so every element of C gets the
// same arithmetic whoever computes it. The problem
// is copied into st and the goroutines run st.cell, built once per
// workspace, so that the call allocates nothing of its own.
func (st *wsState[T]) runParallel(pr *problem[T], tm, tn, threads int) {
	st.pr = *pr
	st.tm, st.tn = tm*rowSplit(pr.m, pr.n, pr.k, tm, tn, pr.blk), tn
	if st.cell == nil {
		st.cell = st.runCell
	}
	defer func() { st.pr = problem[T]{} }() // keep no reference to the caller's data
	if st.tm > 1 {
		st.shareB(threads)
	}
	parallel.Each(threads, st.tm*st.tn, st.cell)
}

// sharedBBytes bounds the shared packed B (shareB). A variable so that
// tests can turn the sharing off.
var sharedBBytes = 4 << 20

// shareB packs all of a stored op(B) (every k block, every column) once,
// into st.sharedB, on up to threads goroutines, one nr-column panel of one
// k block at a time, and points st.pr at it: the cells of runParallel's
// grid then read their B blocks from it instead of each packing the B
// blocks of its columns again (a grid of tm row ranges packed all of B tm
// times). The panels are those packB writes, so the bits are the same.
// It does nothing for a Rows B (gathered per cell) or a B larger than
// sharedBBytes. The k block of pc starts at sharedB[pc·ncp] (ncp = n
// rounded up to nr), and in it the panel of column j at j·kc.
func (st *wsState[T]) shareB(threads int) {
	pr := &st.pr
	var z T
	ncp := ceilDiv(pr.n, pr.blk.nr) * pr.blk.nr
	if pr.rb.Map != nil || ncp*pr.k*int(unsafe.Sizeof(z)) > sharedBBytes {
		return
	}
	st.pcs = st.pcs[:0]
	for pc := 0; pc < pr.k; pc += pr.kblock(pc) {
		st.pcs = append(st.pcs, pc)
	}
	if len(st.sharedB) < ncp*pr.k {
		st.sharedB = alignedSlice[T](ncp * pr.k)
	}
	pr.sharedB = st.sharedB[:ncp*pr.k]
	units := len(st.pcs) * (ncp / pr.blk.nr)
	if ncp*pr.k < sharedBSerial {
		// A small B: packing it takes less than waking the goroutines.
		for u := range units {
			st.packPanel(0, u)
		}
		return
	}
	if st.packOne == nil {
		st.packOne = st.packPanel
	}
	parallel.Each(threads, units, st.packOne)
}

// sharedBSerial is the size (elements) below which shareB packs on the
// caller's goroutine alone.
const sharedBSerial = 1 << 14

// packPanel packs unit u of shareB: panel u mod panels of k block
// u / panels.
func (st *wsState[T]) packPanel(_, u int) {
	pr := &st.pr
	nr := pr.blk.nr
	panels := ceilDiv(pr.n, nr)
	pc := st.pcs[u/panels]
	kc := pr.kblock(pc)
	j := u % panels * nr
	pr.packB(nil, pr.sharedB[pc*panels*nr+j*kc:][:nr*kc], pc, kc, j, min(nr, pr.n-j))
}

// runCell computes cell cell of runParallel's grid with buffers w.
func (st *wsState[T]) runCell(w, cell int) {
	pr := &st.pr
	m, n, nr := pr.m, pr.n, pr.blk.nr
	mt, nt := ceilDiv(m, mr), ceilDiv(n, nr)
	tm, tn := st.tm, st.tn
	ci, cj := cell/tn, cell%tn
	i0, i1 := mt*ci/tm*mr, min(mt*(ci+1)/tm*mr, m)
	j0, j1 := nt*cj/tn*nr, min(nt*(cj+1)/tn*nr, n)
	if i0 < i1 && j0 < j1 {
		pr.run(st.bufs[w], i0, i1, j0, j1)
	}
}

// rowSplit returns how many pieces (at most 4) each of the grid's row
// ranges is cut into for runParallel: only ranges of several row blocks
// whose pieces keep enough work, since each piece repacks its B block
// (unless runParallel packed all of B once for them, shareB).
func rowSplit(m, n, k, tm, tn int, blk blocking) int {
	const minPieceFlops = 1 << 24 // ~0.2 ms on one core
	rows := ceilDiv(m, tm)
	flops := 2 * float64(rows) * float64(ceilDiv(n, tn)) * float64(k)
	q := min(4, rows/(4*blk.mc), int(flops/minPieceFlops))
	return max(1, q)
}

// checkArgs panics on inconsistent dimensions, strides or lengths. The
// assembly kernels do not check bounds, so this is what keeps them safe.
func checkArgs(transA, transB bool, m, n, k, na, lda, nb, ldb, nc, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative dimension m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("A", ar, ac, na, lda)
	checkMatrix("B", br, bc, nb, ldb)
	checkMatrix("C", m, n, nc, ldc)
}

func checkMatrix(name string, rows, cols, n, ld int) {
	if ld < cols {
		panic(fmt.Sprintf("gemm: stride of %s is %d, less than its %d columns", name, ld, cols))
	}
	if rows > 0 && cols > 0 && n < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: %s (%d×%d, stride %d) needs %d elements, has %d", name, rows, cols, ld, (rows-1)*ld+cols, n))
	}
}

// scaleC sets C = beta*C, writing zeros (not reading C) when beta is 0.
func scaleC[T Float](m, n int, beta T, c []T, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// problem is one Gemm call with its blocking and kernel.
type problem[T Float] struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    T
	a, b, c        []T
	lda, ldb, ldc  int
	blk            blocking
	kcb            int // inner-dimension block size (last block may be shorter)
	kern           kernelFunc[T]

	// Gathered operands (GemmRowsA, GemmRowsB); at most one is set (a
	// non-nil Map).
	ra, rb Rows[T]
	// piece is the block length when ra's segments are longer than a
	// block (each segment is cut into pieces), else 0.
	piece int
	// kernRows is the micro-kernel reading ra in place, or nil when ra's
	// rows are packed for kern; kernRowsTall, if not nil, its variant for
	// two tiles stacked, which macro runs on pairs of full tiles.
	kernRows     rowsKernelFunc[T]
	kernRowsTall rowsKernelFunc[T]
	// pairB: the Rows kernels are in pair order (rowsKernelPair), so packB
	// reorders B's panels for them (pairPanels).
	pairB bool
	// kernS is the strided-A kernel, or nil: edge tiles of 2 or 4 rows
	// then run on it straight into C, and with inPlaceA it reads the full
	// tiles of an A stored k×m in place (packA packs only the partial
	// tile).
	kernS    stridedKernelFunc[T]
	inPlaceA bool
	// sharedB, when not nil, is all of op(B) packed once for every cell
	// of runParallel's grid (wsState.shareB).
	sharedB []T
	// edgeAny: kernS computes any edge tile straight into C.
	edgeAny bool
}

// run computes rows [i0, i1) and columns [j0, j1) of C. i0 and j0 are
// multiples of mr and nr, so the tile grid is the same as for the whole
// matrix.
//
// When there are several row blocks and op(B)'s whole column block for
// every k fits in wholeKBytes, all of it is packed first and the loops
// over row blocks and k blocks are swapped: each A row block is then read
// in one sweep and its C block is updated k/kc times while it is still
// cached. Every element of C still
// sees the same k blocks in the same order, so both orders give the same
// bits.
func (pr *problem[T]) run(buf *buffers[T], i0, i1, j0, j1 int) {
	blk := pr.blk
	nr := blk.nr
	var z T
	size := int(unsafe.Sizeof(z))
	// Row blocks of near-equal size, whole micro-panels each.
	nmb := ceilDiv(i1-i0, blk.mc)
	mcb := ceilDiv(ceilDiv(i1-i0, nmb), mr) * mr
	multiK := pr.kblock(0) < pr.k
	for jc := j0; jc < j1; jc += blk.nc {
		nc := min(blk.nc, j1-jc)
		ncp := ceilDiv(nc, nr) * nr
		if multiK && nmb > 1 && ncp*pr.k*size <= wholeKBytes {
			// B block for k block pc starts at bp[pc*ncp].
			var bp []T
			if pr.sharedB == nil {
				bp = buf.bBuf(ncp*pr.k, blk)
				for pc := 0; pc < pr.k; {
					kc := pr.kblock(pc)
					pr.packB(buf, bp[pc*ncp:(pc+kc)*ncp], pc, kc, jc, nc)
					pc += kc
				}
			}
			for ic := i0; ic < i1; ic += mcb {
				mc := min(mcb, i1-ic)
				pr.prepA(buf, ic, mc)
				for pc := 0; pc < pr.k; {
					kc := pr.kblock(pc)
					ap := pr.packA(buf, ic, mc, pc, kc)
					bk := pr.sharedBlock(pc, kc, jc, ncp)
					if bk == nil {
						bk = bp[pc*ncp : (pc+kc)*ncp]
					}
					pr.macro(buf, ap, bk, ic, mc, jc, nc, pc, kc, pr.betaAt(pc))
					pc += kc
				}
			}
			continue
		}
		for pc := 0; pc < pr.k; {
			kc := pr.kblock(pc)
			if pr.rb.Map != nil && nmb == 1 {
				// One row block: gather each B micro-panel of a Rows B
				// right before its kernels, into one buffer kept in L1.
				pr.lazyB(buf, i0, i1-i0, jc, nc, pc, kc)
				pc += kc
				continue
			}
			bp := pr.sharedBlock(pc, kc, jc, ncp)
			if bp == nil {
				bp = buf.bBuf(ncp*kc, blk)
				pr.packB(buf, bp, pc, kc, jc, nc)
			}
			for ic := i0; ic < i1; ic += mcb {
				mc := min(mcb, i1-ic)
				pr.prepA(buf, ic, mc)
				ap := pr.packA(buf, ic, mc, pc, kc)
				pr.macro(buf, ap, bp, ic, mc, jc, nc, pc, kc, pr.betaAt(pc))
			}
			pc += kc
		}
	}
}

// sharedBlock returns the packed B block of k block [pc, pc+kc) and the
// ncp columns from jc from pr.sharedB, or nil without one.
func (pr *problem[T]) sharedBlock(pc, kc, jc, ncp int) []T {
	if pr.sharedB == nil {
		return nil
	}
	all := ceilDiv(pr.n, pr.blk.nr) * pr.blk.nr
	return pr.sharedB[pc*all+jc*kc:][:ncp*kc]
}

// lazyB multiplies the row block [ic, ic+mc) of op(A) by a Rows B's k
// block [pc, pc+kc), gathering each nr-column micro-panel of B just
// before it is used.
func (pr *problem[T]) lazyB(buf *buffers[T], ic, mc, jc, nc, pc, kc int) {
	nr := pr.blk.nr
	bp := buf.bBuf(nr*kc, pr.blk)
	offs, ld := rowsOffsets(buf, &pr.rb, pc, kc, pr.n/pr.rb.Seg)
	ap := pr.packA(buf, ic, mc, pc, kc)
	for jr := 0; jr < nc; jr += nr {
		ncr := min(nr, nc-jr)
		packBRows(bp, &pr.rb, offs, ld, kc, jc+jr, ncr, nr)
		pr.macro(buf, ap, bp, ic, mc, jc+jr, ncr, pc, kc, pr.betaAt(pc))
	}
}

// packB packs rows [pc, pc+kc) and columns [jc, jc+nc) of op(B) into bp.
func (pr *problem[T]) packB(buf *buffers[T], bp []T, pc, kc, jc, nc int) {
	if pr.rb.Map == nil {
		packB(bp, pr.b, pr.ldb, pr.transB, pc, kc, jc, nc, pr.blk.nr)
		if pr.pairB {
			pairPanels(bp[:ceilDiv(nc, pr.blk.nr)*pr.blk.nr*kc], kc, pr.blk.nr)
		}
		return
	}
	offs, ld := rowsOffsets(buf, &pr.rb, pc, kc, pr.n/pr.rb.Seg)
	packBRows(bp, &pr.rb, offs, ld, kc, jc, nc, pr.blk.nr)
}

// prepA reads the segment offsets of rows [ic, ic+mc) of a Rows A into
// buf (a no-op for a stored A).
func (pr *problem[T]) prepA(buf *buffers[T], ic, mc int) {
	if pr.ra.Map != nil {
		buf.roffs, buf.rld = rowsOffsets(buf, &pr.ra, ic, mc, pr.k/pr.ra.Seg)
	}
}

// packA packs rows [ic, ic+mc) and columns [pc, pc+kc) of op(A), or
// returns nil when the kernel reads a Rows A in place. With inPlaceA it
// packs only the partial tile at the end, if any (into the buffer's first
// panel; nil if there is none): macro reads the full tiles from A.
func (pr *problem[T]) packA(buf *buffers[T], ic, mc, pc, kc int) []T {
	if pr.inPlaceA {
		full := mc / mr * mr
		if full == mc {
			return nil
		}
		ap := buf.aBuf(mr*kc, pr.blk)
		packA(ap, pr.a, pr.lda, true, ic+full, mc-full, pc, kc)
		return ap
	}
	ap := buf.aBuf(ceilDiv(mc, mr)*mr*kc, pr.blk)
	switch {
	case pr.ra.Map == nil:
		packA(ap, pr.a, pr.lda, pr.transA, ic, mc, pc, kc)
	case pr.kernRows == nil:
		packARows(ap, &pr.ra, buf.roffs, buf.rld, mc, pc, kc)
	default:
		return nil
	}
	return ap
}

// betaAt is the beta for the k block starting at pc: the caller's for the
// first block, 1 for the others, which accumulate.
func (pr *problem[T]) betaAt(pc int) T {
	if pc == 0 {
		return pr.beta
	}
	return 1
}

// macro multiplies a packed mc×kc block of A (columns from pc) by a
// packed kc×nc block of B into C[ic:ic+mc, jc:jc+nc], one micro-tile at a
// time; B's micro-panel stays in L1 while A's block streams from L2. With
// kernRows, A is read in place through the offsets in buf instead; with
// inPlaceA, A's full tiles are read in place from the stored Aᵀ and ap
// holds only the partial tile's panel.
func (pr *problem[T]) macro(buf *buffers[T], ap, bp []T, ic, mc, jc, nc, pc, kc int, beta T) {
	nr := pr.blk.nr
	c, ldc, alpha, kern := pr.c, pr.ldc, pr.alpha, pr.kern
	var rk rowsCall
	if pr.kernRows != nil {
		rk = pr.rowsBlock(pc, kc)
	}
	full := mc / mr * mr
	for jr := 0; jr < nc; jr += nr {
		nrr := min(nr, nc-jr)
		bpan := bp[jr*kc : (jr+nr)*kc]
		for ir := 0; ir < mc; ir += mr {
			mrr := min(mr, mc-ir)
			off := (ic+ir)*ldc + jc + jr
			if pr.kernRowsTall != nil && nrr == nr && ir+2*mr <= full {
				// Two full tiles at once (the same arithmetic per element).
				pr.kernRowsTall(rk, buf.roffs[rk.s0*buf.rld+ir:], buf.rld, pr.ra.Seg, pr.ra.Data, bpan, c[off:], ldc, alpha, beta)
				ir += mr
				continue
			}
			var apan []T
			switch {
			case pr.inPlaceA && ir < full:
				if nrr == nr {
					pr.kernS(mr, nr, kc, pr.a[pc*pr.lda+ic+ir:], pr.lda, bpan, c[off:], ldc, alpha, beta)
					continue
				}
				// A column-edge tile: its A panel read in place too.
				pr.edge(buf, mrr, nrr, pr.a[pc*pr.lda+ic+ir:], pr.lda, bpan, off, kc, beta)
				continue
			case pr.inPlaceA:
				apan = ap[:mr*kc]
			case ap != nil:
				apan = ap[ir*kc : (ir+mr)*kc]
			}
			if mrr == mr && nrr == nr {
				if apan == nil {
					pr.kernRows(rk, buf.roffs[rk.s0*buf.rld+ir:], buf.rld, pr.ra.Seg, pr.ra.Data, bpan, c[off:], ldc, alpha, beta)
				} else {
					kern(kc, apan, bpan, c[off:], ldc, alpha, beta)
				}
				continue
			}
			if apan != nil && pr.kernS != nil {
				pr.edge(buf, mrr, nrr, apan, mr, bpan, off, kc, beta)
				continue
			}
			// Edge tile: run the same kernel on a full tile in buf.tmp, so
			// edge elements get exactly the arithmetic of interior ones.
			tmp := buf.tmp[:mr*nr]
			if beta != 0 {
				for i := range mrr {
					copy(tmp[i*nr:i*nr+nrr], c[off+i*ldc:off+i*ldc+nrr])
				}
			}
			if apan == nil {
				pr.kernRows(rk, buf.roffs[rk.s0*buf.rld+ir:], buf.rld, pr.ra.Seg, pr.ra.Data, bpan, tmp, nr, alpha, beta)
			} else {
				kern(kc, apan, bpan, tmp, nr, alpha, beta)
			}
			for i := range mrr {
				copy(c[off+i*ldc:off+i*ldc+nrr], tmp[i*nr:i*nr+nrr])
			}
		}
	}
}

// edge computes an edge tile of mrr rows and nrr columns at C[off] with
// the strided kernel (A at a with stride lda): the tile's even number of
// rows straight into C when that is mrr and the tile is nr wide, else on
// a tile in buf.tmp whose first mrr rows and nrr columns are copied back.
// Either way each element of C gets the full kernel's arithmetic.
func (pr *problem[T]) edge(buf *buffers[T], mrr, nrr int, a []T, lda int, bpan []T, off, kc int, beta T) {
	nr, c, ldc := pr.blk.nr, pr.c, pr.ldc
	rows := min(mr, (mrr+1)&^1)
	if pr.edgeAny {
		rows = mrr
	}
	if rows == mrr && (nrr == nr || pr.edgeAny) {
		pr.kernS(rows, nrr, kc, a, lda, bpan, c[off:], ldc, pr.alpha, beta)
		return
	}
	tmp := buf.tmp[:mr*nr]
	if beta != 0 {
		for i := range mrr {
			copy(tmp[i*nr:i*nr+nrr], c[off+i*ldc:off+i*ldc+nrr])
		}
	}
	pr.kernS(rows, nr, kc, a, lda, bpan, tmp, nr, pr.alpha, beta)
	for i := range mrr {
		copy(c[off+i*ldc:off+i*ldc+nrr], tmp[i*nr:i*nr+nrr])
	}
}

// rowsCall describes one k block of a Rows A for kernRows: nseg segments
// from segment s0 on, each seglen long and read from start on.
type rowsCall struct{ s0, nseg, seglen, start int }

// rowsBlock maps the k block [pc, pc+kc) onto ra's segments.
func (pr *problem[T]) rowsBlock(pc, kc int) rowsCall {
	seg := pr.ra.Seg
	if pr.piece > 0 {
		return rowsCall{s0: pc / seg, nseg: 1, seglen: kc, start: pc % seg}
	}
	return rowsCall{s0: pc / seg, nseg: kc / seg, seglen: seg}
}

// grid picks how many row ranges (tm) and column ranges (tn) C is split
// into, tm*tn <= threads, minimising the per-thread cost estimate: the
// multiply-adds plus the packing each thread repeats.
func grid(m, n, k, threads int, blk blocking) (tm, tn int) {
	// Each range gets at least minCellFlops (~25 µs on one core), so that
	// starting and joining goroutines stays a small fraction of the work.
	const minCellFlops = 1 << 21
	if flops := 2 * float64(m) * float64(n) * float64(k); flops < float64(threads)*minCellFlops {
		threads = int(flops / minCellFlops)
	}
	if threads <= 1 {
		return 1, 1
	}
	const packWeight = 8 // cost of packing one element, in flops
	mt, nt := ceilDiv(m, mr), ceilDiv(n, blk.nr)
	best := -1.0
	for a := 1; a <= threads && a <= mt; a++ {
		for b := 1; a*b <= threads && b <= nt; b++ {
			rows := float64(ceilDiv(mt, a) * mr)
			cols := float64(ceilDiv(nt, b) * blk.nr)
			kk := float64(k)
			cost := 2*rows*cols*kk + packWeight*(rows*kk*float64(ceilDiv(int(cols), blk.nc))+cols*kk)
			if best < 0 || cost < best {
				best, tm, tn = cost, a, b
			}
		}
	}
	return tm, tn
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Workspace holds packing buffers reused across Gemm calls: one set per
// thread and element type. The zero value is ready to use. A Workspace
// must not be used by two calls at the same time.
type Workspace struct {
	f32   *wsState[float32]
	f64   *wsState[float64]
	rowsA strideRows // a stored A read in place (storedRows)
}

// NewWorkspace returns an empty Workspace; buffers grow on first use.
func NewWorkspace() *Workspace { return new(Workspace) }

// wsState is a Workspace's state for one element type: the per-thread
// buffers and, while a call runs on several goroutines, a copy of its
// problem, its grid and the function the goroutines run (built once, so
// that parallel calls allocate nothing of their own).
type wsState[T Float] struct {
	bufs   []*buffers[T]
	pr     problem[T]
	tm, tn int
	cell   func(w, cell int)
	// The shared packed B (shareB): the buffer, the k blocks' starts, and
	// the goroutines' function packing one of its panels, built once.
	sharedB []T
	pcs     []int
	packOne func(w, unit int)
}

// stateOf returns ws's state for T, creating it on first use.
func stateOf[T Float](ws *Workspace) *wsState[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		if ws.f32 == nil {
			ws.f32 = new(wsState[float32])
		}
		return any(ws.f32).(*wsState[T])
	}
	if ws.f64 == nil {
		ws.f64 = new(wsState[float64])
	}
	return any(ws.f64).(*wsState[T])
}

// buffers is one thread's packing scratch.
type buffers[T Float] struct {
	a, b []T // 64-byte aligned packed panels
	// offs holds the segment offsets of a Rows operand's current rows;
	// roffs and rld are a Rows A's (prepA).
	offs  []int
	roffs []int
	rld   int
	tmp   [mr * maxNR]T // edge tile
	_     [64]byte      // keep tmp of different threads on different cache lines
}

// slots returns cells per-thread buffers, creating missing ones.
func (st *wsState[T]) slots(cells int) []*buffers[T] {
	for len(st.bufs) < cells {
		st.bufs = append(st.bufs, new(buffers[T]))
	}
	return st.bufs[:cells]
}

// aBuf returns the packed-A buffer with room for n elements.
func (bf *buffers[T]) aBuf(n int, blk blocking) []T {
	bf.a = grow(bf.a, n, ceilDiv(blk.mc, mr)*mr*blk.kc)
	return bf.a[:n]
}

// bBuf returns the packed-B buffer with room for n elements.
func (bf *buffers[T]) bBuf(n int, blk blocking) []T {
	var z T
	bf.b = grow(bf.b, n, max(blk.kc*blk.nc, wholeKBytes/int(unsafe.Sizeof(z))))
	return bf.b[:n]
}

// grow returns s if it holds n elements, else a new aligned slice of at
// least n: twice the old length when that stays within limit (the largest
// size the blocking asks for), so buffers settle after a few calls.
func grow[T Float](s []T, n, limit int) []T {
	if len(s) >= n {
		return s
	}
	return alignedSlice[T](max(n, min(2*len(s), limit)))
}

// alignedSlice returns a slice of n elements starting on a 64-byte
// boundary, so each 64-byte row of a packed B micro-panel is one cache line.
func alignedSlice[T Float](n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	extra := 64 / size
	raw := make([]T, n+extra)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	skip := int((64-addr%64)%64) / size
	return raw[skip : skip+n : skip+n]
}

// The free list behind Gemm. Unlike a sync.Pool it is not emptied by the
// garbage collector, so steady-state calls never re-allocate (fresh memory
// is slow to touch); it keeps at most maxPooled workspaces.
const maxPooled = 8

var pool struct {
	sync.Mutex
	free []*Workspace
}

func getWorkspace() *Workspace {
	pool.Lock()
	defer pool.Unlock()
	if n := len(pool.free); n > 0 {
		ws := pool.free[n-1]
		pool.free = pool.free[:n-1]
		return ws
	}
	return new(Workspace)
}

func putWorkspace(ws *Workspace) {
	pool.Lock()
	defer pool.Unlock()
	if len(pool.free) < maxPooled {
		pool.free = append(pool.free, ws)
	}
}
