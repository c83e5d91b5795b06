//go:build !amd64 || noasm

package gemm

import (
	"math/bits"
	"unsafe"
)

// goTwins is true: the routines below stand in for the assembly.
const goTwins = true

// Go twins of the assembly routines (avx2_amd64.s, avx512_amd64.s), with
// the same names and signatures, for other architectures and the noasm
// tag: each equals its routine up to rounding (the assembly fuses each
// multiply and add; here Go rounds them separately unless the compiler
// fuses them). The package runs them only when tests select an assembly
// tier; cpu.Tier() is then the Go tier.

// twinStrided is the loop every micro-kernel computes: for i < rows and
// the columns j < nr set in mask,
//
//	c[i*ldc+j] = alpha*Σ_p a[p*lda+i]*b[p*nr+j] + beta*c[i*ldc+j]
//
// summing p = 0..k-1 in order, without reading c when beta == ±0.
func twinStrided[T Float](rows, nr, k int, a *T, lda int, b, c *T, ldc int, alpha, beta T, mask uint64) {
	cols := bits.Len64(mask)
	as := unsafe.Slice(a, (k-1)*lda+rows)
	bs := unsafe.Slice(b, k*nr)
	cs := unsafe.Slice(c, (rows-1)*ldc+cols)
	for i := range rows {
		for j := range cols {
			if mask&(1<<uint(j)) == 0 {
				continue
			}
			var acc T
			for p := range k {
				acc += as[p*lda+i] * bs[p*nr+j]
			}
			v := alpha * acc
			if beta != 0 {
				v += beta * cs[i*ldc+j]
			}
			cs[i*ldc+j] = v
		}
	}
}

// twinRows is the loop of the Rows kernels: A row i of segment t is
// a[offs[t*ldo+i]+start:][:seglen], or zero[:seglen] for a negative
// offset; it returns true, writing nothing, at an offset past limit.
func twinRows[T Float](nr, nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *T, ldc int, alpha, beta T, limit int) bool {
	os := unsafe.Slice(offs, (nseg-1)*ldo+mr)
	var as []T
	if n := limit + start + seglen; n > 0 {
		as = unsafe.Slice(a, n)
	}
	zs := unsafe.Slice(zero, seglen)
	k := nseg * seglen
	bs := unsafe.Slice(b, k*nr)
	var acc [mr * maxNR]T
	for t := range nseg {
		for i := range mr {
			o := os[t*ldo+i]
			if o > limit {
				return true
			}
			row := zs
			if o >= 0 {
				row = as[o+start : o+start+seglen]
			}
			for q, x := range row {
				bp := bs[(t*seglen+q)*nr:][:nr]
				for j, y := range bp {
					acc[i*nr+j] += x * y
				}
			}
		}
	}
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	for i := range mr {
		for j := range nr {
			v := alpha * acc[i*nr+j]
			if beta != 0 {
				v += beta * cs[i*ldc+j]
			}
			cs[i*ldc+j] = v
		}
	}
	return false
}

// twinGather copies n rows of w elements: row r from a[offs[r]+delta:],
// or from zero when offs[r] < 0; it stops and returns true at an offset
// past limit.
func twinGather[T Float](w int, dst, a, zero *T, offs *int, n, delta, limit int) bool {
	ds := unsafe.Slice(dst, n*w)
	os := unsafe.Slice(offs, n)
	var as []T
	if m := limit + delta + w; m > 0 {
		as = unsafe.Slice(a, m)
	}
	zs := unsafe.Slice(zero, w)
	for r, o := range os {
		if o > limit {
			return true
		}
		src := zs
		if o >= 0 {
			src = as[o+delta : o+delta+w]
		}
		copy(ds[r*w:(r+1)*w], src)
	}
	return false
}

// twinPackA6 packs six rows of n columns: dst[p*6+i] = src[i*lda+p].
func twinPackA6[T Float](dst, src *T, lda, n int) {
	if n == 0 {
		return
	}
	ds := unsafe.Slice(dst, 6*n)
	ss := unsafe.Slice(src, 5*lda+n)
	for p := range n {
		for i := range 6 {
			ds[p*6+i] = ss[i*lda+p]
		}
	}
}

// twinPackAT6 packs np panels of six columns, rows 0..kc-1:
// dst[q*kc*6+p*6+i] = src[p*lda+q*6+i]; with extra > 0 one more panel of
// the first extra columns, zeros after them.
func twinPackAT6[T Float](dst, src *T, lda, kc, np, extra int) {
	if kc == 0 || np == 0 && extra == 0 {
		return
	}
	panels := np
	if extra > 0 {
		panels++
	}
	ds := unsafe.Slice(dst, panels*kc*6)
	ss := unsafe.Slice(src, (kc-1)*lda+np*6+extra)
	for p := range kc {
		for q := range panels {
			for i := range 6 {
				var v T
				if q < np || i < extra {
					v = ss[p*lda+q*6+i]
				}
				ds[q*kc*6+p*6+i] = v
			}
		}
	}
}

// twinCopyRows copies n rows of w bytes, src rows stride bytes apart.
func twinCopyRows(w int, dst, src *byte, stride, n int) {
	if n == 0 {
		return
	}
	ds := unsafe.Slice(dst, n*w)
	ss := unsafe.Slice(src, (n-1)*stride+w)
	for r := range n {
		copy(ds[r*w:(r+1)*w], ss[r*stride:r*stride+w])
	}
}

// The AVX2 routines.

// sgemmKernel6x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernel6x16(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(6, 16, k, a, 6, b, c, ldc, alpha, beta, colMask(16))
}

// dgemmKernel6x8 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernel6x8(k int, a, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(6, 8, k, a, 6, b, c, ldc, alpha, beta, colMask(8))
}

// sgemmKernelS2x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS2x16(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(2, 16, k, a, lda, b, c, ldc, alpha, beta, colMask(16))
}

// sgemmKernelS4x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS4x16(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(4, 16, k, a, lda, b, c, ldc, alpha, beta, colMask(16))
}

// sgemmKernelS6x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS6x16(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(6, 16, k, a, lda, b, c, ldc, alpha, beta, colMask(16))
}

// dgemmKernelS2x8 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS2x8(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(2, 8, k, a, lda, b, c, ldc, alpha, beta, colMask(8))
}

// dgemmKernelS4x8 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS4x8(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(4, 8, k, a, lda, b, c, ldc, alpha, beta, colMask(8))
}

// dgemmKernelS6x8 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS6x8(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(6, 8, k, a, lda, b, c, ldc, alpha, beta, colMask(8))
}

// packA6x8F32 is the Go twin of the assembly routine: the packing loop of twinPackA6.
func packA6x8F32(dst, src *float32, lda, n8 int) { twinPackA6(dst, src, lda, 8*n8) }

// packA6x4F64 is the Go twin of the assembly routine: the packing loop of twinPackA6.
func packA6x4F64(dst, src *float64, lda, n4 int) { twinPackA6(dst, src, lda, 4*n4) }

// copyRows64 is the Go twin of the assembly routine: the row copy of twinCopyRows.
func copyRows64(dst, src *byte, stride, n int) { twinCopyRows(64, dst, src, stride, n) }

// packAT6NF32 is the Go twin of the assembly routine: the packing loop of
// twinPackAT6, the mask giving the partial panel's columns.
func packAT6NF32(dst, src *float32, lda, kc, np int, mask *[8]int32) {
	extra := 0
	if mask != nil {
		for extra < 6 && mask[extra] != 0 {
			extra++
		}
	}
	twinPackAT6(dst, src, lda, kc, np, extra)
}

// packAT6NF64 is the Go twin of the assembly routine: the packing loop of twinPackAT6.
func packAT6NF64(dst, src *float64, lda, kc, np int) { twinPackAT6(dst, src, lda, kc, np, 0) }

// sgemmKernelRows6x16 is the Go twin of the assembly routine: the Rows kernel loop of twinRows.
func sgemmKernelRows6x16(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinRows(16, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// dgemmKernelRows6x8 is the Go twin of the assembly routine: the Rows kernel loop of twinRows.
func dgemmKernelRows6x8(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinRows(8, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// gatherRows64F32 is the Go twin of the assembly routine: the row gather of twinGather.
func gatherRows64F32(dst, a, zero *float32, offs *int, n, delta, limit int) (bad bool) {
	return twinGather(16, dst, a, zero, offs, n, delta, limit)
}

// gatherRows64F64 is the Go twin of the assembly routine: the row gather of twinGather.
func gatherRows64F64(dst, a, zero *float64, offs *int, n, delta, limit int) (bad bool) {
	return twinGather(8, dst, a, zero, offs, n, delta, limit)
}

// The AVX-512 routines.

// sgemmKernel6x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernel6x32(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(6, 32, k, a, 6, b, c, ldc, alpha, beta, colMask(32))
}

// dgemmKernel6x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernel6x16(k int, a, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(6, 16, k, a, 6, b, c, ldc, alpha, beta, colMask(16))
}

// sgemmKernelS1x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS1x32(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32, mask uint64) {
	twinStrided(1, 32, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// sgemmKernelS2x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS2x32(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32, mask uint64) {
	twinStrided(2, 32, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// sgemmKernelS3x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS3x32(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32, mask uint64) {
	twinStrided(3, 32, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// sgemmKernelS4x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS4x32(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32, mask uint64) {
	twinStrided(4, 32, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// sgemmKernelS5x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS5x32(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32, mask uint64) {
	twinStrided(5, 32, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// sgemmKernelS6x32 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS6x32(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32, mask uint64) {
	twinStrided(6, 32, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// dgemmKernelS1x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS1x16(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64, mask uint64) {
	twinStrided(1, 16, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// dgemmKernelS2x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS2x16(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64, mask uint64) {
	twinStrided(2, 16, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// dgemmKernelS3x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS3x16(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64, mask uint64) {
	twinStrided(3, 16, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// dgemmKernelS4x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS4x16(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64, mask uint64) {
	twinStrided(4, 16, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// dgemmKernelS5x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS5x16(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64, mask uint64) {
	twinStrided(5, 16, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// dgemmKernelS6x16 is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS6x16(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64, mask uint64) {
	twinStrided(6, 16, k, a, lda, b, c, ldc, alpha, beta, mask)
}

// copyRows128 is the Go twin of the assembly routine: the row copy of twinCopyRows.
func copyRows128(dst, src *byte, stride, n int) { twinCopyRows(128, dst, src, stride, n) }

// sgemmKernelRows6x32 is the Go twin of the assembly routine: the Rows kernel loop of twinRows.
func sgemmKernelRows6x32(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinRows(32, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// dgemmKernelRows6x16 is the Go twin of the assembly routine: the Rows kernel loop of twinRows.
func dgemmKernelRows6x16(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinRows(16, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// gatherRows128F32 is the Go twin of the assembly routine: the row gather of twinGather.
func gatherRows128F32(dst, a, zero *float32, offs *int, n, delta, limit int) (bad bool) {
	return twinGather(32, dst, a, zero, offs, n, delta, limit)
}

// gatherRows128F64 is the Go twin of the assembly routine: the row gather of twinGather.
func gatherRows128F64(dst, a, zero *float64, offs *int, n, delta, limit int) (bad bool) {
	return twinGather(16, dst, a, zero, offs, n, delta, limit)
}

// twinGatherSegs copies n rows of chunks chunks of w elements: chunk c of
// row r from a[offs[c*ldo+r]:], or from zero for a negative offset; it
// stops and returns true at an offset past limit.
func twinGatherSegs[T Float](w int, dst, a, zero *T, offs *int, ldo, n, chunks, limit int) bool {
	if n == 0 {
		return false
	}
	ds := unsafe.Slice(dst, n*chunks*w)
	os := unsafe.Slice(offs, (chunks-1)*ldo+n)
	var as []T
	if m := limit + w; m > 0 {
		as = unsafe.Slice(a, m)
	}
	zs := unsafe.Slice(zero, w)
	for r := range n {
		for c := range chunks {
			o := os[c*ldo+r]
			if o > limit {
				return true
			}
			src := zs
			if o >= 0 {
				src = as[o : o+w]
			}
			copy(ds[(r*chunks+c)*w:][:w], src)
		}
	}
	return false
}

// gatherSegs32F32 is the Go twin of the assembly routine: the segment gather of twinGatherSegs.
func gatherSegs32F32(dst, a, zero *float32, offs *int, ldo, n, chunks, limit int) (bad bool) {
	return twinGatherSegs(8, dst, a, zero, offs, ldo, n, chunks, limit)
}

// gatherSegs32F64 is the Go twin of the assembly routine: the segment gather of twinGatherSegs.
func gatherSegs32F64(dst, a, zero *float64, offs *int, ldo, n, chunks, limit int) (bad bool) {
	return twinGatherSegs(4, dst, a, zero, offs, ldo, n, chunks, limit)
}

// gatherSegs64F32 is the Go twin of the assembly routine: the segment gather of twinGatherSegs.
func gatherSegs64F32(dst, a, zero *float32, offs *int, ldo, n, chunks, limit int) (bad bool) {
	return twinGatherSegs(16, dst, a, zero, offs, ldo, n, chunks, limit)
}

// gatherSegs64F64 is the Go twin of the assembly routine: the segment gather of twinGatherSegs.
func gatherSegs64F64(dst, a, zero *float64, offs *int, ldo, n, chunks, limit int) (bad bool) {
	return twinGatherSegs(8, dst, a, zero, offs, ldo, n, chunks, limit)
}

// The AVX-512 kernels of AVX2's tile shapes (named with a Z).

// sgemmKernel6x16Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernel6x16Z(k int, a, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(6, 16, k, a, 6, b, c, ldc, alpha, beta, colMask(16))
}

// dgemmKernel6x8Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernel6x8Z(k int, a, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(6, 8, k, a, 6, b, c, ldc, alpha, beta, colMask(8))
}

// sgemmKernelS2x16Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS2x16Z(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(2, 16, k, a, lda, b, c, ldc, alpha, beta, colMask(16))
}

// sgemmKernelS4x16Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS4x16Z(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(4, 16, k, a, lda, b, c, ldc, alpha, beta, colMask(16))
}

// sgemmKernelS6x16Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func sgemmKernelS6x16Z(k int, a *float32, lda int, b, c *float32, ldc int, alpha, beta float32) {
	twinStrided(6, 16, k, a, lda, b, c, ldc, alpha, beta, colMask(16))
}

// dgemmKernelS2x8Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS2x8Z(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(2, 8, k, a, lda, b, c, ldc, alpha, beta, colMask(8))
}

// dgemmKernelS4x8Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS4x8Z(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(4, 8, k, a, lda, b, c, ldc, alpha, beta, colMask(8))
}

// dgemmKernelS6x8Z is the Go twin of the assembly routine: the micro-kernel loop of twinStrided.
func dgemmKernelS6x8Z(k int, a *float64, lda int, b, c *float64, ldc int, alpha, beta float64) {
	twinStrided(6, 8, k, a, lda, b, c, ldc, alpha, beta, colMask(8))
}

// sgemmKernelRows6x16Z is the Go twin of the assembly routine: the Rows kernel loop of twinRows.
func sgemmKernelRows6x16Z(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinRows(16, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// dgemmKernelRows6x8Z is the Go twin of the assembly routine: the Rows kernel loop of twinRows.
func dgemmKernelRows6x8Z(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinRows(8, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// twinRowsTall is twinRows for two tiles stacked (rows 0..5 at offs and
// c, rows 6..11 at offs+6 and c+6·ldc); it returns true, writing nothing,
// at an offset past limit.
func twinRowsTall[T Float](nr, nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *T, ldc int, alpha, beta T, limit int) bool {
	os := unsafe.Slice(offs, (nseg-1)*ldo+2*mr)
	for t := range nseg {
		for i := range 2 * mr {
			if os[t*ldo+i] > limit {
				return true
			}
		}
	}
	cs := unsafe.Slice(c, (2*mr-1)*ldc+nr)
	twinRows(nr, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
	return twinRows(nr, nseg, seglen, start, &os[mr], ldo, a, zero, b, &cs[mr*ldc], ldc, alpha, beta, limit)
}

// sgemmKernelRows12x16Z is the Go twin of the assembly routine: the Rows kernel loop of twinRowsTall.
func sgemmKernelRows12x16Z(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinRowsTall(16, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// dgemmKernelRows12x8Z is the Go twin of the assembly routine: the Rows kernel loop of twinRowsTall.
func dgemmKernelRows12x8Z(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinRowsTall(8, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// twinSRows is the loop of the kernels reading a stored Aᵀ and a Rows B
// in place: B's row p is data[offs[p]:][:nr], or zeros for a negative
// offset; it returns true, writing nothing, at an offset past limit.
func twinSRows[T Float](rows, nr, k int, a *T, lda int, offs *int, data, zero, c *T, ldc int, alpha, beta T, limit int) bool {
	os := unsafe.Slice(offs, k)
	b := make([]T, k*nr)
	zs := unsafe.Slice(zero, nr)
	for p, o := range os {
		if o > limit {
			return true
		}
		row := zs
		if o >= 0 {
			row = unsafe.Slice((*T)(unsafe.Add(unsafe.Pointer(data), uintptr(o)*unsafe.Sizeof(*data))), nr)
		}
		copy(b[p*nr:(p+1)*nr], row)
	}
	twinStrided(rows, nr, k, a, lda, &b[0], c, ldc, alpha, beta, colMask(nr))
	return false
}

// sgemmKernelSR8x32 is the Go twin of the assembly routine: the loop of twinSRows.
func sgemmKernelSR8x32(k int, a *float32, lda int, offs *int, data, zero, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinSRows(8, 32, k, a, lda, offs, data, zero, c, ldc, alpha, beta, limit)
}

// dgemmKernelSR8x16 is the Go twin of the assembly routine: the loop of twinSRows.
func dgemmKernelSR8x16(k int, a *float64, lda int, offs *int, data, zero, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinSRows(8, 16, k, a, lda, offs, data, zero, c, ldc, alpha, beta, limit)
}

// twinSRowsSegs is the loop of the kernels reading a stored Aᵀ and nseg
// one-vector segments of a Rows B in place: twinSRows for each segment v
// (offsets at offs[v*ldo:], columns from c[v*nr:]); it returns true,
// writing nothing, at an offset past limit.
func twinSRowsSegs[T Float](rows, nr, nseg, k int, a *T, lda int, offs *int, ldo int, data, zero, c *T, ldc int, alpha, beta T, limit int) bool {
	os := unsafe.Slice(offs, (nseg-1)*ldo+k)
	for v := range nseg {
		for _, o := range os[v*ldo : v*ldo+k] {
			if o > limit {
				return true
			}
		}
	}
	cs := unsafe.Slice(c, (rows-1)*ldc+nseg*nr)
	for v := range nseg {
		twinSRows(rows, nr, k, a, lda, &os[v*ldo], data, zero, &cs[v*nr], ldc, alpha, beta, limit)
	}
	return false
}

// sgemmKernelSR8x16x1 is the Go twin of the assembly routine: the loop of twinSRowsSegs.
func sgemmKernelSR8x16x1(k int, a *float32, lda int, offs *int, ldo int, data, zero, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinSRowsSegs(8, 16, 1, k, a, lda, offs, ldo, data, zero, c, ldc, alpha, beta, limit)
}

// sgemmKernelSR8x16x2 is the Go twin of the assembly routine: the loop of twinSRowsSegs.
func sgemmKernelSR8x16x2(k int, a *float32, lda int, offs *int, ldo int, data, zero, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinSRowsSegs(8, 16, 2, k, a, lda, offs, ldo, data, zero, c, ldc, alpha, beta, limit)
}

// sgemmKernelSR8x16x3 is the Go twin of the assembly routine: the loop of twinSRowsSegs.
func sgemmKernelSR8x16x3(k int, a *float32, lda int, offs *int, ldo int, data, zero, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinSRowsSegs(8, 16, 3, k, a, lda, offs, ldo, data, zero, c, ldc, alpha, beta, limit)
}

// dgemmKernelSR8x8x1 is the Go twin of the assembly routine: the loop of twinSRowsSegs.
func dgemmKernelSR8x8x1(k int, a *float64, lda int, offs *int, ldo int, data, zero, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinSRowsSegs(8, 8, 1, k, a, lda, offs, ldo, data, zero, c, ldc, alpha, beta, limit)
}

// dgemmKernelSR8x8x2 is the Go twin of the assembly routine: the loop of twinSRowsSegs.
func dgemmKernelSR8x8x2(k int, a *float64, lda int, offs *int, ldo int, data, zero, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinSRowsSegs(8, 8, 2, k, a, lda, offs, ldo, data, zero, c, ldc, alpha, beta, limit)
}

// dgemmKernelSR8x8x3 is the Go twin of the assembly routine: the loop of twinSRowsSegs.
func dgemmKernelSR8x8x3(k int, a *float64, lda int, offs *int, ldo int, data, zero, c *float64, ldc int, alpha, beta float64, limit int) (bad bool) {
	return twinSRowsSegs(8, 8, 3, k, a, lda, offs, ldo, data, zero, c, ldc, alpha, beta, limit)
}

// twinAddOffsets is the loop of the addOffsets routines.
func twinAddOffsets(dst, src *int, n, v int) {
	d, s := unsafe.Slice(dst, n), unsafe.Slice(src, n)
	for t := range s {
		d[t] = s[t] + v
	}
}

// addOffsets256 is the Go twin of the assembly routine: twinAddOffsets.
func addOffsets256(dst, src *int, n, v int) { twinAddOffsets(dst, src, n, v) }

// addOffsets512 is the Go twin of the assembly routine: twinAddOffsets.
func addOffsets512(dst, src *int, n, v int) { twinAddOffsets(dst, src, n, v) }

// twinRowsPair is the loop of the pair-order Rows kernels for rows rows
// of 16 columns: B packed by pairPanels; each element sums the even and
// the odd steps of k apart and adds the two sums. It returns true,
// writing nothing, at an offset past limit.
func twinRowsPair(rows, nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) bool {
	os := unsafe.Slice(offs, (nseg-1)*ldo+rows)
	for t := range nseg {
		for i := range rows {
			if os[t*ldo+i] > limit {
				return true
			}
		}
	}
	var as []float32
	if n := limit + start + seglen; n > 0 {
		as = unsafe.Slice(a, n)
	}
	zs := unsafe.Slice(zero, seglen)
	bs := unsafe.Slice(b, nseg*seglen*16)
	cs := unsafe.Slice(c, (rows-1)*ldc+16)
	for i := range rows {
		var acc [2][16]float32
		for t := range nseg {
			row := zs
			if o := os[t*ldo+i]; o >= 0 {
				row = as[o+start : o+start+seglen]
			}
			for q, x := range row {
				p := t*seglen + q
				bp := bs[p/2*32:][:32]
				for j := range 16 {
					acc[p%2][j] += x * bp[pairOrder[j]+p%2]
				}
			}
		}
		for j := range 16 {
			v := alpha * (acc[0][j] + acc[1][j])
			if beta != 0 {
				v += beta * cs[i*ldc+j]
			}
			cs[i*ldc+j] = v
		}
	}
	return false
}

// sgemmKernelRows12x16P is the Go twin of the assembly routine: the loop of twinRowsPair.
func sgemmKernelRows12x16P(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinRowsPair(2*mr, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}

// sgemmKernelRows6x16P is the Go twin of the assembly routine: the loop of twinRowsPair.
func sgemmKernelRows6x16P(nseg, seglen, start int, offs *int, ldo int, a, zero, b, c *float32, ldc int, alpha, beta float32, limit int) (bad bool) {
	return twinRowsPair(mr, nseg, seglen, start, offs, ldo, a, zero, b, c, ldc, alpha, beta, limit)
}
