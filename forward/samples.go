package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// SampleNormal returns a float64 tensor of the given shape with N(0, 1)
// entries drawn from r in order, for op samples (packages forward and
// backward). It panics on a shape that cannot be allocated (a bug in a
// sample table).
func SampleNormal(r *rand.Rand, shape ...int) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		panic("forward: bad sample tensor: " + err.Error())
	}
	return d
}

// SampleDistinct returns a float64 tensor of the given shape whose values
// are pairwise at least 0.04 apart (a shuffled grid with a little jitter),
// for the samples of piecewise linear ops such as max pooling: far from
// ties at a finite-difference step.
func SampleDistinct(r *rand.Rand, shape ...int) *tensor.Dense {
	n, _ := tensorx.Numel(shape)
	v := make([]float64, n)
	for i, p := range r.Perm(n) {
		v[i] = (float64(p)-float64(n)/2)*0.05 + 0.01*r.Float64()
	}
	d, _ := tensorx.New(shape, v)
	return d
}
