package nn

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Tests of LayerNorm, Tanh, Sigmoid, MaxPool2D, AvgPool2D and NewParam.

// lnNaive normalises the rows (last dimension, length f) of x.
func lnNaive(x []float64, f int, eps float64, gamma, beta []float64) []float64 {
	out := make([]float64, len(x))
	for r := 0; r < len(x)/f; r++ {
		row := x[r*f : (r+1)*f]
		m := 0.0
		for _, v := range row {
			m += v
		}
		m /= float64(f)
		s := 0.0
		for _, v := range row {
			s += (v - m) * (v - m)
		}
		s /= float64(f)
		for i, v := range row {
			out[r*f+i] = (v-m)/math.Sqrt(s+eps)*gamma[i] + beta[i]
		}
	}
	return out
}

func TestLayerNorm(t *testing.T) {
	r := rnd(11)
	for _, shape := range [][]int{{4}, {3, 5}, {2, 2, 3}} {
		f := shape[len(shape)-1]
		l := NewLayerNorm(f, LayerNormOpts{Dtype: tensor.Float64, Epsilon: 0.01})
		// Non-trivial parameters.
		g, b := f64(t, l.Gamma.Data), f64(t, l.Beta.Data)
		for i := range g {
			g[i], b[i] = 0.5+r.Float64(), r.Float64()-0.5
		}
		tensorx.CopyData(l.Gamma.Data, mustT(t, []int{f}, g))
		tensorx.CopyData(l.Beta.Data, mustT(t, []int{f}, b))
		x := randT(r, false, shape...)
		got, gotShape := run(t, l, x, true)
		assertClose(t, fmt.Sprintf("LayerNorm %v", shape), got, lnNaive(f64(t, x), f, 0.01, g, b), 1e-13)
		if fmt.Sprint(gotShape) != fmt.Sprint(shape) {
			t.Fatalf("LayerNorm %v: output shape %v", shape, gotShape)
		}
		checkModule(t, fmt.Sprintf("LayerNorm %v", shape), l, x, true, true)
	}
	// Keras's default epsilon, without parameters, float32.
	l := NewLayerNorm(3, LayerNormOpts{NoScale: true, NoCenter: true})
	if l.Epsilon() != 1e-3 || len(l.Params()) != 0 || l.Err() != nil || l.String() != "LayerNorm(3, eps=0.001)" {
		t.Fatalf("defaults: eps %v, %d params, err %v, %s", l.Epsilon(), len(l.Params()), l.Err(), l)
	}
	tp := autodiff.NewTape()
	x32, _ := tensorx.New([]int{1, 3}, []float32{1, 2, 4})
	y, err := l.Forward(tp, tp.Constant(x32)).Float32s()
	want := lnNaive([]float64{1, 2, 4}, 3, 1e-3, []float64{1, 1, 1}, []float64{0, 0, 0})
	if err != nil || math.Abs(float64(y[0])-want[0]) > 1e-6 || math.Abs(float64(y[2])-want[2]) > 1e-6 {
		t.Fatalf("float32: %v %v, want %v", y, err, want)
	}
}

func TestLayerNormErrors(t *testing.T) {
	for _, c := range []struct {
		l    *LayerNorm
		frag string
	}{
		{NewLayerNorm(0, LayerNormOpts{}), "features must be positive"},
		{NewLayerNorm(3, LayerNormOpts{Epsilon: -1}), "epsilon must be positive"},
		{NewLayerNorm(3, LayerNormOpts{Epsilon: math.Inf(1)}), "epsilon must be positive"},
		{NewLayerNorm(3, LayerNormOpts{Dtype: tensor.Int32}), "float32 or float64"},
	} {
		if c.l.Err() == nil || c.l.Params() != nil {
			t.Fatalf("%s: err %v, params %v", c.frag, c.l.Err(), c.l.Params())
		}
		assertErr(t, c.frag, c.l.Err(), nil, c.frag)
		tp := autodiff.NewTape()
		c.l.Forward(tp, tp.Constant(randT(rnd(1), false, 2, 3)))
		assertErr(t, c.frag+" (Forward)", tp.Err(), nil, c.frag)
	}
	l := NewLayerNorm(3, LayerNormOpts{Dtype: tensor.Float64})
	tp := autodiff.NewTape()
	l.Forward(tp, tp.Constant(randT(rnd(1), false, 2, 4)))
	assertErr(t, "last dimension", tp.Err(), registry.ErrShape, "nn.LayerNorm", "last dimension must be 3")
	tp = autodiff.NewTape()
	x32, _ := tensorx.New([]int{3}, []float32{1, 2, 3})
	l.Forward(tp, tp.Constant(x32))
	assertErr(t, "dtype", tp.Err(), registry.ErrDtype, "nn.LayerNorm")
}

func TestTanhSigmoid(t *testing.T) {
	x := randT(rnd(12), false, 3, 4)
	xs := f64(t, x)
	for _, c := range []struct {
		m   Module
		ref func(float64) float64
	}{
		{Tanh(), math.Tanh},
		{Sigmoid(), func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
	} {
		got, _ := run(t, c.m, x, true)
		want := make([]float64, len(xs))
		for i, v := range xs {
			want[i] = c.ref(v)
		}
		assertClose(t, fmt.Sprint(c.m), got, want, 1e-15)
		checkModule(t, fmt.Sprint(c.m), c.m, x, true, true)
	}
}

func TestPool2D(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	for _, c := range []struct {
		m     *Pool2D
		shape []int
		attrs forward.PoolAttrs
	}{
		{MaxPool2D(2, 2, PoolOpts{}), []int{2, 4, 4, 3}, forward.PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}, Padding: "VALID"}},
		{AvgPool2D(3, 2, PoolOpts{Strides: [2]int{2, 1}, Padding: "SAME"}), []int{1, 5, 4, 2}, forward.PoolAttrs{Ksize: []int{1, 3, 2, 1}, Strides: []int{1, 2, 1, 1}, Padding: "SAME"}},
		{MaxPool2D(2, 3, PoolOpts{Padding: "SAME", DataFormat: "NCHW"}), []int{1, 2, 5, 5}, forward.PoolAttrs{Ksize: []int{1, 1, 2, 3}, Strides: []int{1, 1, 2, 3}, Padding: "SAME", DataFormat: "NCHW"}},
	} {
		if err := c.m.Err(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(c.m.Attrs().Ksize) != fmt.Sprint(c.attrs.Ksize) || fmt.Sprint(c.m.Attrs().Strides) != fmt.Sprint(c.attrs.Strides) {
			t.Fatalf("%s: attrs %+v, want %+v", c.m, c.m.Attrs(), c.attrs)
		}
		x := forward.SampleDistinct(r, c.shape...)
		got, _ := run(t, c.m, x, true)
		tp := autodiff.NewTape()
		var want autodiff.Value
		if c.m.Avg() {
			want = autodiff.AvgPool(tp.Constant(x), c.attrs)
		} else {
			want = autodiff.MaxPool(tp.Constant(x), c.attrs)
		}
		w, err := want.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, c.m.String(), got, w, 0)
		checkModule(t, c.m.String(), c.m, x, true, true)
	}
	for _, m := range []*Pool2D{MaxPool2D(0, 2, PoolOpts{}), AvgPool2D(2, 2, PoolOpts{Strides: [2]int{1, -1}}),
		MaxPool2D(2, 2, PoolOpts{Padding: "FULL"}), AvgPool2D(2, 2, PoolOpts{DataFormat: "HWNC"})} {
		if m.Err() == nil || m.String() != "Pool2D(invalid)" {
			t.Fatalf("invalid pool: err %v, %s", m.Err(), m)
		}
		tp := autodiff.NewTape()
		m.Forward(tp, tp.Constant(randT(rnd(1), false, 1, 2, 2, 1)))
		assertErr(t, "invalid pool Forward", tp.Err(), registry.ErrInvalidArgument, "Pool2D")
	}
}

// userScale is a user's layer built with NewParam: y = x·w, w [features].
type userScale struct{ w *autodiff.Param }

func (u *userScale) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.Mul(x, t.Param(u.w))
}
func (u *userScale) Params() []*autodiff.Param { return []*autodiff.Param{u.w} }
func (u *userScale) Buffers() []*Buffer        { return nil }

func TestNewParam(t *testing.T) {
	p, err := NewParam("w", []int{3}, tensor.Float64, Constant(2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "w" || p.Data.Dtype() != tensor.Float64 || fmt.Sprint(f64(t, p.Data)) != "[2 2 2]" {
		t.Fatalf("NewParam: %s %v %v", p.Name, p.Data.Dtype(), p.Data)
	}
	g, err := NewParam("g", []int{2, 2}, tensor.Float32, GlorotUniform, rnd(1))
	if err != nil || g.Data.Dtype() != tensor.Float32 || len(tensorx.MustSlice[float32](g.Data)) != 4 {
		t.Fatalf("NewParam GlorotUniform: %v %v", g, err)
	}
	// In a Sequential, the parameter is renamed, trains and checkpoints.
	s := NewSequential(&userScale{p})
	if err := s.Err(); err != nil || p.Name != "0.w" {
		t.Fatalf("Sequential: %v, name %q", err, p.Name)
	}
	tp := autodiff.NewTape()
	loss := autodiff.Sum(s.Forward(tp, tp.Constant(mustT(t, []int{3}, []float64{1, 2, 3}))), nil, false)
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(f64(t, p.Grad)) != "[1 2 3]" {
		t.Fatalf("gradient %v", p.Grad)
	}
	for _, c := range []struct {
		name  string
		shape []int
		dt    tensor.Dtype
		init  Initializer
		r     *rand.Rand
		frag  string
	}{
		{"", []int{1}, tensor.Float32, Zeros, nil, "empty name"},
		{"w", []int{1}, tensor.Float32, nil, nil, "nil initializer"},
		{"w", []int{-1}, tensor.Float32, Zeros, nil, "negative dimension"},
		{"w", []int{1}, tensor.Int64, Zeros, nil, "float32 or float64"},
		{"w", []int{1}, tensor.Float32, HeNormal, nil, "nil *rand.Rand"},
	} {
		_, err := NewParam(c.name, c.shape, c.dt, c.init, c.r)
		assertErr(t, c.frag, err, nil, "nn.NewParam", c.frag)
	}
}

// mustT returns a float64 tensor.
func mustT(t *testing.T, shape []int, v []float64) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
