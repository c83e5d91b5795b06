package backward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Samples of FractionalMaxPoolGrad and tapegrad.FractionalMaxPoolGradGrad
// (the configurations of fractional_avg_pool_samples.go). Max pooling is
// piecewise linear: the samples use inputs whose values are pairwise at
// least 0.04 apart, far from ties at the finite-difference step, and the
// ops are checked with respect to their linear argument (out_backprop,
// grad) only — perturbing orig_input alone would make orig_output stale,
// which the ops refuse, as TensorFlow's does.

// fpMaxOf returns the max pooling of x with the given sequences (float64).
func fpMaxOf(x *tensor.Dense, rows, cols []int64, overlapping bool) *tensor.Dense {
	n, h, w, c := fpDims4(x)
	out := make([]float64, n*(len(rows)-1)*(len(cols)-1)*c)
	fracpool.MaxPool(out, tensorx.MustSlice[float64](x), n, h, w, c, rows, cols, overlapping, 1)
	d, _ := tensorx.New([]int{n, len(rows) - 1, len(cols) - 1, c}, out)
	return d
}

// fpMaxGradSamples are the samples of FractionalMaxPoolGrad.
func fpMaxGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		x := forward.SampleDistinct(r, c.shape...)
		y := fpMaxOf(x, c.rows, c.cols, c.overlapping)
		dy := forward.SampleNormal(r, tensorx.Shape(y)...)
		out = append(out, registry.Sample{Name: c.name, Attrs: forward.FractionalPoolGradAttrs{Overlapping: c.overlapping},
			Inputs: []*tensor.Dense{x, y, dy, rows, cols}, Wrt: []int{2}})
	}
	return out
}

// fpMaxGradGradSamples are the samples of tapegrad.FractionalMaxPoolGradGrad.
func fpMaxGradGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		x := forward.SampleDistinct(r, c.shape...)
		y := fpMaxOf(x, c.rows, c.cols, c.overlapping)
		g := forward.SampleNormal(r, c.shape...)
		out = append(out, registry.Sample{Name: c.name, Attrs: forward.FractionalPoolGradAttrs{Overlapping: c.overlapping},
			Inputs: []*tensor.Dense{x, y, g, rows, cols}, Wrt: []int{2}})
	}
	return out
}
