package nn

import (
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// bnChannel returns, for a row-major buffer of the given shape and data
// format, the channel of each element.
func bnChannel(shape []int, format string) func(i int) int {
	channelsLast := format == "NHWC" || format == "NDHWC" || format == ""
	c := shape[1]
	inner := 1
	for _, d := range shape[2:] {
		inner *= d
	}
	if channelsLast {
		c = shape[len(shape)-1]
		return func(i int) int { return i % c }
	}
	return func(i int) int { return (i / inner) % c }
}

func TestBatchNorm(t *testing.T) {
	cases := []struct {
		format   string
		shape    []int
		momentum *float64
	}{
		{"NHWC", []int{2, 3, 2, 3}, nil},
		{"NCHW", []int{3, 2, 2, 2}, new(0.9)},
		{"NDHWC", []int{2, 2, 1, 2, 2}, new(0.0)},
		{"NCDHW", []int{2, 2, 2, 1, 2}, new(1.0)},
	}
	r := rnd(12)
	for _, c := range cases {
		channelsLast := c.format[len(c.format)-1] == 'C'
		ch := c.shape[1]
		if channelsLast {
			ch = c.shape[len(c.shape)-1]
		}
		bn := NewBatchNorm(ch, BatchNormOpts{DataFormat: c.format, Momentum: c.momentum, Epsilon: 0.01, Dtype: tensor.Float64})
		if err := bn.Err(); err != nil {
			t.Fatal(err)
		}
		// Non-trivial parameters and running statistics.
		for _, d := range []*tensor.Dense{bn.Scale.Data, bn.Offset.Data, bn.MovingMean.Data, bn.MovingVariance.Data} {
			s := tensorx.MustSlice[float64](d)
			for i := range s {
				s[i] += 0.5 + r.Float64()
			}
		}
		x := randT(r, false, c.shape...)
		xs := f64(t, x)
		chOf := bnChannel(c.shape, c.format)
		n := len(xs) / ch
		mean, m2 := make([]float64, ch), make([]float64, ch)
		for i, v := range xs {
			mean[chOf(i)] += v / float64(n)
		}
		for i, v := range xs {
			d := v - mean[chOf(i)]
			m2[chOf(i)] += d * d
		}
		gamma, beta := f64(t, bn.Scale.Data), f64(t, bn.Offset.Data)
		oldMean, oldVar := f64(t, bn.MovingMean.Data), f64(t, bn.MovingVariance.Data)
		norm := func(mu, v []float64) []float64 {
			eps := float64(float32(0.01))
			out := make([]float64, len(xs))
			for i, x := range xs {
				k := chOf(i)
				out[i] = (x-mu[k])/math.Sqrt(v[k]+eps)*gamma[k] + beta[k]
			}
			return out
		}
		biased := make([]float64, ch)
		for k := range biased {
			biased[k] = m2[k] / float64(n)
		}
		// Training: batch statistics; running statistics updated with the
		// unbiased variance and exponential_avg_factor = float32(1 - m).
		got, _ := run(t, bn, x, true)
		assertClose(t, c.format+" train", got, norm(mean, biased), 1e-12)
		m := 0.99
		if c.momentum != nil {
			m = *c.momentum
		}
		f := float64(float32(1 - m))
		wantMean, wantVar := make([]float64, ch), make([]float64, ch)
		for k := range wantMean {
			wantMean[k] = (1-f)*oldMean[k] + f*mean[k]
			wantVar[k] = (1-f)*oldVar[k] + f*m2[k]/float64(n-1)
		}
		assertClose(t, c.format+" moving mean", f64(t, bn.MovingMean.Data), wantMean, 1e-12)
		assertClose(t, c.format+" moving variance", f64(t, bn.MovingVariance.Data), wantVar, 1e-12)
		// Evaluation: the running statistics, not updated.
		got, _ = run(t, bn, x, false)
		assertClose(t, c.format+" eval", got, norm(wantMean, wantVar), 1e-12)
		assertClose(t, c.format+" eval keeps mean", f64(t, bn.MovingMean.Data), wantMean, 0)

		checkModule(t, "BatchNorm train "+c.format, bn, x, true, c.format == "NHWC")
		checkModule(t, "BatchNorm eval "+c.format, bn, x, false, c.format == "NCHW")
	}
	// Defaults: scale 1, offset 0, mean 0, variance 1, Keras's momentum.
	bn := NewBatchNorm(3, BatchNormOpts{})
	for _, c := range []struct {
		d    *tensor.Dense
		want float32
	}{{bn.Scale.Data, 1}, {bn.Offset.Data, 0}, {bn.MovingMean.Data, 0}, {bn.MovingVariance.Data, 1}} {
		for _, v := range tensorx.MustSlice[float32](c.d) {
			if v != c.want {
				t.Fatalf("initial value %v, want %v", v, c.want)
			}
		}
	}
	if *bn.train.ExponentialAvgFactor != float32(1-0.99) || *bn.train.Epsilon != float32(0.001) {
		t.Fatalf("default attrs %v %v", *bn.train.ExponentialAvgFactor, *bn.train.Epsilon)
	}
	names := ""
	for _, p := range bn.Params() {
		names += p.Name + " "
	}
	for _, b := range bn.Buffers() {
		names += b.Name + " "
	}
	if names != "scale offset moving_mean moving_variance " {
		t.Fatalf("names %q", names)
	}
}

func TestBatchNormErrors(t *testing.T) {
	for _, c := range []struct {
		bn   *BatchNorm
		frag string
	}{
		{NewBatchNorm(0, BatchNormOpts{}), "channel count"},
		{NewBatchNorm(2, BatchNormOpts{Momentum: new(1.5)}), "Momentum"},
		{NewBatchNorm(2, BatchNormOpts{Momentum: new(math.NaN())}), "Momentum"},
		{NewBatchNorm(2, BatchNormOpts{Epsilon: -1}), "Epsilon"},
		{NewBatchNorm(2, BatchNormOpts{DataFormat: "NWHC"}), "data format"},
		{NewBatchNorm(2, BatchNormOpts{Dtype: tensor.Int64}), "float32 or float64"},
	} {
		assertErr(t, c.frag, c.bn.Err(), nil, "nn.NewBatchNorm", c.frag)
		if c.bn.Params() != nil || c.bn.Buffers() != nil {
			t.Fatal("a failed layer has state")
		}
	}
	// Forward errors are the op's, and leave the statistics alone.
	bn := NewBatchNorm(3, BatchNormOpts{})
	tp := autodiff.NewTape()
	y := bn.Forward(tp, tp.Full(tensor.Float32, []int{1, 2, 2, 2}, 1))
	assertErr(t, "channels", y.Err(), nil, "FusedBatchNormV3")
	tp = autodiff.NewTape()
	y = bn.Forward(tp, tp.Full(tensor.Float64, []int{1, 2, 2, 3}, 1))
	assertErr(t, "dtype", y.Err(), autodiff.ErrDtype)
	if v := tensorx.MustSlice[float32](bn.MovingVariance.Data); v[0] != 1 {
		t.Fatalf("a failed step changed the statistics: %v", v)
	}
}
