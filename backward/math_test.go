package backward_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

var mathOps = []string{
	"AddV2", "Sub", "Mul", "RealDiv",
	"Neg", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Sigmoid", "Tanh", "Relu", "Relu6",
	"SqrtGrad", "RsqrtGrad", "SigmoidGrad", "TanhGrad", "ReluGrad", "Relu6Grad",
	"BroadcastTo", "Cast", "L2Loss",
}

// TestMathGradSamples runs every sample of the family through the first
// and second-order checks, with two seeds.
func TestMathGradSamples(t *testing.T) {
	checkSamples(t, mathOps, []int64{1, 2}, 0, 1)
}

// TestBinaryGradEachInput checks each operand of the broadcasting ops on
// its own (NeedsGrad false for the other), first and second order.
func TestBinaryGradEachInput(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, op := range []string{"AddV2", "Sub", "Mul", "RealDiv"} {
		for _, c := range []struct{ x, y []int }{
			{[]int{2, 1, 3}, []int{4, 1}},
			{[]int{}, []int{2, 2}},
			{[]int{3, 2}, []int{2}},
		} {
			in := []*tensor.Dense{testutil.UniformDense(t, r, -1, 1, c.x...), testutil.UniformDense(t, r, 0.5, 1.5, c.y...)}
			for _, wrt := range [][]int{{0}, {1}} {
				o := gradcheck.Options{Seed: 2, Wrt: wrt}
				f := gradcheck.Op(op, nil)
				checkOrders(t, fmt.Sprintf("%s %v %v wrt %v", op, c.x, c.y, wrt), f, in, o)
			}
		}
	}
}

// TestMathGradThirdOrder differentiates compositions three times: the
// second-order check of a function that returns a first-order gradient
// (built with CreateGraph) exercises the gradients of SqrtGrad,
// SigmoidGrad, TanhGrad, RsqrtGrad and of their gradients.
func TestMathGradThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	unaries := map[string]func(autodiff.Value) autodiff.Value{
		"Sqrt": autodiff.Sqrt, "Rsqrt": autodiff.Rsqrt, "Sigmoid": autodiff.Sigmoid, "Tanh": autodiff.Tanh,
		"Exp": autodiff.Exp, "Log": autodiff.Log, "Square": autodiff.Square,
	}
	for name, u := range unaries {
		f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
			y := autodiff.Mul(u(in[0]), in[1])
			g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{in[0]}, nil, autodiff.GradOpts{CreateGraph: true})
			if err != nil {
				return []autodiff.Value{y}
			}
			return g
		}
		in := []*tensor.Dense{testutil.UniformDense(t, r, 0.4, 1.6, 2, 3), testutil.UniformDense(t, r, -1, 1, 3)}
		if err := gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 4}); err != nil {
			t.Fatalf("%s third order: %v", name, err)
		}
	}
}

// TestReluGradGradFeatures: the gradient of ReluGrad with respect to its
// features is zeros (not absent), as TensorFlow returns.
func TestReluGradGradFeatures(t *testing.T) {
	for _, op := range []string{"ReluGrad", "Relu6Grad"} {
		tp := autodiff.NewTape()
		g := tp.Watch(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3})))
		f := tp.Watch(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{-1, 2, 7})))
		out := tp.Apply(op, nil, g, f)[0]
		grads, err := tp.Grad([]autodiff.Value{out}, []autodiff.Value{g, f}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		dg, _ := grads[0].Float64s()
		df, _ := grads[1].Float64s()
		wantG := []float64{0, 1, 1}
		if op == "Relu6Grad" {
			wantG = []float64{0, 1, 0}
		}
		for i := range dg {
			if dg[i] != wantG[i] || df[i] != 0 {
				t.Fatalf("%s: d/dgradients = %v (want %v), d/dfeatures = %v (want zeros)", op, dg, wantG, df)
			}
		}
	}
}

// TestBroadcastGradValues pins the reduction of broadcast gradients with
// exact values: every input element gets the sum of the upstream gradients
// of the output elements it was stretched to.
func TestBroadcastGradValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(tensor.New(tensor.WithShape(2, 1), tensor.WithBacking([]float64{1, 2})))
	s := tp.Watch(tensor.New(tensor.WithShape(), tensor.WithBacking([]float64{3})))
	v := tp.Watch(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{4, 5, 6})))
	b := autodiff.BroadcastTo(x, 2, 2, 3)    // [2,2,3]
	y := autodiff.Mul(autodiff.Add(b, s), v) // [2,2,3]
	up := tp.Constant(tensor.New(tensor.WithShape(2, 2, 3), tensor.WithBacking([]float64{
		1, 2, 3, 4, 5, 6,
		7, 8, 9, 10, 11, 12,
	})))
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x, s, v}, []autodiff.Value{up}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	// dy/dx[i] = Σ_{a,k} up[a,i,k] * v[k]; dy/ds = Σ up * v; dy/dv[k] = Σ up[...,k] * (x+s).
	wantX := []float64{
		(1*4 + 2*5 + 3*6) + (7*4 + 8*5 + 9*6),
		(4*4 + 5*5 + 6*6) + (10*4 + 11*5 + 12*6),
	}
	wantS := []float64{wantX[0] + wantX[1]}
	wantV := []float64{
		1*4 + 4*5 + 7*4 + 10*5,
		2*4 + 5*5 + 8*4 + 11*5,
		3*4 + 6*5 + 9*4 + 12*5,
	}
	for i, want := range [][]float64{wantX, wantS, wantV} {
		got, err := g[i].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("gradient %d = %v, want %v", i, got, want)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("gradient %d = %v, want %v", i, got, want)
			}
		}
	}
	if !tensorxSame(g[0].Shape(), []int{2, 1}) || len(g[1].Shape()) != 0 || !tensorxSame(g[2].Shape(), []int{3}) {
		t.Fatalf("gradient shapes %v %v %v", g[0].Shape(), g[1].Shape(), g[2].Shape())
	}
}

func tensorxSame(a tensor.Shape, b []int) bool { return tensorx.SameShape(a, b) }

// TestCastGrad: the gradient is cast back between float dtypes (checked in
// float32 against finite differences) and absent through integer casts.
func TestCastGrad(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	x := testutil.UniformDense(t, r, -2, 2, 2, 3)
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
			c := autodiff.Cast(in[0], dt)
			return []autodiff.Value{autodiff.Mul(c, c)}
		}
		o := gradcheck.Options{Seed: 1, AllowFloat32: dt == tensor.Float32}
		checkOrders(t, fmt.Sprintf("Cast to %v", dt), f, []*tensor.Dense{x}, o)
	}
	// A float64 → float32 → float64 round trip passes dy through the casts.
	tp := autodiff.NewTape()
	w := tp.Watch(x)
	y := autodiff.Cast(autodiff.Cast(w, tensor.Float32), tensor.Float64)
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{w}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := g[0].Float64s(); len(v) != 6 || v[0] != 1 || v[5] != 1 || g[0].Dtype() != tensor.Float64 {
		t.Fatalf("round-trip gradient %v %v", g[0].Dtype(), v)
	}
	// Through an integer cast no gradient flows: the source gets zeros.
	tp = autodiff.NewTape()
	w = tp.Watch(x)
	y = autodiff.Mul(autodiff.Cast(autodiff.Cast(w, tensor.Int32), tensor.Float64), w)
	g, err = tp.Grad([]autodiff.Value{y}, []autodiff.Value{w}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := g[0].Float64s()
	xs := x.Float64s()
	for i := range v {
		if want := math.Trunc(xs[i]); v[i] != want {
			t.Fatalf("gradient through an int cast: %v, want trunc(x) = %v", v, xs)
		}
	}
}

// TestL2LossGradValues: d L2Loss / dx = x * dy.
func TestL2LossGradValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, -2, 3, 0.5})))
	l := autodiff.L2Loss(x)
	up := tp.Scalar(tensor.Float64, 3)
	g, err := tp.Grad([]autodiff.Value{l}, []autodiff.Value{x}, []autodiff.Value{up}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := g[0].Float64s()
	for i, want := range []float64{3, -6, 9, 1.5} {
		if v[i] != want {
			t.Fatalf("L2Loss gradient %v", v)
		}
	}
}

// TestMathGradFloat32 checks the float32 kernels' gradients end to end
// (float32 tolerances): the gradient path runs the float32 grad kernels.
func TestMathGradFloat32(t *testing.T) {
	for _, name := range []string{"Mul", "RealDiv", "Sqrt", "Rsqrt", "Sigmoid", "Tanh", "Exp", "Log", "Relu"} {
		def := testutil.GradOp(t, name)
		ss, err := gradcheck.OpSamples(def, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			in := make([]*tensor.Dense, len(s.Inputs))
			for i, d := range s.Inputs {
				in[i] = testutil.To32(t, d)
			}
			if err := gradcheck.Check(gradcheck.Op(name, s.Attrs), in, gradcheck.Options{Seed: 2, AllowFloat32: true}); err != nil {
				t.Fatalf("%s float32 sample %s: %v", name, s.Name, err)
			}
		}
	}
}

// TestMathGradErrors: a gradient whose upstream cannot be reduced is an
// error, never a panic; integer inputs get no gradient.
func TestMathGradErrors(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	y := autodiff.Add(x, x)
	bad := tp.Constant(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1, 2, 3})))
	if _, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{bad}, autodiff.GradOpts{}); !errors.Is(err, autodiff.ErrShape) {
		t.Fatalf("mismatched upstream: err = %v", err)
	}
	// BroadcastTo's shape input is an integer: Grad with respect to it
	// gives zeros, not an error.
	tp = autodiff.NewTape()
	x = tp.Watch(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	sh := tp.Ints(3, 2)
	b := tp.Apply("BroadcastTo", nil, x, sh)[0]
	g, err := tp.Grad([]autodiff.Value{b}, []autodiff.Value{x, sh}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := g[0].Float64s(); v[0] != 3 || v[1] != 3 {
		t.Fatalf("BroadcastTo gradient %v", v)
	}
	if g[1].Dtype() != tensor.Int32 {
		t.Fatalf("shape input gradient dtype %v", g[1].Dtype())
	}
}
