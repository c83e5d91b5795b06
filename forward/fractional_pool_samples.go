package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the fractional pooling family for the gradient
// sweep (cmd/gradcheck, go test ./backward) and the float32-vs-float64
// differential test.
//
// The forward ops draw random pooling sequences, so every sample either
// fixes the seeds (deterministic with non-zero seeds) or leaves them at 0
// and relies on the kernel context's random source, which the sweep seeds
// identically for every evaluation (gradcheck runs each evaluation on a
// fresh tape seeded with the same seed). Average pooling and its gradient
// ops are linear, so finite differences are exact everywhere. Max pooling
// is piecewise linear: its samples use inputs whose values are pairwise at
// least 0.04 apart, far from ties at the finite-difference step, and the
// max-pool gradient ops are checked with respect to their linear argument
// (out_backprop, grad) only — perturbing orig_input alone would make
// orig_output stale, which the ops refuse, as TensorFlow's does.

// fpSampleSeq draws the pooling sequence of an axis with a fixed-seed
// generator.
func fpSampleSeq(in, out int, pseudoRandom bool, seed uint64) []int64 {
	g := philox.New(seed, seed+1)
	s := make([]int64, out+1)
	fpSequence(in, out, &g, pseudoRandom, s)
	return s
}

// fpInt64s returns an int64 vector.
func fpInt64s(v ...int64) *tensor.Dense {
	d, _ := tensorx.New([]int{len(v)}, append([]int64(nil), v...))
	return d
}

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

// fpMaxOf returns the max pooling of x with the given sequences (float64).
func fpMaxOf(x *tensor.Dense, rows, cols []int64, overlapping bool) *tensor.Dense {
	n, h, w, c := fpDims4(x)
	out := make([]float64, n*(len(rows)-1)*(len(cols)-1)*c)
	fpMaxPool(1, data[float64](x), n, h, w, c, rows, cols, overlapping, out)
	d, _ := tensorx.New([]int{n, len(rows) - 1, len(cols) - 1, c}, out)
	return d
}

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

func fpAvgSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpForwardConfigs {
		out = append(out, registry.Sample{Name: c.name, Attrs: c.attrs, Inputs: []*tensor.Dense{randDense(r, c.shape...)}})
	}
	return out
}

func fpMaxSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpForwardConfigs {
		out = append(out, registry.Sample{Name: c.name, Attrs: c.attrs, Inputs: []*tensor.Dense{fpDistinct(r, c.shape...)}})
	}
	return out
}

// fpGradConfig is an input shape with the sequences of a grad-op sample.
type fpGradConfig struct {
	name        string
	shape       []int // NHWC of the pooled input
	rows, cols  []int64
	extra       int // entries appended to the sequences beyond the ones read
	overlapping bool
	dyBatch     int // FractionalAvgPoolGrad: out_backprop batch if > 0 (smaller than the input's)
}

func fpGradConfigs() []fpGradConfig {
	return []fpGradConfig{
		{name: "spec-overlap-5x5", shape: []int{1, 5, 5, 1}, rows: []int64{0, 2, 5}, cols: []int64{0, 2, 5}, overlapping: true},
		{name: "random-disjoint", shape: []int{2, 7, 6, 3}, rows: fpSampleSeq(7, 4, false, 11), cols: fpSampleSeq(6, 4, true, 12)},
		{name: "pseudo-overlap-long-seqs", shape: []int{1, 9, 8, 2}, rows: fpSampleSeq(9, 4, true, 13), cols: fpSampleSeq(8, 5, false, 14),
			extra: 2, overlapping: true},
		{name: "uncovered-last-col", shape: []int{2, 1, 5, 2}, rows: []int64{0, 1}, cols: []int64{0, 2, 4}},
		{name: "overlap-one-cell", shape: []int{1, 3, 2, 3}, rows: []int64{0, 3}, cols: []int64{0, 2}, overlapping: true},
		{name: "smaller-grad-batch", shape: []int{3, 5, 4, 2}, rows: []int64{0, 2, 5}, cols: []int64{0, 1, 3, 4}, overlapping: true, dyBatch: 2},
	}
}

// seqs returns the sample's sequence tensors, with c.extra trailing
// entries that the ops must ignore.
func (c fpGradConfig) seqs() (rows, cols *tensor.Dense) {
	pad := func(s []int64) []int64 {
		s = append([]int64(nil), s...)
		for i := 0; i < c.extra; i++ {
			s = append(s, int64(100-i))
		}
		return s
	}
	return fpInt64s(pad(c.rows)...), fpInt64s(pad(c.cols)...)
}

func fpAvgGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		shape := make([]int64, 4)
		for i, v := range c.shape {
			shape[i] = int64(v)
		}
		nd := c.shape[0]
		if c.dyBatch > 0 {
			nd = c.dyBatch
		}
		dy := randDense(r, nd, len(c.rows)-1, len(c.cols)-1, c.shape[3])
		out = append(out, registry.Sample{Name: c.name, Attrs: FractionalPoolGradAttrs{Overlapping: c.overlapping},
			Inputs: []*tensor.Dense{fpInt64s(shape...), dy, rows, cols}})
	}
	return out
}

func fpAvgSeqSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		a := FractionalPoolSeqAttrs{Overlapping: c.overlapping, OutputBatch: c.dyBatch}
		if c.extra > 0 {
			a.OutputRows, a.OutputCols = len(c.rows)-1, len(c.cols)-1
		}
		out = append(out, registry.Sample{Name: c.name, Attrs: a, Inputs: []*tensor.Dense{randDense(r, c.shape...), rows, cols}})
	}
	return out
}

func fpMaxGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		x := fpDistinct(r, c.shape...)
		y := fpMaxOf(x, c.rows, c.cols, c.overlapping)
		dy := randDense(r, tensorx.Shape(y)...)
		out = append(out, registry.Sample{Name: c.name, Attrs: FractionalPoolGradAttrs{Overlapping: c.overlapping},
			Inputs: []*tensor.Dense{x, y, dy, rows, cols}, Wrt: []int{2}})
	}
	return out
}

func fpMaxGradGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		x := fpDistinct(r, c.shape...)
		y := fpMaxOf(x, c.rows, c.cols, c.overlapping)
		g := randDense(r, c.shape...)
		out = append(out, registry.Sample{Name: c.name, Attrs: FractionalPoolGradAttrs{Overlapping: c.overlapping},
			Inputs: []*tensor.Dense{x, y, g, rows, cols}, Wrt: []int{2}})
	}
	return out
}
