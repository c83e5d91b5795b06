//go:build amd64 && !noasm

package gemm

import "unsafe"

// zeroLen is the length of the zero buffers the assembly reads for zero
// segments: at least the longest segment of one k block (blk.kc) and 64
// bytes.
const zeroLen = 1024

var (
	zero32 [zeroLen]float32
	zero64 [zeroLen]float64
)

// rowsKernelFunc computes an mr×nr tile from a Rows A read in place: the
// k block rk, whose segment t row i starts at data[offs[t*ld+i]+rk.start]
// (zeros for a negative offset), times the packed B panel b, as
// kernelFunc does for a packed A.
type rowsKernelFunc[T Float] func(rk rowsCall, offs []int, ld, seg int, data, b, c []T, ldc int, alpha, beta T)

// rowsKernel returns the in-place kernel for T, or nil where A is packed
// instead (no assembly).
func rowsKernel[T Float]() rowsKernelFunc[T] {
	if !asmSupported || blocking32.kc > zeroLen || blocking64.kc > zeroLen {
		return nil
	}
	var z T
	if _, ok := any(z).(float32); ok {
		return any(rowsKernelFunc[float32](asmRowsKernel32)).(rowsKernelFunc[T])
	}
	return any(rowsKernelFunc[float64](asmRowsKernel64)).(rowsKernelFunc[T])
}

// checkRowsCall checks the bounds the assembly relies on; the kernel
// itself checks every offset against len(data)-seg, the block lying
// within a segment of length seg.
func checkRowsCall(rk rowsCall, offs []int, ld, seg, nb, nr, nc, ldc int) {
	_ = offs[(rk.nseg-1)*ld+mr-1]
	if rk.seglen > zeroLen || rk.nseg < 1 || rk.seglen < 1 || rk.start < 0 || rk.start+rk.seglen > seg ||
		nb < rk.nseg*rk.seglen*nr || nc < (mr-1)*ldc+nr {
		panic("gemm: bad rows block")
	}
}

func asmRowsKernel32(rk rowsCall, offs []int, ld, seg int, data, b, c []float32, ldc int, alpha, beta float32) {
	checkRowsCall(rk, offs, ld, seg, len(b), 16, len(c), ldc)
	if sgemmKernelRows6x16(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero32[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

func asmRowsKernel64(rk rowsCall, offs []int, ld, seg int, data, b, c []float64, ldc int, alpha, beta float64) {
	checkRowsCall(rk, offs, ld, seg, len(b), 8, len(c), ldc)
	if dgemmKernelRows6x8(rk.nseg, rk.seglen, rk.start, &offs[0], ld, unsafe.SliceData(data), &zero64[0], &b[0], &c[0], ldc, alpha, beta, len(data)-seg) {
		panic(errOffset)
	}
}

// gatherRows64 packs a B micro-panel of 64-byte rows: d[p*nr:(p+1)*nr] =
// data[offs[p]+delta:][:nr], or zeros where offs[p] < 0, for p < kc,
// with 0 <= delta and delta+nr <= seg; it panics on an offset past
// len(data)-seg.
func gatherRows64[T Float](d, data []T, offs []int, delta, seg, kc int) {
	var z T
	nr := 64 / int(unsafe.Sizeof(z))
	_, _ = d[kc*nr-1], offs[kc-1]
	if delta < 0 || delta+nr > seg {
		panic("gemm: bad gather panel")
	}
	var bad bool
	switch any(z).(type) {
	case float32:
		bad = gatherRows64F32((*float32)(unsafe.Pointer(&d[0])), (*float32)(unsafe.Pointer(unsafe.SliceData(data))), &zero32[0], &offs[0], kc, delta, len(data)-seg)
	default:
		bad = gatherRows64F64((*float64)(unsafe.Pointer(&d[0])), (*float64)(unsafe.Pointer(unsafe.SliceData(data))), &zero64[0], &offs[0], kc, delta, len(data)-seg)
	}
	if bad {
		panic(errOffset)
	}
}
