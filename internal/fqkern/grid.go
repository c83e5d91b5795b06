package fqkern

import (
	"math"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// QuantRange returns quant_min and quant_max for num_bits and
// narrow_range: [0, 2^num_bits − 1], or [1, 2^num_bits − 1] if narrow.
func QuantRange(numBits int, narrow bool) (qmin, qmax int) {
	if narrow {
		qmin = 1
	}
	return qmin, 1<<numBits - 1
}

// floor is floor(v): v is already rounded to T, and floor is exact in
// float64 for both element types. (Truncating through an integer and
// stepping down for negative fractions measured slower here: the step is
// a mispredicted branch for half the negative values.)
func floor[T tensorx.Float](v T) T { return T(math.Floor(float64(v))) }

// Nudge returns the nudged grid of [lo, hi] = [min, max] on the integer
// grid [qmin, qmax] (docs/spec/fake_quant.md §2), every operation rounded to T:
//
//	scale = (hi − lo)/(qmax − qmin), Inv = (qmax − qmin)/(hi − lo)
//	zp    = qmin − lo/scale, clamped to [qmin, qmax] and rounded half away
//	        from zero (C++ std::round); qmin if NaN
//	NMin  = (qmin − zp)·scale, NMax = (qmax − zp)·scale
//	QZero = floor(−NMin·Inv + 0.5)
//
// The QZero index uses the inverse scale for every op, as the spec writes
// it (for Vars, −NMin/scale would floor to the same integer: −NMin is
// (zp − qmin)·scale to within an ulp). The min == max == 0 case returns
// the zero Grid with Zero set; callers give it its special meaning.
func Nudge[T tensorx.Float](lo, hi T, qmin, qmax int) Grid[T] {
	if lo == 0 && hi == 0 {
		return Grid[T]{Zero: true}
	}
	qminF, qmaxF := T(qmin), T(qmax)
	steps := T(qmaxF - qminF) // exact: integers below 2^16
	rng := T(hi - lo)
	scale := T(rng / steps)
	inv := T(steps / rng)
	zpFromMin := T(qminF - T(lo/scale))
	var zp T
	switch {
	case zpFromMin < qminF:
		zp = qminF
	case zpFromMin > qmaxF:
		zp = qmaxF
	case zpFromMin == zpFromMin:
		zp = T(math.Round(float64(zpFromMin))) // half away from zero, as std::round
	default: // NaN: TensorFlow's integer cast is undefined
		zp = qminF
	}
	g := Grid[T]{Scale: scale, Inv: inv}
	g.NMin = T(T(qminF-zp) * scale)
	g.NMax = T(T(qmaxF-zp) * scale)
	g.QZero = floor(T(T(-g.NMin*g.Inv) + 0.5))
	return g
}

// InitRanges makes q the forward table (Init) in buf, of
// QuantSize(len(mins)) elements, of the ranges [mins[c], maxs[c]] (one
// per channel, at least one) nudged on the grid [qmin, qmax] (Nudge):
// dividing by the scale if div (Vars), else multiplying by the inverse
// scale (Args, PerChannel).
func (q *Quant[T]) InitRanges(buf []T, div bool, mins, maxs []T, qmin, qmax int) {
	q.Init(len(mins), div, buf)
	for c := range mins {
		q.Set(c, Nudge(mins[c], maxs[c], qmin, qmax))
	}
}

// InitRanges makes b the gradient table (Init) in buf, of
// BoundsSize(len(mins)) elements, of the ranges [mins[c], maxs[c]] (one
// per channel, at least one) nudged on the grid [qmin, qmax] (Nudge): the
// nudged range of each channel, or every gradient passing in the
// min == max == 0 case, and, for the adjoint (dmin not nil), each
// channel's d_min and d_max.
func (b *Bounds[T]) InitRanges(buf []T, mins, maxs []T, qmin, qmax int, dmin, dmax []T) {
	b.Init(len(mins), buf)
	for c := range mins {
		g := Nudge(mins[c], maxs[c], qmin, qmax)
		b.Set(c, g.NMin, g.NMax, g.Zero)
		if dmin != nil {
			b.SetAdjoint(c, dmin[c], dmax[c])
		}
	}
}
