package gemm

import (
	"fmt"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// Rows is a matrix whose rows are gathered from a backing slice, the way
// an im2col matrix is gathered from an image, without being materialised.
// Its columns are cut into segments of Seg consecutive columns; segment s
// of row i is Data[off : off+Seg], where off is the offset Map gives for
// (First+i, s), or all zeros when that offset is negative. A convolution's
// im2col row of one output position has one segment per filter tap: the
// input channels of the pixel under that tap, or zeros in the padding.
type Rows[T Float] struct {
	// Data holds the elements every segment is read from.
	Data []T
	// Seg is the segment length (at least 1); the number of columns is a
	// multiple of it.
	Seg int
	// First is the row of Map that is the matrix's row 0, so that one Map
	// serves several row ranges of a larger matrix.
	First int
	// Map gives the segment offsets.
	Map Offsetter
}

// Offsetter gives the segment offsets of a Rows matrix. A Rows operand
// holds it as an interface, so a caller that keeps its Offsetter between
// calls (a pointer to a reused struct) lets GemmRowsA and GemmRowsB run
// without allocating.
type Offsetter interface {
	// Offsets writes the segment offsets of rows [i0, i0+n) for every
	// segment s into dst[s*ld+r], r < n (ld >= n): an offset into Data
	// with off+Seg <= len(Data), or a negative value for a zero segment.
	// It is called from the goroutines of the threads the call was given,
	// concurrently for different row ranges.
	Offsets(i0, n int, dst []int, ld int)
}

// OffsetsFunc adapts a function to Offsetter.
type OffsetsFunc func(i0, n int, dst []int, ld int)

// Offsets calls f.
func (f OffsetsFunc) Offsets(i0, n int, dst []int, ld int) { f(i0, n, dst, ld) }

// GemmRowsA computes C = A·op(B) + beta*C for an m×k matrix A given as
// Rows (k a multiple of a.Seg), op(B) k×n (B stored k×n, or n×k when
// transB) and C m×n, with Gemm's conventions for strides, beta and
// threads. The inner dimension is blocked along segment boundaries, and
// the result is bit-identical for any thread count. In the assembly
// tiers (AVX2, AVX-512) A's rows are read in place by the micro-kernel
// (no packed copy of A).
func GemmRowsA[T Float](m, n, k int, a Rows[T], transB bool, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	checkRows("A", m, k, a)
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	checkMatrix("B", br, bc, len(b), ldb)
	checkMatrix("C", m, n, len(c), ldc)
	pr := problem[T]{transB: transB, m: m, n: n, k: k, alpha: 1, beta: beta, b: b, ldb: ldb, c: c, ldc: ldc, ra: a}
	gemmRows(&pr, threads)
}

// GemmRowsB computes C = op(A)·B + beta*C for a k×n matrix B given as
// Rows (n a multiple of b.Seg), op(A) m×k (A stored m×k, or k×m when
// transA) and C m×n, with Gemm's conventions. B's rows are gathered
// straight into the packed panels.
func GemmRowsB[T Float](transA bool, m, n, k int, a []T, lda int, b Rows[T], beta T, c []T, ldc int, threads int) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	checkMatrix("A", ar, ac, len(a), lda)
	checkRows("B", k, n, b)
	checkMatrix("C", m, n, len(c), ldc)
	pr := problem[T]{transA: transA, m: m, n: n, k: k, alpha: 1, beta: beta, a: a, lda: lda, c: c, ldc: ldc, rb: b}
	gemmRows(&pr, threads)
}

func checkRows[T Float](name string, rows, cols int, r Rows[T]) {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("gemm: negative dimension of %s: %d×%d", name, rows, cols))
	}
	if r.Seg < 1 || cols%r.Seg != 0 {
		panic(fmt.Sprintf("gemm: %s has %d columns, not a multiple of its segment length %d", name, cols, r.Seg))
	}
	if r.Map == nil {
		panic(fmt.Sprintf("gemm: %s has no Offsets map", name))
	}
}

// srowsKernelFunc computes a tile of C of srowsRows(seg·size) rows by
// nseg segments of seg columns with A at a stride (row i of step p at
// a[p*lda+i]) and segment v's row p of B the seg elements at
// data[offs[v*ld+p]] (zeros for a negative offset), for p < kc, as
// stridedKernelFunc does from a packed B.
type srowsKernelFunc[T Float] func(kc int, a []T, lda int, offs []int, ld, nseg, seg int, data, c []T, ldc int, alpha, beta T)

// inPlaceRows lets the assembly kernel read a Rows A in place,
// inPlaceTransA lets the strided kernels read a stored Aᵀ in place (next
// to a Rows B, or in Gemm when B's rows are at most inPlaceRowBytes), and
// inPlaceBoth lets a kernel read that Rows B in place too
// (bothInPlaceKernel); tests turn them off to compare with packing.
var (
	inPlaceRows   = true
	inPlaceTransA = true
	inPlaceBoth   = true
)

// inPlaceRowBytes is the widest op(B) row (n elements, in bytes) for which
// Gemm reads a stored Aᵀ (readsATInPlace) or a stored A (storedRows) in
// place rather than packing it. Packing Aᵀ is a transposing pass over all
// of A (from memory when A is large, as the dy of a filter gradient is)
// that pays off only when the packed block serves many B micro-panels.
// Measured on Zen 5, 1 thread, A cold (m 256, k 1568): in place is 5–15%
// faster up to n 384 (float32, both tiers) and 192 (float64), even at 512
// and 5–30% slower beyond.
const inPlaceRowBytes = 1536

// narrowB reports whether op(B) rows of n elements are at most
// inPlaceRowBytes.
func narrowB[T Float](n int) bool {
	var z T
	return n*int(unsafe.Sizeof(z)) <= inPlaceRowBytes
}

// readsATInPlace reports whether Gemm reads a stored Aᵀ's full tiles in
// place for op(B) rows of n elements: transA, a strided kernel (hasKernS)
// and narrowB.
func readsATInPlace[T Float](transA bool, n int, hasKernS bool) bool {
	return transA && hasKernS && inPlaceTransA && narrowB[T](n)
}

// gemmRows runs a problem with a Rows operand.
func gemmRows[T Float](pr *problem[T], threads int) {
	m, n, k := pr.m, pr.n, pr.k
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleC(m, n, pr.beta, pr.c, pr.ldc)
		return
	}
	ws := getWorkspace()
	defer putWorkspace(ws)
	gemmRowsWS(ws, pr, threads)
}

// strideRows is the Offsetter of a stored A read as Rows of one segment
// per row (storedRows): row i starts at i·lda.
type strideRows struct{ lda int }

// Offsets writes the rows' offsets (one segment each).
func (s *strideRows) Offsets(i0, n int, dst []int, _ int) {
	for r := range dst[:n] {
		dst[r] = (i0 + r) * s.lda
	}
}

// storedRows reports whether Gemm reads a stored, non-transposed A in
// place as Rows of one k-long segment per row (the Rows kernels: no
// packed copy of A) for op(B) rows of n elements: tier isa has those
// kernels, and the rows are at most inPlaceRowBytes, as for a stored Aᵀ
// (readsATInPlace). The k blocks are then Gemm's own (planRowsK cuts a
// segment longer than kc into Gemm's near-equal blocks) and the kernels
// perform the packed kernels' operations, so C gets the same bits either
// way. Measured on Zen 5, float32 (BenchmarkSgemmConv, packed → in
// place): W1's forward GEMM (n 32) 102 → 172 GFLOP/s at one thread, W2's
// (n 64) 152 → 185; square products (n ≥ 512), whose packed A block
// serves many B micro-panels, were 5–17% slower in place.
func storedRows[T Float](transA bool, n int, isa cpu.ISA) bool {
	return !transA && inPlaceRows && inPlaceStored && narrowB[T](n) && rowsKernel[T](isa) != nil
}

// inPlaceStored lets Gemm read a stored A in place (storedRows); tests
// turn it off to compare with packing.
var inPlaceStored = true

// gemmRowsWS is gemmRows with ws's buffers, k > 0 and C not empty.
func gemmRowsWS[T Float](ws *Workspace, pr *problem[T], threads int) {
	m, n, k := pr.m, pr.n, pr.k
	isa := problemTier[T](n)
	pr.blk, pr.kern = setup[T](isa)
	nkb := (k + pr.blk.kc - 1) / pr.blk.kc
	pr.kcb = (k + nkb - 1) / nkb
	if pr.ra.Map != nil {
		pr.planRowsK()
		if inPlaceRows {
			pr.kernRows = rowsKernel[T](isa)
			pr.kernRowsTall = rowsKernelTall[T](isa)
			if k6, k12 := rowsKernelPair[T](pr, isa); k6 != nil {
				pr.kernRows, pr.kernRowsTall, pr.pairB = k6, k12, true
			}
		}
	}
	if isa > cpu.Go {
		pr.kernS, pr.edgeAny = stridedKernel[T](isa)
		// A Rows B with a single row block (so run takes lazyB for every
		// cell) and a stored Aᵀ: the kernels read A's full tiles in place
		// instead of packing them.
		pr.inPlaceA = pr.rb.Map != nil && pr.transA && m <= pr.blk.mc && pr.kernS != nil && inPlaceTransA
	}
	st := stateOf[T](ws)
	if kern, rows := bothInPlaceKernel[T](pr, isa, threads); kern != nil {
		pr.bothInPlace(st.slots(1)[0], kern, rows)
		return
	}
	st.solve(pr, threads)
}

// bothInPlaceKernel returns the kernel that reads both a stored Aᵀ and a
// Rows B in place (srowsKernelFunc) and the rows of its tile, or nil when
// pr does not suit it: AVX-512, a Rows B whose segments are one or two
// vectors (16 or 32 float32, 8 or 16 float64: a convolution's filter
// gradient with that many input channels per group), m a multiple of the
// tile's rows (8), and one thread (the grid would give one cell;
// the filter gradient runs its chunks' GEMMs on one thread each).
func bothInPlaceKernel[T Float](pr *problem[T], isa cpu.ISA, threads int) (srowsKernelFunc[T], int) {
	var z T
	size := int(unsafe.Sizeof(z))
	if isa != cpu.AVX512 || pr.rb.Map == nil || !pr.transA || !inPlaceTransA || !inPlaceBoth {
		return nil, 0
	}
	rows := srowsRows(pr.rb.Seg * size)
	if rows == 0 || pr.m%rows != 0 {
		return nil, 0
	}
	if tm, tn := grid(pr.m, pr.n, pr.k, threads, pr.blk); tm*tn > 1 {
		return nil, 0
	}
	return srowsKernel[T](), rows
}

// srowsRows returns the rows of the in-place tile for B segments of
// segBytes bytes: 8 for one ZMM vector (tiles of up to three segments)
// and for a multiple of two (tiles of two vectors of a segment); 0 for
// none.
func srowsRows(segBytes int) int {
	if segBytes == 64 || segBytes > 0 && segBytes%128 == 0 {
		return 8
	}
	return 0
}

// bothInPlace computes C with kern, tile by tile (rows rows by all
// segments of columns), k block by k block in order: for every element the
// operations of the packed path (each k block's chain of fused
// multiply-adds, then alpha and the previous blocks' sum as beta), so the
// same bits.
func (pr *problem[T]) bothInPlace(buf *buffers[T], kern srowsKernelFunc[T], rows int) {
	seg := pr.rb.Seg
	nseg := pr.n / seg
	for pc := 0; pc < pr.k; {
		kc := pr.kblock(pc)
		offs, ld := rowsOffsets(buf, &pr.rb, pc, kc, nseg)
		beta := pr.betaAt(pc)
		for i0 := 0; i0 < pr.m; i0 += rows {
			a := pr.a[pc*pr.lda+i0:]
			kern(kc, a, pr.lda, offs, ld, nseg, seg, pr.rb.Data, pr.c[i0*pr.ldc:], pr.ldc, pr.alpha, beta)
		}
		pc += kc
	}
}

// planRowsK blocks the inner dimension of a Rows A along its segments:
// blocks of whole segments when a segment fits in a block (kcb a multiple
// of Seg, at most blk.kc), else each segment cut into near-equal pieces
// of at most blk.kc. The blocks depend only on k and Seg.
func (pr *problem[T]) planRowsK() {
	seg, kc := pr.ra.Seg, pr.blk.kc
	nseg := pr.k / seg
	if seg <= kc {
		per := kc / seg // segments per block at most
		nkb := ceilDiv(nseg, per)
		pr.kcb = seg * ceilDiv(nseg, nkb)
		pr.piece = 0
		return
	}
	pr.piece = ceilDiv(seg, ceilDiv(seg, kc))
}

// kblock returns the length of the inner-dimension block starting at pc.
func (pr *problem[T]) kblock(pc int) int {
	if pr.piece > 0 {
		seg := pr.ra.Seg
		return min(pr.piece, seg-pc%seg)
	}
	return min(pr.kcb, pr.k-pc)
}

// rowsKernelFunc computes an mr×nr tile from a Rows A read in place: the
// k block rk, whose segment t row i starts at data[offs[t*ld+i]+rk.start]
// (zeros for a negative offset), times the packed B panel b, as
// kernelFunc does for a packed A.
type rowsKernelFunc[T Float] func(rk rowsCall, offs []int, ld, seg int, data, b, c []T, ldc int, alpha, beta T)

// errOffset is the panic for a segment offset past the data.
const errOffset = "gemm: a Rows segment offset is past the end of Data"

// rowsOffsets fills buf.offs with the segment offsets of rows [i0, i0+n)
// of r, ld = n rounded up to mr (rows past n, up to ld, are zero rows),
// and returns them and ld. The offsets are checked where they are used.
func rowsOffsets[T Float](buf *buffers[T], r *Rows[T], i0, n, nseg int) ([]int, int) {
	ld := ceilDiv(n, mr) * mr
	if cap(buf.offs) < nseg*ld {
		buf.offs = make([]int, nseg*ld)
	}
	offs := buf.offs[:nseg*ld]
	r.Map.Offsets(r.First+i0, n, offs, ld)
	if n < ld {
		for s := range nseg {
			row := offs[s*ld : (s+1)*ld]
			for i := n; i < ld; i++ {
				row[i] = -1
			}
		}
	}
	return offs, ld
}

// packARows packs rows [0, mc) of a Rows A (offsets offs, row stride ld
// between segments, rows relative to the block) and columns [p0, p0+kc)
// into dst as mr-row micro-panels, like packA.
func packARows[T Float](dst []T, r *Rows[T], offs []int, ld, mc, p0, kc int) {
	seg := r.Seg
	limit := len(r.Data) - seg
	for ir := 0; ir < mc; ir += mr {
		d := dst[ir*kc : (ir+mr)*kc]
		for p := p0; p < p0+kc; {
			s, e := p/seg, p%seg
			run := min(seg-e, p0+kc-p)
			o := offs[s*ld+ir : s*ld+ir+mr]
			for i := range mr {
				q := d[(p-p0)*mr+i:]
				if o[i] > limit {
					panic(errOffset)
				}
				if o[i] < 0 {
					for t := range run {
						q[t*mr] = 0
					}
					continue
				}
				for t, v := range r.Data[o[i]+e : o[i]+e+run] {
					q[t*mr] = v
				}
			}
			p += run
		}
	}
}

// packBRows packs rows [p0, p0+kc) (offsets offs relative to p0, stride
// ld between segments) and columns [j0, j0+nc) of a Rows B into dst as
// nr-column micro-panels, like packB.
func packBRows[T Float](dst []T, r *Rows[T], offs []int, ld, kc, j0, nc, nr int) {
	seg := r.Seg
	limit := len(r.Data) - seg
	var z T
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		d := dst[jr*kc : (jr+nr)*kc]
		j := j0 + jr
		s := j / seg
		if cols == nr && (j+nr-1)/seg == s && nr*int(unsafe.Sizeof(z)) <= 128 && asm() {
			gatherPanel(d, r.Data, offs[s*ld:s*ld+kc], j-s*seg, seg, kc, nr)
			continue
		}
		// A panel of whole segments (a convolution's few input channels).
		if cols == nr && j == s*seg && asm() && gatherSegsPanel(d, r.Data, offs[s*ld:], ld, seg, kc, nr) {
			continue
		}
		if cols < nr {
			clear(d)
		}
		if seg == 1 {
			gatherOnes(d, nr, cols, r.Data, offs[j*ld:], ld, kc, limit)
			continue
		}
		for jj := 0; jj < cols; {
			s, e := (j+jj)/seg, (j+jj)%seg
			run := min(seg-e, cols-jj)
			o := offs[s*ld : s*ld+kc]
			if run <= shortRun {
				// A few elements per row (a convolution's one to a few
				// input channels): element by element, not a call each.
				gatherShort(d[jj:], nr, r.Data, o, e, run, limit)
				jj += run
				continue
			}
			for p, off := range o {
				q := d[p*nr+jj : p*nr+jj+run]
				if off > limit {
					panic(errOffset)
				}
				if off < 0 {
					clear(q)
					continue
				}
				copy(q, r.Data[off+e:off+e+run])
			}
			jj += run
		}
	}
}

// shortRun is the longest run of a segment that packBRows gathers element
// by element instead of with a copy per row.
const shortRun = 4

// gatherShort writes elements [e, e+run) of the segments at offs (zeros
// for a negative offset) into d[p*nr : p*nr+run] for every p, run <=
// shortRun: packBRows's gather of a short run.
func gatherShort[T Float](d []T, nr int, data []T, offs []int, e, run, limit int) {
	for p, off := range offs {
		q := d[p*nr : p*nr+run]
		if off > limit {
			panic(errOffset)
		}
		if off < 0 {
			for t := range q {
				q[t] = 0
			}
			continue
		}
		src := data[off+e : off+e+run]
		for t := range q {
			q[t] = src[t]
		}
	}
}

// gatherOnes gathers cols columns of a Rows B whose segments are single
// elements into the panel d (nr columns, kc rows): column c of row p is
// the element at offs[c*ld+p], zero for a negative offset. Row by row, so
// that the panel is written in order. Not inlined: in packBRows's body its
// loop ran out of registers.
//
//go:noinline
func gatherOnes[T Float](d []T, nr, cols int, data []T, offs []int, ld, kc, limit int) {
	if cols == 0 || kc == 0 {
		return
	}
	_ = offs[(cols-1)*ld+kc-1]
	for p := range kc {
		row := d[p*nr : p*nr+cols]
		for c := range row {
			off := offs[c*ld+p]
			var v T
			if uint(off) <= uint(limit) {
				v = data[off]
			} else if off >= 0 {
				panic(errOffset)
			}
			row[c] = v
		}
	}
}
