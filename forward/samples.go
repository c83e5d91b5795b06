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
