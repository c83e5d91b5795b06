// Package fracpool holds the loops of the fractional pooling ops
// (forward.FractionalAvgPool and FractionalMaxPool, their gradient ops
// FractionalAvgPoolGrad and FractionalMaxPoolGrad, and tapegrad's
// FractionalAvgPoolWithSequences and FractionalMaxPoolGradGrad; see
// docs/spec/fractional_avg_pool.md): the pooling sequences drawn as
// TensorFlow's kernels draw them, and the pooling and gradient loops over
// NHWC data, for float32, float64, int32 and int64 elements.
//
// Cells. Output cell (a, b) of a pooling over an input of h rows and w
// columns covers input rows rows[a]..r1 and columns cols[b]..c1
// (inclusive), where r1 = rows[a+1] if overlapping and rows[a+1]−1
// otherwise, clamped to h−1 (likewise c1): see Cell. A pooling to oh×ow
// cells reads oh+1 row and ow+1 column sequence entries; the functions
// take exactly those (len(rows) = oh+1, len(cols) = ow+1).
//
// The functions check nothing: the caller validates shapes and sequences
// (every read entry 0 <= seq[0] < seq[1] < ... <= size) first. They write
// their destination (first argument) in full unless stated otherwise, and
// run their loops on up to threads goroutines (internal/parallel) in
// chunks whose bounds depend on the shapes only, so that results are
// bit-identical for every thread count.
//
// Numerics are TensorFlow's CPU kernels': average pooling sums each cell
// in row-major order in the element type from 0 and divides by the cell's
// element count in the element type (integers truncate toward zero); its
// gradient accumulates double(dy)/count in float64 in TensorFlow's order
// and converts once; max pooling keeps a cell's first element and
// replaces it by every later greater one (so NaNs after the first element
// are skipped), and its gradient goes to the first maximum of each cell in
// row-major order.
package fracpool

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/philox"
)

// Num is the set of element types of the loops (TensorFlow's for the
// family: float, double, int32, int64).
type Num interface {
	float32 | float64 | int32 | int64
}

// OutputSize is TensorFlow's output size of an axis of n elements pooled
// with ratio: floor(n / ratio) with n converted to float32 and the
// division in float32.
func OutputSize(n int, ratio float32) int {
	q := float32(n) / ratio
	return int(math.Floor(float64(q)))
}

// Sequence writes the pooling sequence of an axis of in elements pooled
// to out cells into seq (out+1 entries), drawing from gen as TensorFlow's
// GeneratePoolingSequence does (spec §3): seq[0] = 0, seq[out] = in, every
// step k = in/out or k+1. It requires 1 <= out <= in.
func Sequence(seq []int64, in, out int, gen *philox.Generator, pseudoRandom bool) {
	seq = seq[:out+1]
	k := in / out
	if pseudoRandom {
		// a_i = ceil(alpha·(i+u)), a_0 = 1, a_out = in+1; seq[i] = a_i − 1.
		alpha := float64(in) / float64(out)
		uMax1 := float64(k+2)/alpha - 1
		uMax2 := float64(in+1-k)/alpha - float64(out-1)
		s := philox.NewSingle(gen.Reserve32(2))
		// Explicit conversions: round where TensorFlow rounds (no FMA).
		u := float64(s.Double() * math.Min(uMax1, uMax2))
		seq[0] = 0
		for i := 1; i < out; i++ {
			seq[i] = int64(int32(math.Ceil(float64(alpha*(float64(i)+u))))) - 1
		}
		seq[out] = int64(in)
		return
	}
	// Random: the steps (in mod out of them k+1, long ones first) shuffled
	// by TensorFlow's Fisher–Yates variant with u32 mod (n − i), then
	// summed.
	r := in % out
	diff := seq[1:]
	for i := range diff {
		diff[i] = int64(k)
		if i < r {
			diff[i]++
		}
	}
	s := philox.NewSingle(gen.Reserve32(uint64(out)))
	for i := 0; i < out-1; i++ {
		j := i + int(s.Uint32()%uint32(out-i))
		diff[i], diff[j] = diff[j], diff[i]
	}
	seq[0] = 0
	for i := 1; i <= out; i++ {
		seq[i] += seq[i-1]
	}
}

// Cell returns the inclusive input range of cell i of a sequence over an
// axis of size n.
func Cell(seq []int64, i, n int, overlapping bool) (lo, hi int64) {
	lo, hi = seq[i], seq[i+1]
	if !overlapping {
		hi--
	}
	return lo, min(hi, int64(n)-1)
}

// Cover fills lo[i], hi[i] (n entries each) with the range of cells of
// seq covering position i of an axis of size n (lo = −1 if none). For
// strictly increasing sequences the covering cells of a position are
// consecutive.
func Cover(lo, hi []int64, seq []int64, n int, overlapping bool) {
	for i := range lo {
		lo[i] = -1
	}
	for a := 0; a < len(seq)-1; a++ {
		c0, c1 := Cell(seq, a, n, overlapping)
		for i := c0; i <= c1; i++ {
			if lo[i] < 0 {
				lo[i] = int64(a)
			}
			hi[i] = int64(a)
		}
	}
}

// grain returns a parallel grain (items per chunk) for items of the given
// cost in elements.
func grain(cost int) int {
	return max(1, 1<<15/max(1, cost))
}

// serial reports whether parallel.For(threads, n, grain, fn) would run fn
// on the caller's goroutine alone (one thread, or a single chunk). The
// loops test it and call their body directly: a closure handed to
// parallel.For escapes to the heap, an allocation per call even when the
// loop then runs serially.
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }
