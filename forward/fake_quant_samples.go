package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/fqkern/fqref"
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
// (gradcheck.CheckSurrogateFunc). The gradient ops' samples are in
// package backward; the layouts are package fqref's.
//

// fqConfigAttrs returns the attrs of a sample configuration.
func fqConfigAttrs(c fqref.Config) FakeQuantAttrs {
	return FakeQuantAttrs{NumBits: c.Bits, NarrowRange: c.Narrow}
}

// fqForwardSamples builds fine-grid samples of a Vars or PerChannel op.
func fqForwardSamples(r *rand.Rand, perChannel bool) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqref.FineConfigs {
		l := c.Layout(r, perChannel, true)
		mn, mx := l.RangeTensors(!perChannel)
		out = append(out, registry.Sample{
			Name: "fine-" + c.Name, Attrs: fqConfigAttrs(c),
			Inputs: []*tensor.Dense{fqref.Tensor(c.Shape, l.X), mn, mx},
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
	for _, c := range fqref.FineConfigs {
		qmin, qmax := fqkern.QuantRange(c.Bits, c.Narrow)
		lo, hi := fqref.SampleRange(r, fqref.Straddle, float64(qmax-qmin)*5e-10, qmin, qmax)
		lo32, hi32 := float32(lo), float32(hi)
		g := fqkern.Nudge(float64(lo32), float64(hi32), qmin, qmax)
		x := make([]float64, fqref.Numel(c.Shape))
		for i := range x {
			x[i] = fqref.SampleValue(r, g.NMin, g.NMax, 5*fqref.SampleEps)
		}
		out = append(out, registry.Sample{
			Name:   "fine-" + c.Name,
			Attrs:  FakeQuantArgsAttrs{Min: &lo32, Max: &hi32, NumBits: c.Bits, NarrowRange: c.Narrow},
			Inputs: []*tensor.Dense{fqref.Tensor(c.Shape, x)},
			Atol:   3e-3, Rtol: 3e-3,
		})
	}
	return out
}
