// Package bnref holds naive float64 references of the FusedBatchNorm ops,
// written from the spec (docs/spec/fused_batch_norm.md), and the shape grid
// their tests share (the forward ops' tests in package forward, the
// gradient ops' in package backward).
package bnref

import "math"

// Channel returns the channel count of x (of the given shape and data
// format) and the channel of each flat index.
func Channel(shape []int, format string) (int, func(i int) int) {
	if format == "NCHW" || format == "NCDHW" {
		inner := 1
		for _, d := range shape[2:] {
			inner *= d
		}
		C := shape[1]
		return C, func(i int) int { return (i / inner) % C }
	}
	C := shape[len(shape)-1]
	return C, func(i int) int { return i % C }
}

// Out holds the outputs of Forward: y, batch_mean, batch_variance,
// reserve_space_1 and reserve_space_2.
type Out struct {
	Y, BatchMean, BatchVar, RS1, RS2 []float64
}

// Forward is FusedBatchNorm from spec §2: two-pass statistics in
// float64, with mean and variance the running statistics (read in
// inference, and in training with factor ≠ 1).
func Forward(x []float64, shape []int, format string, scale, offset, mean, variance []float64, eps, factor float64, training bool) Out {
	C, ch := Channel(shape, format)
	out := Out{Y: make([]float64, len(x)), BatchMean: make([]float64, C), BatchVar: make([]float64, C),
		RS1: make([]float64, C), RS2: make([]float64, C)}
	if len(x) == 0 {
		for c := 0; c < C; c++ {
			out.BatchMean[c], out.BatchVar[c] = math.NaN(), math.NaN()
			out.RS1[c], out.RS2[c] = math.NaN(), math.NaN()
		}
		return out
	}
	n := float64(len(x) / C)
	mu := make([]float64, C)
	vr := make([]float64, C)
	if training {
		for i, v := range x {
			mu[ch(i)] += v
		}
		for c := range mu {
			mu[c] /= n
		}
		for i, v := range x {
			d := v - mu[ch(i)]
			vr[ch(i)] += d * d
		}
		for c := range vr {
			vr[c] /= n
		}
		bessel := n / math.Max(n-1, 1)
		for c := 0; c < C; c++ {
			out.RS1[c], out.RS2[c] = mu[c], vr[c]
			if factor == 1 {
				out.BatchMean[c], out.BatchVar[c] = mu[c], vr[c]*bessel
			} else {
				out.BatchMean[c] = (1-factor)*mean[c] + factor*mu[c]
				out.BatchVar[c] = (1-factor)*variance[c] + factor*bessel*vr[c]
			}
		}
	} else {
		copy(mu, mean)
		copy(vr, variance)
		copy(out.BatchMean, mean)
		copy(out.BatchVar, variance)
		copy(out.RS1, mean)
		copy(out.RS2, variance)
	}
	for i, v := range x {
		c := ch(i)
		out.Y[i] = (v-mu[c])/math.Sqrt(vr[c]+eps)*scale[c] + offset[c]
	}
	return out
}

// Grad is FusedBatchNormGrad from spec §3: m and v are the saved mean and
// variance (training) or the population statistics (inference).
func Grad(dy, x []float64, shape []int, format string, scale, m, v []float64, eps float64, training bool) (dx, dscale, doffset []float64) {
	C, ch := Channel(shape, format)
	dx = make([]float64, len(x))
	dscale = make([]float64, C)
	doffset = make([]float64, C)
	if len(x) == 0 {
		return
	}
	n := float64(len(x) / C)
	sdy := make([]float64, C)
	sdyxc := make([]float64, C)
	for i := range x {
		c := ch(i)
		sdy[c] += dy[i]
		sdyxc[c] += dy[i] * (x[i] - m[c])
	}
	for c := 0; c < C; c++ {
		r := 1 / math.Sqrt(v[c]+eps)
		dscale[c] = sdyxc[c] * r
		doffset[c] = sdy[c]
	}
	for i := range x {
		c := ch(i)
		r := 1 / math.Sqrt(v[c]+eps)
		if training {
			dx[i] = scale[c] * r * (dy[i] - sdy[c]/n - (x[i]-m[c])*r*r*sdyxc[c]/n)
		} else {
			dx[i] = dy[i] * scale[c] * r
		}
	}
	return
}

// Case is one data format and shape of x.
type Case struct {
	Format string
	Shape  []int
}

// Grid is the shapes the op tests of the family run: every layout, one
// element per channel, several reduction chunks, and for float32 the
// assembly with row counts that are not a multiple of four and channel
// tails.
var Grid = []Case{
	{"NHWC", []int{2, 3, 4, 5}},
	{"NHWC", []int{1, 1, 1, 1}},
	{"NHWC", []int{3, 5, 7, 2}},
	{"NHWC", []int{2, 2, 2, 33}},
	{"NHWC", []int{4, 32, 32, 16}}, // several reduction chunks
	{"NHWC", []int{2, 3, 5, 24}},   // float32: assembly, 30 rows (not a multiple of 4)
	{"NHWC", []int{3, 1, 3, 11}},   // float32: assembly with 3 tail channels
	{"NCHW", []int{2, 3, 4, 5}},
	{"NCHW", []int{1, 1, 1, 1}},
	{"NCHW", []int{3, 5, 7, 2}},
	{"NCHW", []int{2, 7, 1, 1}}, // inner == 1: the channels-last path
	{"NCHW", []int{4, 32, 32, 16}},
	{"NDHWC", []int{2, 3, 2, 2, 4}},
	{"NDHWC", []int{1, 3, 2, 3, 19}},
	{"NCDHW", []int{1, 2, 3, 1, 5}},
	{"NCDHW", []int{2, 3, 2, 2, 4}},
}
