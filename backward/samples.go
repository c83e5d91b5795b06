package backward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the gradient kernels registered here, for gradient
// sweeps (cmd/gradcheck and the sweep test). Inputs stay away from the
// kinks of the ops the kernels differentiate (Relu at 0, Relu6 at 0 and
// 6) and from singular values (y near 0 for SqrtGrad and RsqrtGrad), so
// that central differences are valid.

// mustSample panics on a malformed sample tensor (a bug in a generator).
func mustSample(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic("backward: bad sample tensor: " + err.Error())
	}
	return d
}

// genSample returns a float64 tensor of the given shape with values from
// gen.
func genSample(shape []int, gen func() float64) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("backward: bad sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = gen()
	}
	return mustSample(tensorx.New(shape, v))
}

// uniformGen returns a generator of values uniform in [lo, hi).
func uniformGen(r *rand.Rand, lo, hi float64) func() float64 {
	return func() float64 { return lo + (hi-lo)*r.Float64() }
}

// awayFromZeroGen returns values with |v| in [lo, hi) and a random sign.
func awayFromZeroGen(r *rand.Rand, lo, hi float64) func() float64 {
	return func() float64 {
		v := lo + (hi-lo)*r.Float64()
		if r.Intn(2) == 0 {
			v = -v
		}
		return v
	}
}

// relu6Gen returns values in [-2, 8) at least 0.1 away from 0 and 6.
func relu6Gen(r *rand.Rand) func() float64 {
	return func() float64 {
		for {
			v := -2 + 10*r.Float64()
			if (v < -0.1 || v > 0.1) && (v < 5.9 || v > 6.1) {
				return v
			}
		}
	}
}

// ewGradShapes are the input shapes of the elementwise gradient kernels'
// samples.
var ewGradShapes = [][]int{{}, {5}, {2, 3}, {2, 1, 3}}

// ewGradSamples returns the sample generator of an elementwise gradient
// kernel (two inputs of equal shapes).
func ewGradSamples(op string) func(r *rand.Rand) []registry.Sample {
	return func(r *rand.Rand) []registry.Sample {
		var g0, g1 func() float64
		up := uniformGen(r, -1, 1)
		switch op {
		case OpSqrtGrad:
			g0, g1 = uniformGen(r, 0.5, 2), up // y = sqrt(x) > 0
		case OpRsqrtGrad:
			g0, g1 = uniformGen(r, 0.5, 1.5), up
		case OpSigmoidGrad:
			g0, g1 = uniformGen(r, 0.1, 0.9), up // y in (0, 1)
		case OpTanhGrad:
			g0, g1 = uniformGen(r, -0.9, 0.9), up // y in (-1, 1)
		case OpReluGrad:
			g0, g1 = up, awayFromZeroGen(r, 0.1, 2)
		case OpRelu6Grad:
			g0, g1 = up, relu6Gen(r)
		default:
			panic("backward: no sample values for " + op)
		}
		var out []registry.Sample
		for _, s := range ewGradShapes {
			out = append(out, registry.Sample{Name: fmt.Sprintf("%v", s),
				Inputs: []*tensor.Dense{genSample(s, g0), genSample(s, g1)}})
		}
		return out
	}
}
