package nn

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
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

// TestBatchNormReLU: a BatchNorm with ReLU (_FusedBatchNormEx) gives the
// bits of BatchNorm followed by ReLU: outputs, the gradients of x, Scale
// and Offset, and the running statistics, in training and evaluation, for
// both dtypes and every data format; and its gradient passes the
// numerical check (first and second order).
func TestBatchNormReLU(t *testing.T) {
	r := rnd(14)
	for _, c := range []struct {
		format string
		shape  []int
	}{{"NHWC", []int{2, 3, 4, 8}}, {"NCHW", []int{2, 3, 2, 5}}, {"NDHWC", []int{2, 2, 2, 3, 9}}, {"NHWC", []int{8, 16, 16, 16}}} {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			ch := c.shape[len(c.shape)-1]
			if c.format == "NCHW" {
				ch = c.shape[1]
			}
			name := fmt.Sprintf("%s %v %v", c.format, c.shape, dt)
			fused := NewBatchNorm(ch, BatchNormOpts{DataFormat: c.format, Dtype: dt, ReLU: true})
			plain := NewBatchNorm(ch, BatchNormOpts{DataFormat: c.format, Dtype: dt})
			for i, d := range []*tensor.Dense{plain.Scale.Data, plain.Offset.Data, plain.MovingMean.Data, plain.MovingVariance.Data} {
				v := anyFloats(d)
				for j := range v {
					v[j] += 0.5*r.NormFloat64() + float64(i%2)
				}
				setData(t, d, v)
			}
			tensorx.CopyData(fused.Scale.Data, plain.Scale.Data)
			tensorx.CopyData(fused.Offset.Data, plain.Offset.Data)
			tensorx.CopyData(fused.MovingMean.Data, plain.MovingMean.Data)
			tensorx.CopyData(fused.MovingVariance.Data, plain.MovingVariance.Data)
			x, up := randOf(t, r, dt, c.shape), randOf(t, r, dt, c.shape)
			plainReLU := NewSequential(plain, ReLU())
			for _, training := range []bool{true, false} {
				got := bnGrads(t, fused, fused, x, up, training)
				want := bnGrads(t, plainReLU, plain, x, up, training)
				neg := 0
				for _, v := range anyFloats(want[0]) {
					if v == 0 {
						neg++
					}
				}
				if neg == 0 || neg == tensorx.Len(x) {
					t.Fatalf("%s training=%v: %d of %d outputs clipped; the case must clip some", name, training, neg, tensorx.Len(x))
				}
				for i, what := range []string{"y", "dx", "dscale", "doffset"} {
					if !sameTensorBits(got[i], want[i]) {
						t.Fatalf("%s training=%v: %s differs from BatchNorm+ReLU", name, training, what)
					}
				}
				for _, p := range [][2]*tensor.Dense{{fused.MovingMean.Data, plain.MovingMean.Data}, {fused.MovingVariance.Data, plain.MovingVariance.Data}} {
					if !sameTensorBits(p[0], p[1]) {
						t.Fatalf("%s training=%v: running statistics differ", name, training)
					}
				}
			}
		}
	}
	small := NewBatchNorm(3, BatchNormOpts{Dtype: tensor.Float64, ReLU: true, Epsilon: 0.01})
	x := randT(r, true, 2, 2, 3, 3)
	checkModule(t, "BatchNorm ReLU train", small, x, true, true)
	checkModule(t, "BatchNorm ReLU eval", small, x, false, true)
	if s := small.String(); !strings.Contains(s, "ReLU") {
		t.Fatalf("String() = %q, want it to name the ReLU", s)
	}
}

// bnGrads runs m on x and returns y and the gradients of Σ y·up with
// respect to x and bn's Scale and Offset (bn is m or one of its layers).
func bnGrads(t *testing.T, m Module, bn *BatchNorm, x, up *tensor.Dense, training bool) []*tensor.Dense {
	t.Helper()
	tp := autodiff.NewTape(autodiff.Training(training))
	xv := tp.Watch(x)
	y := m.Forward(tp, xv)
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{xv, tp.Param(bn.Scale), tp.Param(bn.Offset)}, []autodiff.Value{tp.Constant(up)}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	out := []*tensor.Dense{}
	for _, v := range append([]autodiff.Value{y}, g...) {
		d, err := v.Tensor()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Clone().(*tensor.Dense))
	}
	return out
}

// randOf returns a random tensor of dtype dt (N(0, 1) values).
func randOf(t *testing.T, r *rand.Rand, dt tensor.Dtype, shape []int) *tensor.Dense {
	t.Helper()
	d := tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	v := make([]float64, tensorx.Len(d))
	for i := range v {
		v[i] = r.NormFloat64()
	}
	setData(t, d, v)
	return d
}

// anyFloats returns the values of a float32 or float64 tensor as float64.
func anyFloats(d *tensor.Dense) []float64 {
	switch s := d.Data().(type) {
	case []float32:
		v := make([]float64, len(s))
		for i, x := range s {
			v[i] = float64(x)
		}
		return v
	case []float64:
		return append([]float64(nil), s...)
	}
	return nil
}

// setData writes v into d (float32 or float64).
func setData(t *testing.T, d *tensor.Dense, v []float64) {
	t.Helper()
	switch s := d.Data().(type) {
	case []float32:
		for i := range s {
			s[i] = float32(v[i])
		}
	case []float64:
		copy(s, v)
	default:
		t.Fatalf("dtype %v", d.Dtype())
	}
}

// sameTensorBits reports whether a and b have the same shape and bits.
func sameTensorBits(a, b *tensor.Dense) bool {
	if !a.Shape().Eq(b.Shape()) {
		return false
	}
	switch x := a.Data().(type) {
	case []float32:
		y := b.Data().([]float32)
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
	case []float64:
		y := b.Data().([]float64)
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
	default:
		return false
	}
	return true
}
