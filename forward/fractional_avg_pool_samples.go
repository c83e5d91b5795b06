package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of FractionalAvgPool and FractionalMaxPool for the
// gradient sweep (cmd/gradcheck, go test ./backward) and the
// float32-vs-float64 differential test; those of the gradient ops are in
// package backward.
//
// The forward ops draw random pooling sequences, so every sample either
// fixes the seeds (deterministic with non-zero seeds) or leaves them at 0
// and relies on the kernel context's random source, which the sweep seeds
// identically for every evaluation (gradcheck runs each evaluation on a
// fresh tape seeded with the same seed). Average pooling is linear, so
// finite differences are exact everywhere. Max pooling is piecewise
// linear: its samples use inputs whose values are pairwise at least 0.04
// apart, far from ties at the finite-difference step.

// fpForwardConfigs are the configurations shared by the FractionalAvgPool
// and FractionalMaxPool samples: both sequence modes, both cell kinds,
// fixed seeds and seeds drawn from the context's source, ratios that do
// and do not divide the input, a single cell per axis.
var fpForwardConfigs = []struct {
	name  string
	shape []int
	attrs FractionalPoolAttrs
}{
	{"random-disjoint-1.5x1.44", []int{2, 7, 6, 3},
		FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.44, 1}, Deterministic: true, Seed: 3, Seed2: 5}},
	{"pseudo-overlap-2.3x1.2", []int{1, 9, 5, 2},
		FractionalPoolAttrs{PoolingRatio: []float32{1, 2.3, 1.2, 1}, PseudoRandom: true, Overlapping: true, Deterministic: true, Seed: 7}},
	{"random-overlap-context-seeds", []int{2, 5, 8, 1},
		FractionalPoolAttrs{PoolingRatio: []float32{1, 1, 3, 1}, Overlapping: true}},
	{"pseudo-disjoint-2x2", []int{1, 6, 6, 4},
		FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}, PseudoRandom: true, Deterministic: true, Seed: 1, Seed2: 1}},
	{"pseudo-overlap-deterministic-seed0", []int{3, 4, 7, 2},
		FractionalPoolAttrs{PoolingRatio: []float32{1, 1.7, 1.9, 1}, PseudoRandom: true, Overlapping: true, Deterministic: true}},
	{"random-disjoint-one-cell", []int{1, 3, 4, 2},
		FractionalPoolAttrs{PoolingRatio: []float32{1, 3, 4, 1}, Deterministic: true, Seed: -9, Seed2: 4}},
}

// fpAvgSamples are the samples of FractionalAvgPool.
func fpAvgSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpForwardConfigs {
		out = append(out, registry.Sample{Name: c.name, Attrs: c.attrs, Inputs: []*tensor.Dense{SampleNormal(r, c.shape...)}})
	}
	return out
}
