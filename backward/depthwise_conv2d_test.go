package backward_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

var dwOps = []string{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}

// TestDepthwiseConv2dFamilyGradcheck checks first- and second-order
// gradients of the three ops over every configuration of their sample
// generators: multipliers 1–3, both layouts, the three paddings, equal and
// unequal strides, dilations, the fast 3-wide paths.
func TestDepthwiseConv2dFamilyGradcheck(t *testing.T) {
	checkSamples(t, dwOps, []int64{3}, 5, 8)
}

// TestDepthwiseConv2dChainSecondOrder checks a three-layer composition to
// second order, so the gradients of the backprop ops are exercised
// through the tape's gradient accumulation (filter 1 is used twice).
func TestDepthwiseConv2dChainSecondOrder(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	a1 := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME", Dilations: []int{1, 2, 1, 1}}
	a2 := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 0, 0, 1, 0, 0}}
	// x [1,5,4,2] → h [1,5,4,2] (M=1, SAME, dilated rows) → y [1,5,2,4]
	// (M=2, strided columns, explicit padding) → z = depthwise(y[:, :, :, :2]
	// ...) is not expressible without slicing, so the third layer applies
	// the first filter to h again and both results are returned.
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		h := autodiff.DepthwiseConv2D(in[0], in[1], a1)
		y := autodiff.DepthwiseConv2D(h, in[2], a2)
		return []autodiff.Value{y, autodiff.DepthwiseConv2D(h, in[1], a1)}
	}
	x := testutil.RandDense(t, r, 1, 5, 4, 2)
	f1 := testutil.RandDense(t, r, 3, 2, 2, 1)
	f2 := testutil.RandDense(t, r, 2, 2, 2, 2)
	in := []*tensor.Dense{x, f1, f2}
	checkOrders(t, "", f, in, gradcheck.Options{Seed: 1}, gradcheck.Options{Seed: 2})
}

// TestDepthwiseConv2dThirdOrder differentiates a gradient of a gradient
// (third order through the family) numerically, via a second-order check
// of a function that itself returns first-order gradients; NCHW, unequal
// strides and multiplier 2.
func TestDepthwiseConv2dThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	a := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "SAME", DataFormat: "NCHW"}
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y := autodiff.DepthwiseConv2D(in[0], in[1], a)
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{in[0], in[1]}, []autodiff.Value{in[2]}, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			return []autodiff.Value{y}
		}
		return g
	}
	in := []*tensor.Dense{testutil.RandDense(t, r, 1, 2, 3, 5), testutil.RandDense(t, r, 2, 2, 2, 2), testutil.RandDense(t, r, 1, 4, 2, 5)}
	if err := gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
}

// TestDepthwiseConv2dFloat32Gradcheck checks the float32 kernels'
// gradients (including the fast 3x3 stride-2 paths) with float32
// tolerances.
func TestDepthwiseConv2dFloat32Gradcheck(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	for _, c := range []struct {
		a      forward.DepthwiseConv2dAttrs
		xs, fs []int
	}{
		{forward.DepthwiseConv2dAttrs{Strides: []int{1, 2, 2, 1}, Padding: "SAME"}, []int{1, 7, 8, 3}, []int{3, 3, 3, 1}},
		{forward.DepthwiseConv2dAttrs{Strides: []int{1, 2, 1, 1}, Padding: "VALID", Dilations: []int{1, 1, 2, 1}}, []int{2, 5, 6, 2}, []int{2, 2, 2, 2}},
	} {
		in := []*tensor.Dense{testutil.To32(t, testutil.RandDense(t, r, c.xs...)), testutil.To32(t, testutil.RandDense(t, r, c.fs...))}
		if err := gradcheck.Check(gradcheck.Op("DepthwiseConv2dNative", c.a), in, gradcheck.Options{AllowFloat32: true, Seed: 4}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDepthwiseConv2dNeedsGrad checks that the gradient skips the
// backprop nobody needs: with only the filter (or only the input) as a
// source, one op is recorded; with both, two.
func TestDepthwiseConv2dNeedsGrad(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	a := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME"}
	x, f, u := testutil.RandDense(t, r, 1, 4, 4, 2), testutil.RandDense(t, r, 3, 3, 2, 2), testutil.RandDense(t, r, 1, 4, 4, 4)
	for _, c := range []struct {
		srcs []int
		want int
	}{{[]int{1}, 1}, {[]int{0}, 1}, {[]int{0, 1}, 2}} {
		tp := autodiff.NewTape()
		vx, vf, vu := tp.Watch(x), tp.Watch(f), tp.Watch(u)
		y := autodiff.DepthwiseConv2D(vx, vf, a)
		all := []autodiff.Value{vx, vf}
		var srcs []autodiff.Value
		for _, i := range c.srcs {
			srcs = append(srcs, all[i])
		}
		before := tp.NumOps()
		g, err := tp.Grad([]autodiff.Value{y}, srcs, []autodiff.Value{vu}, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := tp.NumOps() - before; got != c.want {
			t.Fatalf("sources %v: %d ops recorded, want %d", c.srcs, got, c.want)
		}
		for i, gv := range g {
			if !tensorx.SameShape(gv.Shape(), all[c.srcs[i]].Shape()) {
				t.Fatalf("gradient %d has shape %v", i, gv.Shape())
			}
		}
	}
	// The backprop ops' gradients skip unneeded work too: the gradient of
	// BackpropInput with respect to its filter only records one op.
	tp := autodiff.NewTape()
	vf, vd, vg := tp.Watch(f), tp.Watch(u), tp.Watch(x)
	dx := autodiff.DepthwiseConv2DBackpropInput([]int{1, 4, 4, 2}, vf, vd, a)
	before := tp.NumOps()
	if _, err := tp.Grad([]autodiff.Value{dx}, []autodiff.Value{vf}, []autodiff.Value{vg}, autodiff.GradOpts{CreateGraph: true}); err != nil {
		t.Fatal(err)
	}
	if got := tp.NumOps() - before; got != 1 {
		t.Fatalf("BackpropInput w.r.t. the filter: %d ops recorded, want 1", got)
	}
}

// TestDepthwiseConv2dGradErrors checks that a bad configuration is an
// error on the tape, never a panic.
func TestDepthwiseConv2dGradErrors(t *testing.T) {
	r := rand.New(rand.NewSource(25))
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.RandDense(t, r, 1, 4, 4, 3))
	f := tp.Watch(testutil.RandDense(t, r, 2, 2, 2, 2)) // depth 2 for a 3-channel input
	y := autodiff.DepthwiseConv2D(x, f, forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
	if y.Err() == nil || tp.Err() == nil {
		t.Fatal("no error for a bad depth")
	}
	if _, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{}); err == nil {
		t.Fatal("Grad after a failed op succeeded")
	}
}
