package backward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/fqkern/fqref"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the fake-quant family's gradient ops for the
// gradient sweep (cmd/gradcheck, go test ./backward), which checks
// gradients against central finite differences (eps 1e-6); the forward
// ops' samples are in forward/fake_quant_samples.go, the layouts in
// package fqref.
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

// fqConfigAttrs returns the attrs of a sample configuration.
func fqConfigAttrs(c fqref.Config) forward.FakeQuantAttrs {
	return forward.FakeQuantAttrs{NumBits: c.Bits, NarrowRange: c.Narrow}
}

// fqArgsGradSamples: coarse grids; linear in gradients, constant in inputs.
func fqArgsGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqref.CoarseConfigs {
		if c.Zero { // Args has no zero range (min < max is required)
			continue
		}
		qmin, qmax := fqkern.QuantRange(c.Bits, c.Narrow)
		kinds := c.Kinds[r.Intn(len(c.Kinds)):][:1]
		lo, hi := fqref.SampleRange(r, kinds[0], 0.5+2.5*r.Float64(), qmin, qmax)
		lo32, hi32 := float32(lo), float32(hi)
		g := fqkern.Nudge(float64(lo32), float64(hi32), qmin, qmax)
		x := make([]float64, fqref.Numel(c.Shape))
		for i := range x {
			x[i] = fqref.SampleValue(r, g.NMin, g.NMax, 0.02*(hi-lo))
		}
		out = append(out, registry.Sample{
			Name:   c.Name,
			Attrs:  forward.FakeQuantArgsAttrs{Min: &lo32, Max: &hi32, NumBits: c.Bits, NarrowRange: c.Narrow},
			Inputs: []*tensor.Dense{fqref.Tensor(c.Shape, fqref.Normal(r, len(x))), fqref.Tensor(c.Shape, x)},
		})
	}
	return out
}

// fqGradOpSamples builds samples of a Vars or PerChannel gradient op.
func fqGradOpSamples(r *rand.Rand, perChannel bool) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqref.CoarseConfigs {
		l := c.Layout(r, perChannel, false)
		mn, mx := l.RangeTensors(!perChannel)
		out = append(out, registry.Sample{
			Name: c.Name, Attrs: fqConfigAttrs(c),
			Inputs: []*tensor.Dense{fqref.Tensor(c.Shape, fqref.Normal(r, len(l.X))), fqref.Tensor(c.Shape, l.X), mn, mx},
			Wrt:    c.Wrt(nil, []int{0, 1}),
		})
	}
	return out
}

func fqChannelGradSamples(r *rand.Rand) []registry.Sample { return fqGradOpSamples(r, true) }
func fqVarsGradSamples(r *rand.Rand) []registry.Sample    { return fqGradOpSamples(r, false) }

// fqAdjSamples builds samples of a tapegrad adjoint op.
func fqAdjSamples(r *rand.Rand, perChannel bool) []registry.Sample {
	var out []registry.Sample
	for _, c := range fqref.CoarseConfigs {
		l := c.Layout(r, perChannel, false)
		mn, mx := l.RangeTensors(!perChannel)
		rshape := []int{l.D}
		if !perChannel {
			rshape = nil
		}
		out = append(out, registry.Sample{
			Name: c.Name, Attrs: fqConfigAttrs(c),
			Inputs: []*tensor.Dense{
				fqref.Tensor(c.Shape, fqref.Normal(r, len(l.X))), fqref.Tensor(rshape, fqref.Normal(r, l.D)), fqref.Tensor(rshape, fqref.Normal(r, l.D)),
				fqref.Tensor(c.Shape, l.X), mn, mx,
			},
			Wrt: c.Wrt(nil, []int{0, 1, 2, 3}),
		})
	}
	return out
}

func fqChannelAdjSamples(r *rand.Rand) []registry.Sample { return fqAdjSamples(r, true) }
func fqVarsAdjSamples(r *rand.Rand) []registry.Sample    { return fqAdjSamples(r, false) }
