package backward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the fractional pooling family's gradient ops for
// the gradient sweep (cmd/gradcheck, go test ./backward) and the
// float32-vs-float64 differential test, on hand-written and generated
// sequences (see forward/fractional_avg_pool_samples.go for the forward
// ops'). FractionalAvgPoolGrad and tapegrad.FractionalAvgPoolWithSequences
// are linear, so finite differences are exact everywhere.

// fpSampleSeq draws the pooling sequence of an axis with a fixed-seed
// generator.
func fpSampleSeq(in, out int, pseudoRandom bool, seed uint64) []int64 {
	g := philox.New(seed, seed+1)
	s := make([]int64, out+1)
	fracpool.Sequence(s, in, out, &g, pseudoRandom)
	return s
}

// fpInt64s returns an int64 vector.
func fpInt64s(v ...int64) *tensor.Dense {
	d, _ := tensorx.New([]int{len(v)}, append([]int64(nil), v...))
	return d
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

// fpAvgGradSamples are the samples of FractionalAvgPoolGrad.
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
		dy := forward.SampleNormal(r, nd, len(c.rows)-1, len(c.cols)-1, c.shape[3])
		out = append(out, registry.Sample{Name: c.name, Attrs: forward.FractionalPoolGradAttrs{Overlapping: c.overlapping},
			Inputs: []*tensor.Dense{fpInt64s(shape...), dy, rows, cols}})
	}
	return out
}

// fpAvgSeqSamples are the samples of tapegrad.FractionalAvgPoolWithSequences.
func fpAvgSeqSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, c := range fpGradConfigs() {
		rows, cols := c.seqs()
		a := forward.FractionalPoolSeqAttrs{Overlapping: c.overlapping, OutputBatch: c.dyBatch}
		if c.extra > 0 {
			a.OutputRows, a.OutputCols = len(c.rows)-1, len(c.cols)-1
		}
		out = append(out, registry.Sample{Name: c.name, Attrs: a, Inputs: []*tensor.Dense{forward.SampleNormal(r, c.shape...), rows, cols}})
	}
	return out
}
