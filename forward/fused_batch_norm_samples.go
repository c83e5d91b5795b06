package forward

import (
	"fmt"
	"math"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of FusedBatchNorm and FusedBatchNormV3 and of their
// gradient ops FusedBatchNormGrad and FusedBatchNormGradV3 (registered in
// package backward) for gradient sweeps, over one configuration table.
//
// TensorFlow's gradient of the forward ops uses only the upstream
// gradient of y and gives none to mean and variance, so the forward
// samples check output 0 (y) with respect to x, scale and offset. The
// batch statistics are smooth in x as long as every channel's variance
// stays away from 0, which random data of a few elements per channel
// does.

// bnF32 returns a pointer to v (for the attrs' pointer fields).
func bnF32(v float32) *float32 { return &v }

// bnBool returns a pointer to v.
func bnBool(v bool) *bool { return &v }

// bnSampleTensor returns a float64 tensor of the given shape with values
// shift + scale·N(0,1).
func bnSampleTensor(r *rand.Rand, scale, shift float64, shape ...int) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad batch-norm sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = shift + scale*r.NormFloat64()
	}
	return bnSampleMust(tensorx.New(shape, v))
}

// bnSampleUniform returns a float64 vector of n values in [lo, hi).
func bnSampleUniform(r *rand.Rand, lo, hi float64, n int) *tensor.Dense {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float64()
	}
	return bnSampleMust(tensorx.New([]int{n}, v))
}

// bnSampleScale returns a [c] vector of scales with |γ| in [0.5, 1.5) and
// random signs.
func bnSampleScale(r *rand.Rand, c int) *tensor.Dense {
	v := make([]float64, c)
	for i := range v {
		v[i] = 0.5 + r.Float64()
		if r.Intn(3) == 0 {
			v[i] = -v[i]
		}
	}
	return bnSampleMust(tensorx.New([]int{c}, v))
}

func bnSampleMust(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic("forward: bad batch-norm sample: " + err.Error())
	}
	return d
}

// bnSampleStats returns the per-channel mean and biased variance of x in
// the given data format, as the training forward's reserve spaces.
func bnSampleStats(x *tensor.Dense, format string) (mean, variance *tensor.Dense) {
	v := tensorx.MustSlice[float64](x)
	shape := x.Shape()
	l, err := FusedBatchNormLayout("FusedBatchNormGrad sample", "x", shape, format)
	if err != nil {
		panic("forward: bad batch-norm sample: " + err.Error())
	}
	m := make([]float64, l.C)
	s := make([]float64, l.C)
	n := float64(l.Count())
	for o := 0; o < l.Outer; o++ {
		for c := 0; c < l.C; c++ {
			for i := 0; i < l.Inner; i++ {
				m[c] += v[(o*l.C+c)*l.Inner+i]
			}
		}
	}
	for c := range m {
		m[c] /= n
	}
	for o := 0; o < l.Outer; o++ {
		for c := 0; c < l.C; c++ {
			for i := 0; i < l.Inner; i++ {
				d := v[(o*l.C+c)*l.Inner+i] - m[c]
				s[c] += d * d
			}
		}
	}
	for c := range s {
		s[c] /= n
	}
	return bnSampleMust(tensorx.New([]int{l.C}, m)), bnSampleMust(tensorx.New([]int{l.C}, s))
}

// bnSampleConfig is one configuration of the family's samples.
type bnSampleConfig struct {
	format   string
	shape    []int   // x's shape
	training bool    //
	factor   float32 // exponential_avg_factor (0: default, 1)
	eps      float32 // 0: default
	v3Only   bool    // 5-D formats
}

func (c bnSampleConfig) channels() int {
	if _, first := bnFormatRank(c.format); first {
		return c.shape[1]
	}
	return c.shape[len(c.shape)-1]
}

func (c bnSampleConfig) name() string {
	mode := "infer"
	if c.training {
		mode = "train"
		if c.factor != 0 && c.factor != 1 {
			mode = fmt.Sprintf("train-f%g", c.factor)
		}
	}
	s := fmt.Sprintf("%s-%s-%v", c.format, mode, c.shape)
	if c.eps != 0 {
		s += fmt.Sprintf("-eps%g", c.eps)
	}
	return s
}

func (c bnSampleConfig) attrs() FusedBatchNormAttrs {
	a := FusedBatchNormAttrs{DataFormat: c.format, IsTraining: bnBool(c.training)}
	if c.eps != 0 {
		a.Epsilon = bnF32(c.eps)
	}
	if c.factor != 0 {
		a.ExponentialAvgFactor = bnF32(c.factor)
	}
	return a
}

func (c bnSampleConfig) gradAttrs() FusedBatchNormGradAttrs {
	a := FusedBatchNormGradAttrs{DataFormat: c.format, IsTraining: bnBool(c.training)}
	if c.eps != 0 {
		a.Epsilon = bnF32(c.eps)
	}
	return a
}

// bnSampleConfigs covers both modes, every layout, running statistics
// (empty and given), epsilon values, a single element per channel and odd
// sizes.
var bnSampleConfigs = []bnSampleConfig{
	{format: "NHWC", shape: []int{2, 3, 2, 3}, training: true},
	{format: "NCHW", shape: []int{2, 3, 2, 3}, training: true, factor: 0.6, eps: 1e-3},
	{format: "NHWC", shape: []int{3, 1, 2, 2}, training: false, eps: 1e-2},
	{format: "NCHW", shape: []int{2, 2, 3, 1}, training: false},
	{format: "NHWC", shape: []int{2, 1, 1, 4}, training: true, factor: 0.25},
	{format: "NHWC", shape: []int{1, 1, 1, 3}, training: true},
	{format: "NDHWC", shape: []int{2, 2, 1, 2, 3}, training: true, v3Only: true},
	{format: "NCDHW", shape: []int{1, 2, 2, 2, 2}, training: false, eps: 1e-3, v3Only: true},
	{format: "NCDHW", shape: []int{2, 2, 1, 2, 2}, training: true, factor: 0.5, v3Only: true},
}

// bnSamples returns the sample generator of FusedBatchNorm or
// FusedBatchNormV3.
func bnSamples(op string) func(r *rand.Rand) []registry.Sample {
	v3 := op == bnOpV3
	return func(r *rand.Rand) []registry.Sample {
		var out []registry.Sample
		for _, c := range bnSampleConfigs {
			if c.v3Only && !v3 {
				continue
			}
			C := c.channels()
			x := bnSampleTensor(r, 1.5, 0.5, c.shape...)
			mean, variance := bnSampleTensor(r, 1, 0, 0), bnSampleTensor(r, 1, 0, 0)
			if !c.training || (c.factor != 0 && c.factor != 1) {
				mean, variance = bnSampleTensor(r, 1, 0.3, C), bnSampleUniform(r, 0.5, 2, C)
			}
			out = append(out, registry.Sample{
				Name:   c.name(),
				Attrs:  c.attrs(),
				Inputs: []*tensor.Dense{x, bnSampleScale(r, C), bnSampleTensor(r, 1, 0, C), mean, variance},
				Wrt:    []int{0, 1, 2},
				// TensorFlow's gradient uses only y's upstream gradient.
				Outputs: []int{0},
			})
		}
		return out
	}
}

// FusedBatchNormGradSamples returns the sample generator of
// FusedBatchNormGrad (v3 false) or FusedBatchNormGradV3 (v3 true) over the
// configurations of the forward ops' samples, for their registrations in
// package backward.
//
// The grad ops in training mode are the gradient of the forward only when
// reserve_space_1/2 are the batch mean and biased variance of x (their
// registered gradient, like TensorFlow's, recomputes those statistics
// from x): the samples give exactly those, and check the gradients with
// respect to y_backprop and scale (a finite difference in x alone would
// move the statistics away from the reserve spaces; the tests of package
// backward check x through the forward op). In inference mode every
// gradient but the population statistics' is checked.
func FusedBatchNormGradSamples(v3 bool) func(r *rand.Rand) []registry.Sample {
	return func(r *rand.Rand) []registry.Sample {
		var out []registry.Sample
		for _, c := range bnSampleConfigs {
			if c.v3Only && !v3 {
				continue
			}
			C := c.channels()
			x := bnSampleTensor(r, 1.5, 0.5, c.shape...)
			dy := bnSampleTensor(r, 1, 0, c.shape...)
			var rs1, rs2 *tensor.Dense
			wrt := []int{0, 1, 2}
			if c.training {
				rs1, rs2 = bnSampleStats(x, c.format)
				wrt = []int{0, 2}
			} else {
				rs1, rs2 = bnSampleTensor(r, 1, 0.3, C), bnSampleUniform(r, 0.5, 2, C)
			}
			in := []*tensor.Dense{dy, x, bnSampleScale(r, C), rs1, rs2}
			if v3 {
				in = append(in, bnSampleMust(tensorx.New[float64](nil, []float64{0})))
			}
			out = append(out, registry.Sample{
				Name:    c.name(),
				Attrs:   c.gradAttrs(),
				Inputs:  in,
				Wrt:     wrt,
				Outputs: []int{0, 1, 2},
			})
		}
		return out
	}
}

// bnExSamples is the sample generator of _FusedBatchNormEx: every
// configuration of the family with activation Relu, and the first one
// with Identity. Relu has a kink at 0, where finite differences mean
// nothing, so each Relu sample's inputs are drawn again until every
// pre-activation y lies at least bnExMargin away from 0 (the draws depend
// only on r, so the samples are the same every run).
func bnExSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for i, c := range bnSampleConfigs {
		if i == 0 {
			out = append(out, bnExSample(r, c, "Identity"))
		}
		out = append(out, bnExSample(r, c, "Relu"))
	}
	return out
}

// bnExMargin is the least distance from 0 of a Relu sample's
// pre-activation values.
const bnExMargin = 0.05

func bnExSample(r *rand.Rand, c bnSampleConfig, mode string) registry.Sample {
	C := c.channels()
	for try := 0; ; try++ {
		x := bnSampleTensor(r, 1.5, 0.5, c.shape...)
		mean, variance := bnSampleTensor(r, 1, 0, 0), bnSampleTensor(r, 1, 0, 0)
		if !c.training || (c.factor != 0 && c.factor != 1) {
			mean, variance = bnSampleTensor(r, 1, 0.3, C), bnSampleUniform(r, 0.5, 2, C)
		}
		scale, offset := bnSampleScale(r, C), bnSampleTensor(r, 1, 0, C)
		if mode == "Relu" && !bnExClear(c, x, scale, offset, mean, variance) {
			if try == 1000 {
				panic("forward: no _FusedBatchNormEx sample clear of the Relu kink for " + c.name())
			}
			continue
		}
		b := c.attrs()
		return registry.Sample{
			Name: c.name() + "-" + mode,
			Attrs: FusedBatchNormExAttrs{Epsilon: b.Epsilon, ExponentialAvgFactor: b.ExponentialAvgFactor,
				DataFormat: b.DataFormat, IsTraining: b.IsTraining, ActivationMode: mode},
			Inputs:  []*tensor.Dense{x, scale, offset, mean, variance},
			Wrt:     []int{0, 1, 2},
			Outputs: []int{0},
		}
	}
}

// bnExClear reports whether every pre-activation value of the sample
// (FusedBatchNormV3's y, in float64) is at least bnExMargin away from 0.
func bnExClear(c bnSampleConfig, x, scale, offset, mean, variance *tensor.Dense) bool {
	m, v := mean, variance
	if c.training {
		m, v = bnSampleStats(x, c.format)
	}
	l, err := FusedBatchNormLayout(bnOpEx+" sample", "x", x.Shape(), c.format)
	if err != nil {
		panic("forward: bad batch-norm sample: " + err.Error())
	}
	eps := float64(c.attrs().Eps())
	xs, g, b := tensorx.MustSlice[float64](x), tensorx.MustSlice[float64](scale), tensorx.MustSlice[float64](offset)
	ms, vs := tensorx.MustSlice[float64](m), tensorx.MustSlice[float64](v)
	for i, xv := range xs {
		ch := (i / l.Inner) % l.C
		y := (xv-ms[ch])/math.Sqrt(vs[ch]+eps)*g[ch] + b[ch]
		if math.Abs(y) < bnExMargin {
			return false
		}
	}
	return true
}
