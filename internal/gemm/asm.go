package gemm

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// Wrappers around the assembly routines (avx2_amd64.s, avx512_amd64.s;
// on other architectures and under the noasm tag their Go twins in
// twins.go). They check every bound the routines rely on.

// The packed micro-kernels (kernelFunc) of the AVX2 (6×16 float32, 6×8
// float64) and AVX-512 (6×32, 6×16) tiers.

// zmmNarrow reports whether the AVX2 tile shapes run on ZMM registers
// (the kernels named with a Z, avx512_amd64.s): from the AVX-512 tier up,
// for the products problemTier hands to AVX2's tiles. They give AVX2's
// kernels' bits.
func zmmNarrow() bool { return tier >= cpu.AVX512 }

func kernelAVX2F32(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	_, _, _ = a[kc*mr-1], b[kc*16-1], c[(mr-1)*ldc+15]
	if zmmNarrow() {
		sgemmKernel6x16Z(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
		return
	}
	sgemmKernel6x16(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

func kernelAVX2F64(kc int, a, b, c []float64, ldc int, alpha, beta float64) {
	_, _, _ = a[kc*mr-1], b[kc*8-1], c[(mr-1)*ldc+7]
	if zmmNarrow() {
		dgemmKernel6x8Z(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
		return
	}
	dgemmKernel6x8(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

func kernelAVX512F32(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	_, _, _ = a[kc*mr-1], b[kc*32-1], c[(mr-1)*ldc+31]
	sgemmKernel6x32(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

func kernelAVX512F64(kc int, a, b, c []float64, ldc int, alpha, beta float64) {
	_, _, _ = a[kc*mr-1], b[kc*16-1], c[(mr-1)*ldc+15]
	dgemmKernel6x16(kc, &a[0], &b[0], &c[0], ldc, alpha, beta)
}

// checkStrided checks the bounds the strided kernels rely on.
func checkStrided(rows, cols, kc, na, lda, nb, nr, nc, ldc int) {
	if kc < 1 || rows < 1 || rows > mr || cols < 1 || cols > nr || lda < rows ||
		na < (kc-1)*lda+rows || nb < kc*nr || nc < (rows-1)*ldc+cols {
		panic("gemm: bad strided tile")
	}
}

// The strided-A kernels (stridedKernelFunc). AVX2's take 2, 4 or 6 rows
// and all columns; AVX-512's any rows and columns (masked).

func stridedAVX2F32(rows, cols, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32) {
	checkStrided(rows, cols, kc, len(a), lda, len(b), 16, len(c), ldc)
	if cols != 16 {
		panic("gemm: bad strided tile")
	}
	z := zmmNarrow()
	switch {
	case rows == 2 && z:
		sgemmKernelS2x16Z(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 2:
		sgemmKernelS2x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 4 && z:
		sgemmKernelS4x16Z(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 4:
		sgemmKernelS4x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 6 && z:
		sgemmKernelS6x16Z(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 6:
		sgemmKernelS6x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	default:
		panic("gemm: bad strided tile")
	}
}

func stridedAVX2F64(rows, cols, kc int, a []float64, lda int, b, c []float64, ldc int, alpha, beta float64) {
	checkStrided(rows, cols, kc, len(a), lda, len(b), 8, len(c), ldc)
	if cols != 8 {
		panic("gemm: bad strided tile")
	}
	z := zmmNarrow()
	switch {
	case rows == 2 && z:
		dgemmKernelS2x8Z(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 2:
		dgemmKernelS2x8(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 4 && z:
		dgemmKernelS4x8Z(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 4:
		dgemmKernelS4x8(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 6 && z:
		dgemmKernelS6x8Z(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	case rows == 6:
		dgemmKernelS6x8(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta)
	default:
		panic("gemm: bad strided tile")
	}
}

// colMask is the mask of the first cols columns.
func colMask(cols int) uint64 { return 1<<uint(cols) - 1 }

func stridedAVX512F32(rows, cols, kc int, a []float32, lda int, b, c []float32, ldc int, alpha, beta float32) {
	checkStrided(rows, cols, kc, len(a), lda, len(b), 32, len(c), ldc)
	m := colMask(cols)
	switch rows {
	case 1:
		sgemmKernelS1x32(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 2:
		sgemmKernelS2x32(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 3:
		sgemmKernelS3x32(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 4:
		sgemmKernelS4x32(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 5:
		sgemmKernelS5x32(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	default:
		sgemmKernelS6x32(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	}
}

func stridedAVX512F64(rows, cols, kc int, a []float64, lda int, b, c []float64, ldc int, alpha, beta float64) {
	checkStrided(rows, cols, kc, len(a), lda, len(b), 16, len(c), ldc)
	m := colMask(cols)
	switch rows {
	case 1:
		dgemmKernelS1x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 2:
		dgemmKernelS2x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 3:
		dgemmKernelS3x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 4:
		dgemmKernelS4x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	case 5:
		dgemmKernelS5x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	default:
		dgemmKernelS6x16(kc, &a[0], lda, &b[0], &c[0], ldc, alpha, beta, m)
	}
}

// zeroLen is the length of the zero buffers the assembly reads for zero
// segments: at least the longest segment of one k block (blk.kc) and the
// widest B row (128 bytes).
const zeroLen = 1024

var (
	zero32 [zeroLen]float32
	zero64 [zeroLen]float64
)

// checkRowsCall checks the bounds the Rows kernels of an mr-row tile rely
// on; the kernel itself checks every offset against len(data)-seg, the
// block lying within a segment of length seg.
func checkRowsCall(rk rowsCall, offs []int, ld, seg, nb, nr, nc, ldc int) {
	checkRowsTile(mr, rk, offs, ld, seg, nb, nr, nc, ldc)
}

// checkRowsTile is checkRowsCall for a tile of rows rows.
func checkRowsTile(rows int, rk rowsCall, offs []int, ld, seg, nb, nr, nc, ldc int) {
	_ = offs[(rk.nseg-1)*ld+rows-1]
	if rk.seglen > zeroLen || rk.nseg < 1 || rk.seglen < 1 || rk.start < 0 || rk.start+rk.seglen > seg ||
		nb < rk.nseg*rk.seglen*nr || nc < (rows-1)*ldc+nr || ld < rows {
		panic("gemm: bad rows block")
	}
}

// The in-place Rows A kernels (rowsKernelFunc).

func rowsAVX2F32(rk rowsCall, offs []int, ld, seg int, data, b, c []float32, ldc int, alpha, beta float32) {
	checkRowsCall(rk, offs, ld, seg, len(b), 16, len(c), ldc)
	k := sgemmKernelRows6x16
	if zmmNarrow() {
		k = sgemmKernelRows6x16Z
	}
	if k(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero32[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

func rowsAVX2F64(rk rowsCall, offs []int, ld, seg int, data, b, c []float64, ldc int, alpha, beta float64) {
	checkRowsCall(rk, offs, ld, seg, len(b), 8, len(c), ldc)
	k := dgemmKernelRows6x8
	if zmmNarrow() {
		k = dgemmKernelRows6x8Z
	}
	if k(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero64[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

func rowsAVX512F32(rk rowsCall, offs []int, ld, seg int, data, b, c []float32, ldc int, alpha, beta float32) {
	checkRowsCall(rk, offs, ld, seg, len(b), 32, len(c), ldc)
	if sgemmKernelRows6x32(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero32[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

func rowsAVX512F64(rk rowsCall, offs []int, ld, seg int, data, b, c []float64, ldc int, alpha, beta float64) {
	checkRowsCall(rk, offs, ld, seg, len(b), 16, len(c), ldc)
	if dgemmKernelRows6x16(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero64[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

// The in-place Rows A kernels of two AVX2 tiles stacked, on ZMM registers
// (rowsKernelFunc for a 2·mr×nr tile): the AVX-512 tier's products no
// wider than an AVX2 tile.

func rowsTallF32(rk rowsCall, offs []int, ld, seg int, data, b, c []float32, ldc int, alpha, beta float32) {
	checkRowsTile(2*mr, rk, offs, ld, seg, len(b), 16, len(c), ldc)
	if sgemmKernelRows12x16Z(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero32[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

func rowsTallF64(rk rowsCall, offs []int, ld, seg int, data, b, c []float64, ldc int, alpha, beta float64) {
	checkRowsTile(2*mr, rk, offs, ld, seg, len(b), 8, len(c), ldc)
	if dgemmKernelRows12x8Z(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero64[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

// The AVX-512 float32 Rows A kernels in pair order (kernelRowsPair in
// asmgen): B packed by pairPanels, segments of even length. rowsPairF32
// runs one mr-row tile, rowsPairTallF32 two stacked; both give an element
// of C the same bits.

func rowsPairF32(rk rowsCall, offs []int, ld, seg int, data, b, c []float32, ldc int, alpha, beta float32) {
	checkRowsTile(mr, rk, offs, ld, seg, len(b), 16, len(c), ldc)
	checkPairs(rk)
	if sgemmKernelRows6x16P(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero32[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

func rowsPairTallF32(rk rowsCall, offs []int, ld, seg int, data, b, c []float32, ldc int, alpha, beta float32) {
	checkRowsTile(2*mr, rk, offs, ld, seg, len(b), 16, len(c), ldc)
	checkPairs(rk)
	if sgemmKernelRows12x16P(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero32[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

// checkPairs panics unless rk's segments split into pairs of k.
func checkPairs(rk rowsCall) {
	if rk.seglen%2 != 0 || rk.start%2 != 0 {
		panic("gemm: pair-order rows block of odd length")
	}
}

// The AVX-512 kernels reading a stored Aᵀ and a Rows B in place
// (srowsKernelFunc).

func checkSRows(kc, na, lda, nOffs, ld, nseg, seg, size, nc, ldc int) {
	rows := srowsRows(seg * size)
	if rows == 0 || kc < 1 || nseg < 1 || ld < kc || lda < rows || na < (kc-1)*lda+rows || nOffs < (nseg-1)*ld+kc || seg > zeroLen || nc < (rows-1)*ldc+nseg*seg {
		panic("gemm: bad in-place tile")
	}
}

// srowsF32 runs the tile's segments up to three at a time (one-vector
// segments) or two vectors of one segment at a time (segments of a
// multiple of two vectors).
func srowsF32(kc int, a []float32, lda int, offs []int, ld, nseg, seg int, data, c []float32, ldc int, alpha, beta float32) {
	checkSRows(kc, len(a), lda, len(offs), ld, nseg, seg, 4, len(c), ldc)
	limit := len(data) - seg
	for s := 0; s < nseg; {
		o, cs := &offs[s*ld], &c[s*seg]
		var bad bool
		n := 1
		switch {
		case seg != 16:
			// Two vectors of the segment at a time: the same data
			// shifted, the same offsets and limit.
			for h := 0; h < seg && !bad; h += 32 {
				bad = sgemmKernelSR8x32(kc, &a[0], lda, o, unsafe.SliceData(data[h:]), &zero32[0], &c[s*seg+h], ldc, alpha, beta, limit)
			}
		case nseg-s >= 3:
			n = 3
			bad = sgemmKernelSR8x16x3(kc, &a[0], lda, o, ld, unsafe.SliceData(data), &zero32[0], cs, ldc, alpha, beta, limit)
		case nseg-s == 2:
			n = 2
			bad = sgemmKernelSR8x16x2(kc, &a[0], lda, o, ld, unsafe.SliceData(data), &zero32[0], cs, ldc, alpha, beta, limit)
		default:
			bad = sgemmKernelSR8x16x1(kc, &a[0], lda, o, ld, unsafe.SliceData(data), &zero32[0], cs, ldc, alpha, beta, limit)
		}
		if bad {
			panic(errOffset)
		}
		s += n
	}
}

// srowsF64 is srowsF32 for float64.
func srowsF64(kc int, a []float64, lda int, offs []int, ld, nseg, seg int, data, c []float64, ldc int, alpha, beta float64) {
	checkSRows(kc, len(a), lda, len(offs), ld, nseg, seg, 8, len(c), ldc)
	limit := len(data) - seg
	for s := 0; s < nseg; {
		o, cs := &offs[s*ld], &c[s*seg]
		var bad bool
		n := 1
		switch {
		case seg != 8:
			// Two vectors of the segment at a time: the same data
			// shifted, the same offsets and limit.
			for h := 0; h < seg && !bad; h += 16 {
				bad = dgemmKernelSR8x16(kc, &a[0], lda, o, unsafe.SliceData(data[h:]), &zero64[0], &c[s*seg+h], ldc, alpha, beta, limit)
			}
		case nseg-s >= 3:
			n = 3
			bad = dgemmKernelSR8x8x3(kc, &a[0], lda, o, ld, unsafe.SliceData(data), &zero64[0], cs, ldc, alpha, beta, limit)
		case nseg-s == 2:
			n = 2
			bad = dgemmKernelSR8x8x2(kc, &a[0], lda, o, ld, unsafe.SliceData(data), &zero64[0], cs, ldc, alpha, beta, limit)
		default:
			bad = dgemmKernelSR8x8x1(kc, &a[0], lda, o, ld, unsafe.SliceData(data), &zero64[0], cs, ldc, alpha, beta, limit)
		}
		if bad {
			panic(errOffset)
		}
		s += n
	}
}

// packRows6Asm packs the first columns of six rows of A, starting at
// a[base] with row stride lda, into d (d[p*6+i] = a[base+i*lda+p]) with the
// assembly routines, and returns how many of the kc columns it packed.
// The caller has checked that a holds the six rows of kc columns and d
// holds 6*kc elements.
func packRows6Asm[T Float](d, a []T, base, lda, kc int) int {
	var z T
	switch any(z).(type) {
	case float32:
		n := kc / 8
		if n > 0 {
			_, _ = d[6*8*n-1], a[base+5*lda+8*n-1]
			packA6x8F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(&a[base])), lda, n)
		}
		return 8 * n
	default:
		n := kc / 4
		if n > 0 {
			_, _ = d[6*4*n-1], a[base+5*lda+4*n-1]
			packA6x4F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(&a[base])), lda, n)
		}
		return 4 * n
	}
}

// packColsAsm packs the panels of rows [0, m) of op(A) = Aᵀ (A stored
// k×m): d[q*6*kc+p*6+i] = a[base+p*lda+q*6+i] for p < kc, i < 6, zeros
// for rows past m, with the assembly routines. It returns how many rows
// it packed (whole panels; for float32 all of them). The caller has
// checked that a and d are long enough.
func packColsAsm[T Float](d, a []T, base, lda, kc, m int) int {
	np := m / mr
	var z T
	switch any(z).(type) {
	case float32:
		var mask *[8]int32
		var mk [8]int32
		if rem := m - np*mr; rem > 0 {
			for i := range rem {
				mk[i] = -1
			}
			mask = &mk
		}
		if np == 0 && mask == nil || kc == 0 {
			return m
		}
		_, _ = d[ceilDiv(m, mr)*mr*kc-1], a[base+(kc-1)*lda+m-1]
		packAT6NF32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(&a[base])), lda, kc, np, mask)
		return m
	default:
		if np == 0 || kc == 0 {
			return 0
		}
		_, _ = d[np*mr*kc-1], a[base+(kc-1)*lda+np*mr-1]
		packAT6NF64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(&a[base])), lda, kc, np)
		return np * mr
	}
}

// packBPanelAsm packs a full B micro-panel from a non-transposed B:
// d[p*nr:(p+1)*nr] = b[base+p*ldb : base+p*ldb+nr] for p < kc, nr*size
// being 64 bytes (AVX2) or 128 (AVX-512). The caller has checked the
// bounds.
func packBPanelAsm[T Float](d, b []T, base, ldb, kc, nr int) {
	var z T
	size := int(unsafe.Sizeof(z))
	_, _ = d[kc*nr-1], b[base+(kc-1)*ldb+nr-1]
	dst, src := (*byte)(unsafe.Pointer(&d[0])), (*byte)(unsafe.Pointer(&b[base]))
	switch nr * size {
	case 64:
		copyRows64(dst, src, ldb*size, kc)
	case 128:
		copyRows128(dst, src, ldb*size, kc)
	default:
		panic("gemm: bad B panel width")
	}
}

// gatherPanel packs a B micro-panel of 64- or 128-byte rows:
// d[p*nr:(p+1)*nr] = data[offs[p]+delta:][:nr], or zeros where offs[p] <
// 0, for p < kc, with 0 <= delta and delta+nr <= seg; it panics on an
// offset past len(data)-seg.
func gatherPanel[T Float](d, data []T, offs []int, delta, seg, kc, nr int) {
	var z T
	size := int(unsafe.Sizeof(z))
	_, _ = d[kc*nr-1], offs[kc-1]
	if delta < 0 || delta+nr > seg || nr*size > 128 {
		panic("gemm: bad gather panel")
	}
	a := unsafe.SliceData(data)
	limit := len(data) - seg
	var bad bool
	switch nr * size {
	case 64:
		if size == 4 {
			bad = gatherRows64F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(a)), &zero32[0], &offs[0], kc, delta, limit)
		} else {
			bad = gatherRows64F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(a)), &zero64[0], &offs[0], kc, delta, limit)
		}
	case 128:
		if size == 4 {
			bad = gatherRows128F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(a)), &zero32[0], &offs[0], kc, delta, limit)
		} else {
			bad = gatherRows128F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(a)), &zero64[0], &offs[0], kc, delta, limit)
		}
	default:
		panic("gemm: bad gather panel")
	}
	if bad {
		panic(errOffset)
	}
}

// gatherSegsPanel packs a B micro-panel of nr columns that are nseg =
// nr/seg whole segments, seg*size being 32 bytes (any assembly tier) or
// 64 (AVX-512): d[p*nr+c*seg:][:seg] = data[offs[c*ld+p]:][:seg], or
// zeros where that offset is negative, for p < kc and c < nseg. It
// reports whether it packed the panel (false: no routine for this
// segment size in the current tier), and panics on an offset past
// len(data)-seg.
func gatherSegsPanel[T Float](d, data []T, offs []int, ld, seg, kc, nr int) bool {
	var z T
	size := int(unsafe.Sizeof(z))
	nseg := nr / seg
	if nseg*seg != nr || nseg < 1 || !(seg*size == 32 || seg*size == 64 && tier >= cpu.AVX512) {
		return false
	}
	_, _ = d[kc*nr-1], offs[(nseg-1)*ld+kc-1]
	if ld < kc {
		panic("gemm: bad gather panel")
	}
	a := unsafe.SliceData(data)
	limit := len(data) - seg
	var bad bool
	switch {
	case seg*size == 32 && size == 4:
		bad = gatherSegs32F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(a)), &zero32[0], &offs[0], ld, kc, nseg, limit)
	case seg*size == 32:
		bad = gatherSegs32F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(a)), &zero64[0], &offs[0], ld, kc, nseg, limit)
	case size == 4:
		bad = gatherSegs64F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(a)), &zero32[0], &offs[0], ld, kc, nseg, limit)
	default:
		bad = gatherSegs64F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(a)), &zero64[0], &offs[0], ld, kc, nseg, limit)
	}
	if bad {
		panic(errOffset)
	}
	return true
}
