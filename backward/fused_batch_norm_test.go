package backward_test

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

var bnOps = []string{"FusedBatchNorm", "FusedBatchNormV3", "FusedBatchNormGrad", "FusedBatchNormGradV3"}

func bnPtr[T any](v T) *T { return &v }

// TestFusedBatchNormGradSamples runs every sample of the family through
// the first- and second-order checks (random upstream gradients), with
// two generator seeds.
func TestFusedBatchNormGradSamples(t *testing.T) {
	checkSamples(t, bnOps, []int64{1, 2}, 0, 6)
}

// bnThroughForward returns f(dy, x, scale) = the grad op applied with the
// reserve spaces of the training forward of x: the grad op as the
// gradient of the forward, so that its gradient with respect to x (which
// recomputes the statistics of x) can be checked by finite differences.
func bnThroughForward(v3 bool, format string, eps float32) gradcheck.Func {
	return func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		dy, x, scale := in[0], in[1], in[2]
		empty := tp.Full(x.Dtype(), []int{0}, 0)
		attrs := forward.FusedBatchNormAttrs{Epsilon: &eps, DataFormat: format}
		gattrs := attrs.GradAttrs()
		if v3 {
			fw := autodiff.FusedBatchNormV3(x, scale, scale, empty, empty, attrs)
			dx, ds, do := autodiff.FusedBatchNormGradV3(dy, x, scale, fw.ReserveSpace1, fw.ReserveSpace2, fw.ReserveSpace3, gattrs)
			return []autodiff.Value{dx, ds, do}
		}
		fw := autodiff.FusedBatchNorm(x, scale, scale, empty, empty, attrs)
		dx, ds, do := autodiff.FusedBatchNormGrad(dy, x, scale, fw.ReserveSpace1, fw.ReserveSpace2, gattrs)
		return []autodiff.Value{dx, ds, do}
	}
}

// TestFusedBatchNormGradGradThroughForward checks the training grad ops'
// gradients with respect to all of y_backprop, x and scale (first and
// second order, i.e. up to the third derivative of the forward), each
// output alone and all together.
func TestFusedBatchNormGradGradThroughForward(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	cases := []struct {
		v3     bool
		format string
		shape  []int
		c      int
	}{
		{false, "NHWC", []int{2, 2, 2, 3}, 3},
		{true, "NCHW", []int{2, 3, 2, 2}, 3},
		{true, "NDHWC", []int{2, 1, 2, 2, 2}, 2},
		{true, "NCDHW", []int{1, 2, 2, 2, 2}, 2},
		{true, "NHWC", []int{2, 1, 1, 2}, 2}, // two elements per channel
	}
	for _, c := range cases {
		in := []*tensor.Dense{testutil.RandDenseScaled(t, r, 1, 0, c.shape...), testutil.RandDenseScaled(t, r, 1.5, 0.5, c.shape...), testutil.RandDenseScaled(t, r, 1, 0, c.c)}
		f := bnThroughForward(c.v3, c.format, 1e-3)
		for _, outs := range [][]int{nil, {0}, {1}, {2}} {
			o := gradcheck.Options{Seed: 7, Outputs: outs}
			checkOrders(t, fmt.Sprintf("%s %v outputs %v", c.format, c.shape, outs), f, in, o)
		}
	}
}

// TestFusedBatchNormGradGradPerOutput checks the grad ops (both modes,
// samples' inputs) with one upstream gradient at a time, so the gradient
// function sees nil upstreams in every combination.
func TestFusedBatchNormGradGradPerOutput(t *testing.T) {
	for _, name := range []string{"FusedBatchNormGrad", "FusedBatchNormGradV3"} {
		def := registrytest.GradOp(t, name)
		ss, err := gradcheck.OpSamples(def, 4, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			for _, outs := range [][]int{{0}, {1}, {2}, {1, 2}} {
				s.Outputs = outs
				if err := gradcheck.CheckSample(def, s, gradcheck.Options{Seed: 9}); err != nil {
					t.Fatalf("outputs %v: %v", outs, err)
				}
			}
		}
	}
}

// TestFusedBatchNormGradGradSpecVector is FBGG1 (spec §7): one channel,
// the grad op's first-order outputs and the gradients of Σu·dx + w_γ·dγ +
// w_β·dβ with respect to dy, x and scale.
func TestFusedBatchNormGradGradSpecVector(t *testing.T) {
	tp := autodiff.NewTape()
	shape := []int{1, 1, 4, 1}
	dy := tp.Watch(testutil.New(t, shape, []float64{0.5, -1, 2, 0}))
	x := tp.Watch(testutil.New(t, shape, []float64{1, 2, 4, 7}))
	scale := tp.Watch(testutil.New(t, []int{1}, []float64{2}))
	// The statistics of x: mean 3.5, biased variance 21/4.
	m, v := tp.Constant(testutil.New(t, []int{1}, []float64{3.5})), tp.Constant(testutil.New(t, []int{1}, []float64{5.25}))
	rs3 := tp.Constant(testutil.New(t, nil, []float64{0}))
	attrs := forward.FusedBatchNormGradAttrs{Epsilon: bnPtr(float32(0.001))}
	dx, ds, do := autodiff.FusedBatchNormGradV3(dy, x, scale, m, v, rs3, attrs)
	testutil.Near(t, "dx", testutil.Values(t, dx), []float64{0.238953, -1.122171, 1.392310, -0.509092}, 1e-6)
	testutil.Near(t, "dscale", testutil.Values(t, ds), []float64{0.545493}, 1e-6)
	testutil.Near(t, "doffset", testutil.Values(t, do), []float64{1.5}, 1e-12)
	up := []autodiff.Value{tp.Constant(testutil.New(t, shape, []float64{1, 0, -1, 0.5})), tp.Constant(testutil.New(t, []int{1}, []float64{0.5})), tp.Constant(testutil.New(t, []int{1}, []float64{1}))}
	g, err := tp.Grad([]autodiff.Value{dx, ds, do}, []autodiff.Value{dy, x, scale}, up, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Near(t, "g_dy", testutil.Values(t, g[0]), []float64{1.088343, 0.485693, 0.153182, 2.272782}, 1e-6)
	testutil.Near(t, "g_x", testutil.Values(t, g[1]), []float64{-0.131338, -0.436742, 0.521341, 0.046738}, 1e-6)
	testutil.Near(t, "g_scale", testutil.Values(t, g[2]), []float64{-0.703952}, 1e-6)
}

// TestFusedBatchNormGradDropsStatistics: as in TensorFlow, gradients
// flowing into the statistics outputs are dropped (x gets zeros), and the
// mean and variance inputs get none, in both modes.
func TestFusedBatchNormGradDropsStatistics(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, training := range []bool{true, false} {
		tp := autodiff.NewTape()
		x := tp.Watch(testutil.RandDenseScaled(t, r, 1, 0, 2, 2, 2, 3))
		scale := tp.Watch(testutil.RandDenseScaled(t, r, 1, 1, 3))
		mean := tp.Watch(testutil.RandDenseScaled(t, r, 1, 0, 3))
		variance := tp.Watch(testutil.New(t, []int{3}, []float64{1, 2, 3}))
		f := float32(0.5)
		out := autodiff.FusedBatchNormV3(x, scale, scale, mean, variance,
			forward.FusedBatchNormAttrs{IsTraining: &training, ExponentialAvgFactor: &f})
		g, err := tp.Grad([]autodiff.Value{out.BatchMean, out.BatchVariance, out.ReserveSpace2},
			[]autodiff.Value{x, scale, mean, variance}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		for i, gi := range g {
			v, err := gi.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range v {
				if e != 0 {
					t.Fatalf("training=%v: gradient %d through the statistics outputs is %v, want 0", training, i, v)
				}
			}
		}
		// Through y, mean and variance still get no gradient.
		g, err = tp.Grad([]autodiff.Value{out.Y}, []autodiff.Value{mean, variance}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		for i, gi := range g {
			v, _ := gi.Float64s()
			for _, e := range v {
				if e != 0 {
					t.Fatalf("training=%v: gradient of y w.r.t. input %d = %v, want none (TensorFlow)", training, i+3, v)
				}
			}
		}
	}
}

// TestFusedBatchNormGradFloat32 checks the float32 kernels' gradients
// (first and second order) with float32 finite differences.
func TestFusedBatchNormGradFloat32(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	in := []*tensor.Dense{testutil.To32(t, testutil.RandDenseScaled(t, r, 1, 0, 2, 2, 2, 3)), testutil.To32(t, testutil.RandDenseScaled(t, r, 1.5, 0.5, 2, 2, 2, 3)), testutil.To32(t, testutil.RandDenseScaled(t, r, 1, 1, 3))}
	f := bnThroughForward(true, "NHWC", 1e-3)
	o := gradcheck.Options{Seed: 2, AllowFloat32: true, Atol: 2e-2, Rtol: 2e-2}
	checkOrders(t, "", f, in, o)
}
