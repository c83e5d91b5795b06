package fqkern

import (
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Whole-tensor passes over a flat element range of a tensor whose channel
// is the flat index modulo d, split into chunks run in parallel on up to
// threads goroutines (internal/parallel). Every chunk is a whole number
// of table periods (but the last), so that calls start at the table's
// first position; the chunks (and the gradient's per-chunk partial sums)
// depend only on the shapes, never on the thread count.
//
// The passes allocate nothing on one thread: they run the loops directly
// when parallel.For would run them serially (a closure handed to it
// escapes: the parallel branches give theirs a copy of the table header,
// so that the caller's stays on its stack), and the gradient's sums live
// in memory the caller passes in (GradientScratch).

// StreamBytes is the tensor size (of x, in bytes) from which the forward
// runs AVX2 assembly that takes the rows one at a time in memory order, on
// every tier, rather than the tier's row-group kernel (four rows per block
// of table operands loaded into registers). Measured on an AMD EPYC Zen 5
// (2 cores of a shared machine, tiers compared in one process):
//
//   - AVX-512 loads of the table (L1-resident, 6 loads per vector in the
//     forward) ran at 0.7–0.9 of AVX2 whenever the other streams came
//     from L3 or memory, at some times of the day and not at others;
//     AVX2 never did. The row groups cut the table loads fourfold: the
//     forward is 1.1–1.8× faster than AVX2's one row at a time on either
//     tier while the tensors fit the caches;
//   - the row groups' access order (four rows a period apart) defeats
//     the hardware prefetchers once the tensors stream from memory: from
//     8 MiB per tensor they fell behind (0.5–0.6 at 25 MiB, W8's size).
//
// 6 MiB, below that crossover. Every kernel gives the same bits. A
// variable so that tests can set it.
var StreamBytes = 6 << 20

// AdjointStreamBytes is StreamBytes for the adjoint, which runs AVX2's
// kernel from that size on every tier rather than the tier's own (both
// one row at a time): AVX-512's, five table loads per vector, was 1.1–1.5×
// AVX2 up to 1 MiB per tensor and 0.9–1.0 from 4 MiB. The gradient
// (AVX-512 1.04–1.55× AVX2 at every size measured) always runs its tier's
// kernel.
var AdjointStreamBytes = 2 << 20

// streams reports whether a pass over n elements runs the streaming
// kernels, from bytes bytes on (StreamBytes, AdjointStreamBytes).
func streams[T tensorx.Float](n, bytes int) bool {
	var z T
	return n*int(unsafe.Sizeof(z)) >= bytes
}

// GrainElems is the least number of elements per parallel chunk.
const GrainElems = 1 << 15

// grain returns the chunk size for a table of period l.
func grain(l int) int { return max(l, GrainElems/l*l) }

// serial reports whether parallel.For(threads, n, grain, ·) would run on
// the caller's goroutine alone.
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }

// Forward quantises x into y (same length) with the table q on up to
// threads goroutines: q.Run over chunks, that is quantDiv (a dividing
// table, Vars) or quantMul (Args, PerChannel) of the scalar rules in every
// channel, +0 in the min == max == 0 channels (NaN inputs included).
func Forward[T tensorx.Float](y, x []T, q *Quant[T], threads int) {
	grain := grain(q.Period())
	st := streams[T](len(x), StreamBytes)
	if serial(threads, len(x), grain) {
		q.run(y, x, 0, st)
	} else {
		qc := *q
		parallel.For(threads, len(x), grain, func(lo, hi int) { qc.run(y[lo:hi], x[lo:hi], lo, st) })
	}
}

// GradientScratch returns the lengths of the two float64 buffers Gradient
// takes for n elements with the table b on up to threads goroutines: part
// (the per-chunk sums, which must be zeroed) and accs (the per-worker
// position sums, any contents).
func GradientScratch[T tensorx.Float](n int, b *Bounds[T], threads int) (part, accs int) {
	l := b.Period()
	nc := parallel.Chunks(n, grain(l))
	return 2 * b.d * nc, max(1, min(threads, nc)) * 2 * l
}

// Gradient is the fused straight-through gradient pass of the table b on
// up to threads goroutines: the input gradient bi (g inside [lo, hi] of
// the channel, inclusive; everything in a min == max == 0 channel, NaN
// inputs included; 0 elsewhere) and the per-channel sums bmin and bmax
// (one per channel) of the gradients strictly below / above the range.
// The sums run in float64: per table position within a chunk (element
// order, Bounds.Grad), folded into channels per chunk (position order,
// Bounds.Fold) into part, and the chunks combined in chunk order. part
// (zeroed) and accs have the lengths GradientScratch returns.
func Gradient[T tensorx.Float](bi, bmin, bmax, g, x []T, b *Bounds[T], threads int, part, accs []float64) {
	d, l := len(bmin), b.Period()
	grain := grain(l)
	nc := parallel.Chunks(len(x), grain)
	// Per-worker sums, the chunks taken one at a time by whichever worker
	// is free (parallel.Each).
	threads = max(1, min(threads, nc))
	if threads == 1 {
		gradChunks(b, g, x, bi, part, accs, d, grain, 0, nc)
	} else {
		bc := *b
		parallel.Each(threads, nc, func(w, k int) {
			gradChunks(&bc, g, x, bi, part, accs[2*l*w:2*l*(w+1)], d, grain, k, k+1)
		})
	}
	for c := range d {
		var lo, hi float64
		for k := range nc {
			lo += part[2*d*k+c]
			hi += part[2*d*k+d+c]
		}
		bmin[c], bmax[c] = T(lo), T(hi)
	}
}

// gradChunks runs the gradient of the chunks [k0, k1) of grain elements,
// folding chunk k's per-position sums (acc, 2·Period elements) into
// part[2dk:2d(k+1)] (below, then above, for the d channels).
func gradChunks[T tensorx.Float](b *Bounds[T], g, x, bi []T, part, acc []float64, d, grain, k0, k1 int) {
	for k := k0; k < k1; k++ {
		lo, hi := k*grain, min((k+1)*grain, len(x))
		clear(acc)
		b.Grad(bi[lo:hi], g[lo:hi], x[lo:hi], lo, acc)
		p := part[2*d*k : 2*d*(k+1)]
		b.Fold(acc, p[:d], p[d:])
	}
}

// Adjoint is the adjoint pass of the table b (with d_min and d_max) on up
// to threads goroutines: out = dbi inside the range (everything in a
// min == max == 0 channel), d_min[c] below it, d_max[c] above it, 0 for
// NaN inputs (Bounds.Adjoint over chunks).
func Adjoint[T tensorx.Float](out, dbi, x []T, b *Bounds[T], threads int) {
	grain := grain(b.Period())
	st := streams[T](len(x), AdjointStreamBytes)
	if serial(threads, len(x), grain) {
		b.adjoint(out, dbi, x, 0, st)
	} else {
		bc := *b
		parallel.For(threads, len(x), grain, func(lo, hi int) { bc.adjoint(out[lo:hi], dbi[lo:hi], x[lo:hi], lo, st) })
	}
}
