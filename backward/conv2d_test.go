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

var convOps = []string{"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"}

// TestConv2DFamilyGradcheck checks first- and second-order gradients of
// the three ops over every configuration of their sample generators (both
// layouts, the three paddings, strides, dilations, groups, 1x1 and
// whole-input filters, the [H, W] form of input_sizes).
func TestConv2DFamilyGradcheck(t *testing.T) {
	checkSamples(t, convOps, []int64{3}, 5, 8)
}

// TestConv2DChainSecondOrder checks a three-layer composition to second
// order, so the gradients of the backprop ops are exercised through the
// tape's own gradient accumulation.
func TestConv2DChainSecondOrder(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	a1 := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME", Dilations: []int{1, 2, 1, 1}}
	a2 := forward.Conv2DAttrs{Strides: []int{1, 2, 1, 1}, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 0, 0, 1, 0, 0}}
	// x [1,5,4,2] → h [1,5,4,4] (SAME, dilated rows) → y [1,3,4,2] (two
	// groups, strided rows, explicit padding) → z [1,3,4,4] (filter 1 again,
	// so its gradient sums two contributions).
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		h := autodiff.Conv2D(in[0], in[1], a1)
		y := autodiff.Conv2D(h, in[2], a2)
		return []autodiff.Value{autodiff.Conv2D(y, in[1], a1)}
	}
	x := testutil.RandDense(t, r, 1, 5, 4, 2)
	f1 := testutil.RandDense(t, r, 3, 2, 2, 4)
	f2 := testutil.RandDense(t, r, 2, 2, 2, 2)
	in := []*tensor.Dense{x, f1, f2}
	checkOrders(t, "", f, in, gradcheck.Options{Seed: 1}, gradcheck.Options{Seed: 2})
}

// TestConv2DBackpropThirdOrder differentiates the gradient of a gradient
// (third order through the family) numerically, via a second-order check
// of a function that itself returns first-order gradients.
func TestConv2DBackpropThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	a := forward.Conv2DAttrs{Strides: []int{1, 1, 2, 1}, Padding: "SAME", DataFormat: "NCHW"}
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y := autodiff.Conv2D(in[0], in[1], a)
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{in[0], in[1]}, []autodiff.Value{in[2]}, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			return []autodiff.Value{y}
		}
		return g
	}
	in := []*tensor.Dense{testutil.RandDense(t, r, 1, 2, 3, 5), testutil.RandDense(t, r, 2, 2, 2, 3), testutil.RandDense(t, r, 1, 3, 2, 5)}
	if err := gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
}

// TestConv2DFloat32Gradcheck checks the float32 kernels' gradients with
// float32 tolerances.
func TestConv2DFloat32Gradcheck(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	a := forward.Conv2DAttrs{Strides: []int{1, 2, 1, 1}, Padding: "VALID", Dilations: []int{1, 1, 2, 1}}
	x, f := testutil.RandDense(t, r, 2, 5, 6, 2), testutil.RandDense(t, r, 2, 2, 1, 4)
	if err := gradcheck.Check(gradcheck.Op("Conv2D", a), []*tensor.Dense{testutil.To32(t, x), testutil.To32(t, f)}, gradcheck.Options{AllowFloat32: true, Seed: 4}); err != nil {
		t.Fatal(err)
	}
}

// TestConv2DNeedsGrad checks that the gradient skips the backprop nobody
// needs: with only the filter as a source, one op (Conv2DBackpropFilter)
// is recorded; with both, two.
func TestConv2DNeedsGrad(t *testing.T) {
	r := rand.New(rand.NewSource(14))
	a := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME"}
	x, f, u := testutil.RandDense(t, r, 1, 4, 4, 2), testutil.RandDense(t, r, 3, 3, 2, 3), testutil.RandDense(t, r, 1, 4, 4, 3)
	for _, c := range []struct {
		srcs []int
		want int
	}{{[]int{1}, 1}, {[]int{0}, 1}, {[]int{0, 1}, 2}} {
		tp := autodiff.NewTape()
		vx, vf, vu := tp.Watch(x), tp.Watch(f), tp.Watch(u)
		y := autodiff.Conv2D(vx, vf, a)
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
}

// TestConv2DGradErrors checks that a bad configuration is reported as an
// error on the tape (never a panic), also for the typed functions with a
// zero Value or values of two tapes.
func TestConv2DGradErrors(t *testing.T) {
	r := rand.New(rand.NewSource(15))
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.RandDense(t, r, 1, 4, 4, 3))
	f := tp.Watch(testutil.RandDense(t, r, 2, 2, 2, 2)) // 3 is not a multiple of 2
	y := autodiff.Conv2D(x, f, forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
	if y.Err() == nil || tp.Err() == nil {
		t.Fatal("no error for a bad depth")
	}
	tp2 := autodiff.NewTape()
	v := autodiff.Conv2D(autodiff.Value{}, tp2.Watch(testutil.RandDense(t, r, 1, 1, 1, 1)), forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
	if v.Err() == nil || tp2.Err() == nil {
		t.Fatal("no error for a zero Value")
	}
	tp3, tp4 := autodiff.NewTape(), autodiff.NewTape()
	v = autodiff.Conv2DBackpropFilter(tp3.Watch(testutil.RandDense(t, r, 1, 2, 2, 1)), []int{1, 1, 1, 1}, tp4.Watch(testutil.RandDense(t, r, 1, 2, 2, 1)), forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
	if v.Err() == nil || tp3.Err() == nil {
		t.Fatal("no error for values of two tapes")
	}
}
