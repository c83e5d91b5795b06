package forward

import (
	"math"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the fake-quant family for the gradient sweep
// (cmd/gradcheck, go test ./backward), which checks gradients against
// central finite differences (eps 1e-6).
//
// The forward ops are piecewise constant: their finite differences are 0
// almost everywhere, while TensorFlow's gradient is the straight-through
// estimator of the clip surrogate clamp(x, nudged_min, nudged_max). The
// sweep can still check them numerically on a grid much finer than the
// finite-difference step: with num_bits 15 or 16 and a range of width
// ~(2^num_bits)·5e-10, the grid step is ~5e-10, the quantiser stays within
// half a step of the clip surrogate, and the central difference of the
// quantiser over ±1e-6 equals the surrogate's derivative (1 inside the
// range; d nudged_min/d min = 1 below it, d nudged_max/d max = 1 above it;
// 0 elsewhere) to within step/(2·eps) ≈ 2.5e-4 per element. The inputs stay
// at least 5e-6 away from the nudged bounds, so no perturbation of x, min or
// max moves an element across a bound, and the samples loosen Atol/Rtol to
// 3e-3 for the accumulated step error (a wrong mask is an error of order
// 1). The ranges straddle 0 (see fqFineConfigs). Coarse grids (num_bits
// 2..14), ranges that do not straddle 0 and the min == max == 0 case cannot
// be checked this way; the tests in package backward check them exactly
// against TensorFlow's rule (gradcheck.CheckSurrogate) and, away from the
// bounds, against the finite differences of the clip function
// (gradcheck.CheckSurrogateFunc).
//
// The gradient ops and the tapegrad adjoint ops are linear in their
// gradient inputs and piecewise constant in inputs/min/max, so finite
// differences are exact for them at every num_bits, as long as no element
// lies near a nudged bound and the zero point is not near a rounding tie
// (a perturbation of min or max would then move the grid by a whole step).
// Their samples cover every num_bits class, narrow_range, ranges that
// straddle 0, lie above it or below it, ranks 1..4, and the min == max == 0
// case (checked with respect to the gradients and the inputs only: a
// perturbation of a zero range changes the mask discontinuously).

// fqSampleEps is the finite-difference step the samples are laid out for.
const fqSampleEps = 1e-6

// fqRangeKind says where a sampled range lies relative to 0.
type fqRangeKind int

const (
	fqStraddle fqRangeKind = iota // min < 0 < max
	fqPositive                    // 0 < min < max: nudged to [0, max − min]
	fqNegative                    // min < max < 0: nudged to [min − max, 0]
)

// fqSampleRange draws a range [min, max] of the given kind and width for
// num_bits/narrow whose zero point (when not clamped) is at least 0.2 away
// from a rounding tie, so that perturbing min or max by eps does not move
// the nudged grid by a step.
func fqSampleRange(r *rand.Rand, kind fqRangeKind, width float64, qmin, qmax int) (float64, float64) {
	for {
		var lo float64
		switch kind {
		case fqStraddle:
			lo = -width * (0.15 + 0.7*r.Float64())
		case fqPositive:
			lo = width * (0.1 + 0.5*r.Float64())
		default:
			lo = -width * (1.1 + 0.5*r.Float64())
		}
		hi := lo + width
		scale := (hi - lo) / float64(qmax-qmin)
		zp := float64(qmin) - lo/scale
		if kind != fqStraddle || math.Abs(zp-math.Floor(zp)-0.5) > 0.2 && zp > float64(qmin)+0.5 && zp < float64(qmax)-0.5 {
			return lo, hi
		}
	}
}

// fqSampleValue draws an input for a channel with nudged range [nmin,
// nmax]: inside it (at least gap from both bounds) with probability 1/2,
// else below or above it by at least gap.
func fqSampleValue(r *rand.Rand, nmin, nmax, gap float64) float64 {
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

// fqLayout is one sampled configuration: the inputs (of shape) and one
// range per channel of the last axis (d = 1 for the per-tensor ops).
type fqLayout struct {
	x, mins, maxs []float64
	shape         []int
	d             int
}

// fqSampleLayout draws the ranges and inputs of a configuration. kinds
// gives the range kind of each channel (cycled); zeroChan >= 0 makes that
// channel's range min == max == 0. fine selects the fine-grid layout of
// the forward ops.
func fqSampleLayout(r *rand.Rand, shape []int, d int, kinds []fqRangeKind, qmin, qmax int, fine bool, zeroChan int) fqLayout {
	l := fqLayout{x: make([]float64, fqNumel(shape)), mins: make([]float64, d), maxs: make([]float64, d), shape: shape, d: d}
	grids := make([]fqGrid[float64], d)
	gaps := make([]float64, d)
	for c := 0; c < d; c++ {
		width := 0.5 + 2.5*r.Float64()
		if fine {
			width = float64(qmax-qmin) * 5e-10
		}
		if c == zeroChan {
			grids[c] = fqNudge(0.0, 0.0, qmin, qmax)
			continue
		}
		l.mins[c], l.maxs[c] = fqSampleRange(r, kinds[c%len(kinds)], width, qmin, qmax)
		grids[c] = fqNudge(l.mins[c], l.maxs[c], qmin, qmax)
		gaps[c] = math.Max(5*fqSampleEps, 0.02*width)
		if fine {
			gaps[c] = 5 * fqSampleEps
		}
	}
	for i := range l.x {
		c := i % d
		if c == zeroChan {
			l.x[i] = 2*r.Float64() - 1
			continue
		}
		l.x[i] = fqSampleValue(r, grids[c].nmin, grids[c].nmax, gaps[c])
	}
	return l
}

// fqNumel returns the element count of a sample shape.
func fqNumel(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// fqNormal returns n standard normal values.
func fqNormal(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

// fqTensor wraps sample data (shape validated by construction).
func fqTensor(shape []int, v []float64) *tensor.Dense {
	d, err := tensorx.New(shape, v)
	if err != nil {
		panic("forward: bad fake-quant sample: " + err.Error())
	}
	return d
}

// rangeTensors returns the min and max tensors of a layout: [d], or
// scalars when scalar is set (d must be 1).
func (l fqLayout) rangeTensors(scalar bool) (*tensor.Dense, *tensor.Dense) {
	if scalar {
		return fqTensor(nil, l.mins[:1]), fqTensor(nil, l.maxs[:1])
	}
	return fqTensor([]int{l.d}, l.mins), fqTensor([]int{l.d}, l.maxs)
}

// fqConfig is one attr/shape configuration of the samples.
type fqConfig struct {
	name   string
	bits   int
	narrow bool
	shape  []int
	kinds  []fqRangeKind // range kinds, cycled over channels (nil: straddle)
	zero   bool          // a min == max == 0 channel (the whole range for scalars)
}

var fqAllKinds = []fqRangeKind{fqStraddle, fqPositive, fqNegative}

// fqFineConfigs are the forward ops' fine-grid configurations. Their
// ranges straddle 0: only then are the nudged bounds within half a step of
// min and max, so that TensorFlow's min/max gradients (1 per element below
// / above) are the derivatives of the clip surrogate. (For a range above
// 0, nudged_min is 0 whatever min is, and nudged_max = max − min moves
// with min: TensorFlow's rule is then no derivative of anything.)
var fqFineConfigs = []fqConfig{
	{name: "b16-rank1", bits: 16, shape: []int{5}},
	{name: "b16-narrow-rank2", bits: 16, narrow: true, shape: []int{3, 4}},
	{name: "b15-rank3", bits: 15, shape: []int{2, 2, 3}},
	{name: "b16-rank4", bits: 16, shape: []int{1, 2, 2, 3}},
	{name: "b15-narrow-rank2-1ch", bits: 15, narrow: true, shape: []int{6, 1}},
}

// fqCoarseConfigs are the gradient and adjoint ops' configurations.
var fqCoarseConfigs = []fqConfig{
	{name: "b2-rank1", bits: 2, shape: []int{4}, kinds: fqAllKinds},
	{name: "b3-narrow-rank2", bits: 3, narrow: true, shape: []int{3, 5}, kinds: fqAllKinds},
	{name: "b4-rank4", bits: 4, shape: []int{2, 1, 2, 3}, kinds: fqAllKinds},
	{name: "b5-narrow-rank3", bits: 5, narrow: true, shape: []int{2, 3, 2}, kinds: []fqRangeKind{fqPositive, fqNegative}},
	{name: "b7-rank2", bits: 7, shape: []int{4, 3}, kinds: []fqRangeKind{fqStraddle}},
	{name: "b8-rank2", bits: 8, shape: []int{5, 3}, kinds: fqAllKinds},
	{name: "b8-narrow-rank2", bits: 8, narrow: true, shape: []int{4, 2}, kinds: fqAllKinds},
	{name: "b12-rank3", bits: 12, shape: []int{2, 2, 3}, kinds: fqAllKinds},
	{name: "b16-narrow-rank1", bits: 16, narrow: true, shape: []int{6}, kinds: fqAllKinds},
	{name: "b16-rank2", bits: 16, shape: []int{3, 2}, kinds: []fqRangeKind{fqStraddle}},
	{name: "b8-zero-range", bits: 8, shape: []int{3, 3}, kinds: fqAllKinds, zero: true},
}

// layout draws the ranges and inputs of the configuration: one range
// per channel of the last axis (perChannel) or one range for the whole
// tensor; with zero set, the middle channel's (or the only) range is
// min == max == 0.
func (c fqConfig) layout(r *rand.Rand, perChannel, fine bool) fqLayout {
	qmin, qmax := fqQuantRange(c.bits, c.narrow)
	all := c.kinds
	if len(all) == 0 {
		all = []fqRangeKind{fqStraddle}
	}
	d, kinds := 1, all[r.Intn(len(all)):][:1]
	if perChannel {
		d, kinds = c.shape[len(c.shape)-1], all
	}
	zero := -1
	if c.zero {
		zero = d / 2
	}
	return fqSampleLayout(r, c.shape, d, kinds, qmin, qmax, fine, zero)
}

func (c fqConfig) attrs() FakeQuantAttrs {
	return FakeQuantAttrs{NumBits: c.bits, NarrowRange: c.narrow}
}

// wrt returns the inputs to check: all (nil) for ordinary ranges, only
// nonZero (the gradient inputs and the inputs) when a range is min == max
// == 0.
func (c fqConfig) wrt(all, nonZero []int) []int {
	if c.zero {
		return nonZero
	}
	return all
}

// fqForwardSamples builds fine-grid samples of a Vars or PerChannel op.
func fqForwardSamples(r *rand.Rand, perChannel bool) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqFineConfigs {
		l := c.layout(r, perChannel, true)
		mn, mx := l.rangeTensors(!perChannel)
		out = append(out, registry.Sample{
			Name: "fine-" + c.name, Attrs: c.attrs(),
			Inputs: []*tensor.Dense{fqTensor(c.shape, l.x), mn, mx},
			Atol:   3e-3, Rtol: 3e-3,
		})
	}
	return out
}

func fqChannelSamples(r *rand.Rand) []registry.Sample { return fqForwardSamples(r, true) }
func fqVarsSamples(r *rand.Rand) []registry.Sample    { return fqForwardSamples(r, false) }

// fqArgsSamples: fine grids with the range in the attrs (float32 values).
func fqArgsSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqFineConfigs {
		qmin, qmax := fqQuantRange(c.bits, c.narrow)
		lo, hi := fqSampleRange(r, fqStraddle, float64(qmax-qmin)*5e-10, qmin, qmax)
		lo32, hi32 := float32(lo), float32(hi)
		g := fqNudge(float64(lo32), float64(hi32), qmin, qmax)
		x := make([]float64, fqNumel(c.shape))
		for i := range x {
			x[i] = fqSampleValue(r, g.nmin, g.nmax, 5*fqSampleEps)
		}
		out = append(out, registry.Sample{
			Name:   "fine-" + c.name,
			Attrs:  FakeQuantArgsAttrs{Min: &lo32, Max: &hi32, NumBits: c.bits, NarrowRange: c.narrow},
			Inputs: []*tensor.Dense{fqTensor(c.shape, x)},
			Atol:   3e-3, Rtol: 3e-3,
		})
	}
	return out
}

// fqArgsGradSamples: coarse grids; linear in gradients, constant in inputs.
func fqArgsGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqCoarseConfigs {
		if c.zero { // Args has no zero range (min < max is required)
			continue
		}
		qmin, qmax := fqQuantRange(c.bits, c.narrow)
		kinds := c.kinds[r.Intn(len(c.kinds)):][:1]
		lo, hi := fqSampleRange(r, kinds[0], 0.5+2.5*r.Float64(), qmin, qmax)
		lo32, hi32 := float32(lo), float32(hi)
		g := fqNudge(float64(lo32), float64(hi32), qmin, qmax)
		x := make([]float64, fqNumel(c.shape))
		for i := range x {
			x[i] = fqSampleValue(r, g.nmin, g.nmax, 0.02*(hi-lo))
		}
		out = append(out, registry.Sample{
			Name:   c.name,
			Attrs:  FakeQuantArgsAttrs{Min: &lo32, Max: &hi32, NumBits: c.bits, NarrowRange: c.narrow},
			Inputs: []*tensor.Dense{fqTensor(c.shape, fqNormal(r, len(x))), fqTensor(c.shape, x)},
		})
	}
	return out
}

// fqGradOpSamples builds samples of a Vars or PerChannel gradient op.
func fqGradOpSamples(r *rand.Rand, perChannel bool) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqCoarseConfigs {
		l := c.layout(r, perChannel, false)
		mn, mx := l.rangeTensors(!perChannel)
		out = append(out, registry.Sample{
			Name: c.name, Attrs: c.attrs(),
			Inputs: []*tensor.Dense{fqTensor(c.shape, fqNormal(r, len(l.x))), fqTensor(c.shape, l.x), mn, mx},
			Wrt:    c.wrt(nil, []int{0, 1}),
		})
	}
	return out
}

func fqChannelGradSamples(r *rand.Rand) []registry.Sample { return fqGradOpSamples(r, true) }
func fqVarsGradSamples(r *rand.Rand) []registry.Sample    { return fqGradOpSamples(r, false) }

// fqAdjSamples builds samples of a tapegrad adjoint op.
func fqAdjSamples(r *rand.Rand, perChannel bool) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqCoarseConfigs {
		l := c.layout(r, perChannel, false)
		mn, mx := l.rangeTensors(!perChannel)
		rshape := []int{l.d}
		if !perChannel {
			rshape = nil
		}
		out = append(out, registry.Sample{
			Name: c.name, Attrs: c.attrs(),
			Inputs: []*tensor.Dense{
				fqTensor(c.shape, fqNormal(r, len(l.x))), fqTensor(rshape, fqNormal(r, l.d)), fqTensor(rshape, fqNormal(r, l.d)),
				fqTensor(c.shape, l.x), mn, mx,
			},
			Wrt: c.wrt(nil, []int{0, 1, 2, 3}),
		})
	}
	return out
}

func fqChannelAdjSamples(r *rand.Rand) []registry.Sample { return fqAdjSamples(r, true) }
func fqVarsAdjSamples(r *rand.Rand) []registry.Sample    { return fqAdjSamples(r, false) }
