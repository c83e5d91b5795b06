// Package fqref holds what the fake-quant family's tests and gradient-sweep
// samples share between packages forward and backward: an independent
// emulation of docs/spec/fake_quant.md (every operation in float64, rounded to
// float32 where the spec is float32), random ranges and inputs around
// them, and the sample layouts of the gradient sweep (ranges of every
// kind with inputs kept away from the nudged bounds).
package fqref

import (
	"math"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// ---------------------------------------------------------------------------
// Sample layouts of the gradient sweep (see the sample generators in
// packages forward and backward for what they check).

// SampleEps is the finite-difference step the samples are laid out for.
const SampleEps = 1e-6

// RangeKind says where a sampled range lies relative to 0.
type RangeKind int

const (
	Straddle RangeKind = iota // min < 0 < max
	Positive                  // 0 < min < max: nudged to [0, max − min]
	Negative                  // min < max < 0: nudged to [min − max, 0]
)

// SampleRange draws a range [min, max] of the given kind and width for
// num_bits/narrow whose zero point (when not clamped) is at least 0.2 away
// from a rounding tie, so that perturbing min or max by eps does not move
// the nudged grid by a step.
func SampleRange(r *rand.Rand, kind RangeKind, width float64, qmin, qmax int) (float64, float64) {
	for {
		var lo float64
		switch kind {
		case Straddle:
			lo = -width * (0.15 + 0.7*r.Float64())
		case Positive:
			lo = width * (0.1 + 0.5*r.Float64())
		default:
			lo = -width * (1.1 + 0.5*r.Float64())
		}
		hi := lo + width
		scale := (hi - lo) / float64(qmax-qmin)
		zp := float64(qmin) - lo/scale
		if kind != Straddle || math.Abs(zp-math.Floor(zp)-0.5) > 0.2 && zp > float64(qmin)+0.5 && zp < float64(qmax)-0.5 {
			return lo, hi
		}
	}
}

// SampleValue draws an input for a channel with nudged range [nmin,
// nmax]: inside it (at least gap from both bounds) with probability 1/2,
// else below or above it by at least gap.
func SampleValue(r *rand.Rand, nmin, nmax, gap float64) float64 {
	w := nmax - nmin
	switch u := r.Float64(); {
	case u < 0.5:
		return nmin + gap + (w-2*gap)*r.Float64()
	case u < 0.75:
		return nmin - gap - w*r.Float64()
	default:
		return nmax + gap + w*r.Float64()
	}
}

// Layout is one sampled configuration: the inputs (of shape) and one
// range per channel of the last axis (d = 1 for the per-tensor ops).
type Layout struct {
	X, Mins, Maxs []float64
	Shape         []int
	D             int
}

// NewLayout draws the ranges and inputs of a configuration. kinds
// gives the range kind of each channel (cycled); zeroChan >= 0 makes that
// channel's range min == max == 0. fine selects the fine-grid layout of
// the forward ops.
func NewLayout(r *rand.Rand, shape []int, d int, kinds []RangeKind, qmin, qmax int, fine bool, zeroChan int) Layout {
	l := Layout{X: make([]float64, Numel(shape)), Mins: make([]float64, d), Maxs: make([]float64, d), Shape: shape, D: d}
	grids := make([]fqkern.Grid[float64], d)
	gaps := make([]float64, d)
	for c := 0; c < d; c++ {
		width := 0.5 + 2.5*r.Float64()
		if fine {
			width = float64(qmax-qmin) * 5e-10
		}
		if c == zeroChan {
			grids[c] = fqkern.Nudge(0.0, 0.0, qmin, qmax)
			continue
		}
		l.Mins[c], l.Maxs[c] = SampleRange(r, kinds[c%len(kinds)], width, qmin, qmax)
		grids[c] = fqkern.Nudge(l.Mins[c], l.Maxs[c], qmin, qmax)
		gaps[c] = math.Max(5*SampleEps, 0.02*width)
		if fine {
			gaps[c] = 5 * SampleEps
		}
	}
	for i := range l.X {
		c := i % d
		if c == zeroChan {
			l.X[i] = 2*r.Float64() - 1
			continue
		}
		l.X[i] = SampleValue(r, grids[c].NMin, grids[c].NMax, gaps[c])
	}
	return l
}

// Numel returns the element count of a sample shape.
func Numel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// Normal returns n standard normal values.
func Normal(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// Tensor wraps sample data (shape validated by construction).
func Tensor(shape []int, v []float64) *tensor.Dense {
	d, err := tensorx.New(shape, v)
	if err != nil {
		panic("fqref: bad fake-quant sample: " + err.Error())
	}
	return d
}

// RangeTensors returns the min and max tensors of a layout: [d], or
// scalars when scalar is set (d must be 1).
func (l Layout) RangeTensors(scalar bool) (*tensor.Dense, *tensor.Dense) {
	if scalar {
		return Tensor(nil, l.Mins[:1]), Tensor(nil, l.Maxs[:1])
	}
	return Tensor([]int{l.D}, l.Mins), Tensor([]int{l.D}, l.Maxs)
}

// Config is one attr/shape configuration of the samples.
type Config struct {
	Name   string
	Bits   int
	Narrow bool
	Shape  []int
	Kinds  []RangeKind // range kinds, cycled over channels (nil: straddle)
	Zero   bool        // a min == max == 0 channel (the whole range for scalars)
}

// AllKinds are the three range kinds.
var AllKinds = []RangeKind{Straddle, Positive, Negative}

// FineConfigs are the forward ops' fine-grid configurations. Their
// ranges straddle 0: only then are the nudged bounds within half a step of
// min and max, so that TensorFlow's min/max gradients (1 per element below
// / above) are the derivatives of the clip surrogate. (For a range above
// 0, nudged_min is 0 whatever min is, and nudged_max = max − min moves
// with min: TensorFlow's rule is then no derivative of anything.)
var FineConfigs = []Config{
	{Name: "b16-rank1", Bits: 16, Shape: []int{5}},
	{Name: "b16-narrow-rank2", Bits: 16, Narrow: true, Shape: []int{3, 4}},
	{Name: "b15-rank3", Bits: 15, Shape: []int{2, 2, 3}},
	{Name: "b16-rank4", Bits: 16, Shape: []int{1, 2, 2, 3}},
	{Name: "b15-narrow-rank2-1ch", Bits: 15, Narrow: true, Shape: []int{6, 1}},
}

// CoarseConfigs are the gradient and adjoint ops' configurations.
var CoarseConfigs = []Config{
	{Name: "b2-rank1", Bits: 2, Shape: []int{4}, Kinds: AllKinds},
	{Name: "b3-narrow-rank2", Bits: 3, Narrow: true, Shape: []int{3, 5}, Kinds: AllKinds},
	{Name: "b4-rank4", Bits: 4, Shape: []int{2, 1, 2, 3}, Kinds: AllKinds},
	{Name: "b5-narrow-rank3", Bits: 5, Narrow: true, Shape: []int{2, 3, 2}, Kinds: []RangeKind{Positive, Negative}},
	{Name: "b7-rank2", Bits: 7, Shape: []int{4, 3}, Kinds: []RangeKind{Straddle}},
	{Name: "b8-rank2", Bits: 8, Shape: []int{5, 3}, Kinds: AllKinds},
	{Name: "b8-narrow-rank2", Bits: 8, Narrow: true, Shape: []int{4, 2}, Kinds: AllKinds},
	{Name: "b12-rank3", Bits: 12, Shape: []int{2, 2, 3}, Kinds: AllKinds},
	{Name: "b16-narrow-rank1", Bits: 16, Narrow: true, Shape: []int{6}, Kinds: AllKinds},
	{Name: "b16-rank2", Bits: 16, Shape: []int{3, 2}, Kinds: []RangeKind{Straddle}},
	{Name: "b8-zero-range", Bits: 8, Shape: []int{3, 3}, Kinds: AllKinds, Zero: true},
}

// Layout draws the ranges and inputs of the configuration: one range
// per channel of the last axis (perChannel) or one range for the whole
// tensor; with zero set, the middle channel's (or the only) range is
// min == max == 0.
func (c Config) Layout(r *rand.Rand, perChannel, fine bool) Layout {
	qmin, qmax := fqkern.QuantRange(c.Bits, c.Narrow)
	all := c.Kinds
	if len(all) == 0 {
		all = []RangeKind{Straddle}
	}
	d, kinds := 1, all[r.Intn(len(all)):][:1]
	if perChannel {
		d, kinds = c.Shape[len(c.Shape)-1], all
	}
	zero := -1
	if c.Zero {
		zero = d / 2
	}
	return NewLayout(r, c.Shape, d, kinds, qmin, qmax, fine, zero)
}

// Wrt returns the inputs to check: all (nil) for ordinary ranges, only
// nonZero (the gradient inputs and the inputs) when a range is min == max
// == 0.
func (c Config) Wrt(all, nonZero []int) []int {
	if c.Zero {
		return nonZero
	}
	return all
}

// ---------------------------------------------------------------------------
// An independent emulation of the spec: every operation in float64,
// rounded to float32 (for + − × ÷ of float32 operands this is the
// correctly rounded float32 result).

// R rounds v to float32 (the rounding of the float32 emulation).
func R(v float64) float64 { return float64(float32(v)) }

// RefNudge returns the nudged range, scale and inverse scale.
func RefNudge(mn, mx float64, bits int, narrow bool, round func(float64) float64) (nmin, nmax, scale, inv float64) {
	qmin := 0.0
	if narrow {
		qmin = 1
	}
	qmax := math.Exp2(float64(bits)) - 1
	scale = round(round(mx-mn) / (qmax - qmin))
	inv = round((qmax - qmin) / round(mx-mn))
	zpf := round(qmin - round(mn/scale))
	var zp float64
	switch {
	case zpf < qmin:
		zp = qmin
	case zpf > qmax:
		zp = qmax
	default:
		zp = math.Round(zpf)
	}
	return round((qmin - zp) * scale), round((qmax - zp) * scale), scale, inv
}

// RefQuant quantises x as the spec's §3 with the given rounding
// (R: float32; identity: float64); div selects the Vars form.
func RefQuant(x, mn, mx float64, bits int, narrow, div bool, round func(float64) float64) float64 {
	if mn == 0 && mx == 0 {
		return 0
	}
	nmin, nmax, scale, inv := RefNudge(mn, mx, bits, narrow, round)
	qz := math.Floor(round(round(-nmin*inv) + 0.5))
	xc := x
	if xc > nmax {
		xc = nmax
	}
	if xc < nmin {
		xc = nmin
	}
	var tt float64
	if div {
		tt = round(round(xc-nmin) / scale)
	} else {
		tt = round(round(xc-nmin) * inv)
	}
	return round(math.Floor(round(round(tt-qz)+0.5)) * scale)
}

// Ref32 is RefQuant in float32: the spec's float32 result.
func Ref32(x, mn, mx float32, bits int, narrow, div bool) float32 {
	return float32(RefQuant(float64(x), float64(mn), float64(mx), bits, narrow, div, R))
}

// RandomRange draws ranges of every kind, including degenerate ones TF
// does not check (min > max, min == max != 0).
func RandomRange(r *rand.Rand) (float32, float32) {
	a := float32(r.NormFloat64() * math.Exp2(float64(r.Intn(12)-6)))
	b := float32(r.NormFloat64() * math.Exp2(float64(r.Intn(12)-6)))
	switch r.Intn(10) {
	case 0:
		return a, a // min == max
	case 1:
		return max(a, b), min(a, b) // min > max
	case 2:
		return 0, float32(math.Abs(float64(b)))
	case 3:
		return -float32(math.Abs(float64(a))), 0
	}
	return min(a, b), max(a, b)
}

// RandomInputs draws inputs around [mn, mx]: grid points, exact half
// steps, bounds, values outside, ±Inf.
func RandomInputs(r *rand.Rand, n int, mn, mx float32) []float32 {
	x := make([]float32, n)
	w := float64(mx) - float64(mn)
	for i := range x {
		switch r.Intn(8) {
		case 0:
			x[i] = float32(math.Inf(2*r.Intn(2) - 1))
		case 1:
			x[i] = []float32{mn, mx, 0}[r.Intn(3)]
		case 2: // a tie of a 2..16-bit grid (exact halves when the grid is)
			x[i] = float32(float64(mn) + w*float64(2*r.Intn(64)+1)/128)
		default:
			x[i] = float32(float64(mn) + w*(1.4*r.Float64()-0.2))
		}
	}
	return x
}
