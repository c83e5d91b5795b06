package backward_test

import (
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// shpOps are the differentiable ops of the shape, reduction and
// linear-algebra family.
var shpOps = []string{"Reshape", "Transpose", "Fill", "Sum", "Mean", "MatMul", "BiasAdd", "BiasAddGrad"}

// TestShapeFamilyGradients runs the first- and second-order checks on
// every sample configuration of the family (the default sweep keeps only
// a few per op), for two generator seeds.
func TestShapeFamilyGradients(t *testing.T) {
	checkSamples(t, shpOps, []int64{1, 2}, 0, 1)
	for _, op := range []string{"InvertPermutation", "tapegrad.ReducedShape"} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		if def.GradKind() != registry.GradZero {
			t.Fatalf("%s should be not differentiable, got %v", op, def.GradKind())
		}
	}
}

// TestReduceGradAmbiguousShapes: the reduced axes cannot be told from the
// shapes alone ([3,3] summed over axis 0 or 1 both give [3]), so the
// gradient must follow the axes themselves.
func TestReduceGradAmbiguousShapes(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	cases := []struct {
		shape, axes []int
		keep        bool
	}{
		{[]int{3, 3}, []int{1}, false},
		{[]int{3, 3}, []int{0}, false},
		{[]int{2, 1, 2}, []int{0}, false},
		{[]int{2, 1, 2}, []int{1}, false},
		{[]int{2, 2, 2}, []int{-1, 0}, false},
		{[]int{2, 0, 3}, []int{1}, false}, // empty reduced axis
		{[]int{2, 3}, []int{}, false},
		{[]int{4}, []int{0}, true},
	}
	for _, c := range cases {
		for _, op := range []string{"Sum", "Mean"} {
			f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
				return tp.Apply(op, forward.SumAttrs{KeepDims: c.keep}, in[0], tp.Ints(c.axes...))
			}
			x := []*tensor.Dense{testutil.RandDense(t, r, c.shape...)}
			if err := gradcheck.Check(f, x, gradcheck.Options{Seed: 1}); err != nil {
				t.Errorf("%s %v axes %v: %v", op, c.shape, c.axes, err)
			}
			if err := gradcheck.CheckSecondOrder(f, x, gradcheck.Options{Seed: 1}); err != nil {
				t.Errorf("%s %v axes %v second order: %v", op, c.shape, c.axes, err)
			}
		}
	}
}

// TestShapeGradComposite checks functions chaining the family's ops, to
// first and second order.
func TestShapeGradComposite(t *testing.T) {
	r := rand.New(rand.NewSource(32))
	// A dense layer with a squared loss: mean((relu-free) (x·Wᵀ + b)²)
	// over axes given as int64, reshaped and transposed on the way.
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		x, w, b := in[0], in[1], in[2]
		h := tp.Apply("MatMul", forward.MatMulAttrs{TransposeB: true}, x, w)[0]
		h = tp.Apply("BiasAdd", nil, h, b)[0]
		h = tp.Apply("Reshape", nil, h, tp.Ints(2, 3, -1))[0]
		h = tp.Apply("Transpose", nil, h, tp.Ints(2, 0, 1))[0]
		sq := tp.Apply("Mul", nil, h, h)[0]
		return tp.Apply("Mean", forward.SumAttrs{}, sq, tp.Ints(0, 2))
	}
	in := []*tensor.Dense{testutil.RandDense(t, r, 6, 5), testutil.RandDense(t, r, 4, 5), testutil.RandDense(t, r, 4)}
	checkOrders(t, "", f, in, gradcheck.Options{Seed: 3})
	// NCHW bias, Fill broadcast and a full Sum.
	g := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		x, b, v := in[0], in[1], in[2]
		y := tp.Apply("BiasAdd", forward.BiasAddAttrs{DataFormat: "NCHW"}, x, b)[0]
		filled := tp.Apply("Fill", nil, tp.Ints(2, 3, 2, 2), v)[0]
		z := tp.Apply("Mul", nil, y, filled)[0]
		z = tp.Apply("Mul", nil, z, z)[0]
		return tp.Apply("Sum", nil, z, tp.Ints(0, 1, 2, 3))
	}
	in = []*tensor.Dense{testutil.RandDense(t, r, 2, 3, 2, 2), testutil.RandDense(t, r, 3), testutil.RandDense(t, r)}
	checkOrders(t, "", g, in, gradcheck.Options{Seed: 4})
	// int64 perm and axes.
	h := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y := tp.Apply("Transpose", nil, in[0], in[1])[0]
		return tp.Apply("Sum", forward.SumAttrs{KeepDims: true}, y, in[2])
	}
	in = []*tensor.Dense{testutil.RandDense(t, r, 2, 3, 4), testutil.Int64s(t, 1, 2, 0), testutil.Int64s(t, 1)}
	checkOrders(t, "", h, in, gradcheck.Options{Seed: 5})
}

// TestShapeGradFloat32 runs the float32 kernels through the checks.
func TestShapeGradFloat32(t *testing.T) {
	r := rand.New(rand.NewSource(33))
	opts := gradcheck.Options{Seed: 6, AllowFloat32: true}
	mm := gradcheck.Op("MatMul", forward.MatMulAttrs{TransposeA: true})
	if err := gradcheck.Check(mm, []*tensor.Dense{testutil.To32(t, testutil.RandDense(t, r, 4, 3)), testutil.To32(t, testutil.RandDense(t, r, 4, 2))}, opts); err != nil {
		t.Fatal(err)
	}
	mean := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return tp.Apply("Mean", nil, in[0], tp.Ints(1))
	}
	if err := gradcheck.Check(mean, []*tensor.Dense{testutil.To32(t, testutil.RandDense(t, r, 3, 5))}, opts); err != nil {
		t.Fatal(err)
	}
	bg := gradcheck.Op("BiasAddGrad", forward.BiasAddAttrs{DataFormat: "NCHW"})
	if err := gradcheck.Check(bg, []*tensor.Dense{testutil.To32(t, testutil.RandDense(t, r, 2, 3, 4))}, opts); err != nil {
		t.Fatal(err)
	}
}

// TestShapeGradValues checks a few gradients exactly.
func TestShapeGradValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.RandDense(t, rand.New(rand.NewSource(34)), 2, 3, 4))
	// d/dx mean(x over axes 0 and 2) with upstream ones is 1/8 everywhere.
	y := tp.Apply("Mean", nil, x, tp.Ints(0, 2))[0]
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := g[0].Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range v {
		if e != 0.125 {
			t.Fatalf("Mean gradient[%d] = %v, want 0.125", i, e)
		}
	}
	// Transpose's gradient routes each upstream element back to its source.
	up := make([]float64, 24)
	for i := range up {
		up[i] = float64(i)
	}
	ud, _ := tensorx.New([]int{4, 2, 3}, up)
	z := tp.Apply("Transpose", nil, x, tp.Ints(2, 0, 1))[0]
	g, err = tp.Grad([]autodiff.Value{z}, []autodiff.Value{x}, []autodiff.Value{tp.Constant(ud)}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ = g[0].Float64s()
	for a := 0; a < 2; a++ {
		for b := 0; b < 3; b++ {
			for c := 0; c < 4; c++ {
				if got, want := v[(a*3+b)*4+c], up[(c*2+a)*3+b]; got != want {
					t.Fatalf("Transpose gradient at [%d,%d,%d] = %v, want %v", a, b, c, got, want)
				}
			}
		}
	}
	// Mean over an empty axis: the gradient is empty, not NaN-filled.
	e := tp.Watch(func() *tensor.Dense { d, _ := tensorx.New([]int{0, 2}, []float64{}); return d }())
	m := tp.Apply("Mean", nil, e, tp.Ints(0))[0]
	g, err = tp.Grad([]autodiff.Value{m}, []autodiff.Value{e}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if s := g[0].Shape(); len(s) != 2 || s[0] != 0 || s[1] != 2 {
		t.Fatalf("empty Mean gradient shape %v", s)
	}
	if v, _ := m.Float64s(); !math.IsNaN(v[0]) {
		t.Fatalf("Mean over an empty axis = %v, want NaN", v)
	}
}
