package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Samples of FractionalMaxPool (see fractional_avg_pool_samples.go): the
// configurations of FractionalAvgPool's on inputs without ties.

// fpDistinct returns a float64 tensor whose values are pairwise at least
// 0.04 apart (a shuffled grid with a little jitter).
func fpDistinct(r *rand.Rand, shape ...int) *tensor.Dense {
	n, _ := tensorx.Numel(shape)
	v := make([]float64, n)
	for i, p := range r.Perm(n) {
		v[i] = (float64(p)-float64(n)/2)*0.05 + 0.01*r.Float64()
	}
	d, _ := tensorx.New(shape, v)
	return d
}

// fpMaxSamples are the samples of FractionalMaxPool.
func fpMaxSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpForwardConfigs {
		out = append(out, registry.Sample{Name: c.name, Attrs: c.attrs, Inputs: []*tensor.Dense{fpDistinct(r, c.shape...)}})
	}
	return out
}
