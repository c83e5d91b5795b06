package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// Samples of FractionalMaxPool (see fractional_avg_pool_samples.go): the
// configurations of FractionalAvgPool's on inputs without ties.

// fpMaxSamples are the samples of FractionalMaxPool.
func fpMaxSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpForwardConfigs {
		out = append(out, registry.Sample{Name: c.name, Attrs: c.attrs, Inputs: []*tensor.Dense{SampleDistinct(r, c.shape...)}})
	}
	return out
}
