package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// PoolConfig is one pooling configuration of the samples of MaxPool,
// AvgPool and their gradient ops: the input shape (in the attrs' data
// format) and the attrs.
type PoolConfig struct {
	// Name describes the configuration.
	Name string
	// Shape is the input's shape, in Attrs.DataFormat.
	Shape []int
	// Attrs are the pooling attrs.
	Attrs PoolAttrs
}

// PoolConfigs are the pooling sample configurations: NHWC and NCHW, VALID
// and SAME (odd total padding, the extra after), overlapping windows
// (stride < ksize), strides larger than the window, unequal sizes.
func PoolConfigs() []PoolConfig {
	nhwc := func(name string, shape []int, kh, kw, sh, sw int, padding string) PoolConfig {
		return PoolConfig{name, shape, PoolAttrs{Ksize: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1}, Padding: padding}}
	}
	nchw := func(name string, shape []int, kh, kw, sh, sw int, padding string) PoolConfig {
		return PoolConfig{name, shape, PoolAttrs{Ksize: []int{1, 1, kh, kw}, Strides: []int{1, 1, sh, sw}, Padding: padding, DataFormat: "NCHW"}}
	}
	return []PoolConfig{
		nhwc("nhwc-valid-k2s2", []int{2, 4, 4, 2}, 2, 2, 2, 2, "VALID"),
		nhwc("nhwc-same-k3s2", []int{1, 5, 4, 2}, 3, 3, 2, 2, "SAME"),
		nchw("nchw-same-k2s1", []int{2, 2, 3, 3}, 2, 2, 1, 1, "SAME"),
		nhwc("nhwc-valid-k3x2-s1x2", []int{1, 4, 5, 3}, 3, 2, 1, 2, "VALID"),
		nchw("nchw-valid-k1s3", []int{1, 2, 5, 4}, 1, 1, 3, 3, "VALID"),
		nhwc("nhwc-same-k4s3", []int{2, 3, 3, 1}, 4, 4, 3, 3, "SAME"),
	}
}

// maxPoolSamples draw inputs whose values are pairwise at least 0.04
// apart: max pooling is piecewise linear, and the finite differences must
// not cross a tie.
func maxPoolSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range PoolConfigs() {
		out = append(out, registry.Sample{Name: c.Name, Attrs: c.Attrs, Inputs: []*tensor.Dense{SampleDistinct(r, c.Shape...)}})
	}
	return out
}

func avgPoolSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range PoolConfigs() {
		out = append(out, registry.Sample{Name: c.Name, Attrs: c.Attrs, Inputs: []*tensor.Dense{SampleNormal(r, c.Shape...)}})
	}
	return out
}
