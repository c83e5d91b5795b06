package backward_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
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
		def := registrytest.GradOp(t, name)
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

// gkClose compares got with want at relative tolerance rtol (plus rtol as
// absolute tolerance near zero); NaNs must match NaNs.
func gkClose(t *testing.T, what string, got, want []float64, rtol float64) {
	t.Helper()
	testutil.Close(t, what, got, want, testutil.Tol{Rel: rtol, RelFloor: 1, NaN: true})
}

// gkGradRef are the float64 reference formulas of the gradient ops.
var gkGradRef = map[string]func(a, b float64) float64{
	"SqrtGrad": func(y, dy float64) float64 {
		if dy == 0 {
			return 0
		}
		return dy * 0.5 / y
	},
	"RsqrtGrad": func(y, dy float64) float64 {
		if dy == 0 || y == 0 {
			return 0
		}
		return -0.5 * dy * y * y * y
	},
	"SigmoidGrad": func(y, dy float64) float64 { return dy * y * (1 - y) },
	"TanhGrad":    func(y, dy float64) float64 { return dy * (1 - y*y) },
	"ReluGrad": func(g, f float64) float64 {
		if f > 0 {
			return g
		}
		return g * 0
	},
	"Relu6Grad": func(g, f float64) float64 {
		if f > 0 && f < 6 {
			return g
		}
		return g * 0
	},
}

func TestGradOps(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for name, ref := range gkGradRef {
		for _, s := range [][]int{{}, {0}, {9}, {3, 4}, {2, 1, 3}, {40000}} {
			n, _ := tensorx.Numel(s)
			a, b := make([]float64, n), make([]float64, n)
			for i := range a {
				a[i], b[i] = r.Float64()*4-2, r.Float64()*4-2
				if name == "Relu6Grad" {
					b[i] = r.Float64()*10 - 2
				}
			}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				ra, rb := testutil.Round(dt, a), testutil.Round(dt, b)
				want := make([]float64, n)
				for i := range want {
					want[i] = ref(ra[i], rb[i])
				}
				out := registrytest.MustRun(t, name, nil, 2, testutil.Dense(t, dt, s, a), testutil.Dense(t, dt, s, b))[0]
				tol := 1e-15
				if dt == tensor.Float32 {
					tol = 1e-6
				}
				gkClose(t, fmt.Sprintf("%s %v %v", name, dt, s), testutil.Float64s(t, out), want, tol)
			}
		}
	}
}

// TestGradOpsSpecialValues pins TensorFlow's kernel behaviour: ReluGrad
// multiplies by a 0/1 mask (NaN gradients stay NaN), SqrtGrad and RsqrtGrad
// give 0 where dy == 0 even at y == 0.
func TestGradOpsSpecialValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		op         string
		a, b, want []float64
	}{
		{"ReluGrad", []float64{nan, 1, 2, 3, inf}, []float64{-1, 0, 1, nan, -1}, []float64{nan, 0, 2, 0, nan}},
		{"Relu6Grad", []float64{1, 2, 3, 4, nan}, []float64{0, 6, 5.9, 6.1, 1}, []float64{0, 0, 3, 0, nan}},
		{"SqrtGrad", []float64{0, 0, 2}, []float64{0, 1, 1}, []float64{0, inf, 0.25}},
		{"RsqrtGrad", []float64{0, nan, 2}, []float64{1, 0, 1}, []float64{0, 0, -4}},
	}
	for _, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			out := registrytest.MustRun(t, c.op, nil, 2, testutil.Dense(t, dt, []int{len(c.a)}, c.a), testutil.Dense(t, dt, []int{len(c.b)}, c.b))[0]
			gkClose(t, fmt.Sprintf("%s %v", c.op, dt), testutil.Float64s(t, out), c.want, 1e-7)
		}
	}
}

func TestGradOpsErrors(t *testing.T) {
	f64 := func(shape ...int) *tensor.Dense {
		d, _ := tensorx.Zeros(tensor.Float64, shape)
		return d
	}
	f32, _ := tensorx.Zeros(tensor.Float32, []int{3})
	for name := range gkGradRef {
		if _, err := registrytest.Run(t, name, nil, 1, f64(3), f64(1)); !errors.Is(err, registry.ErrShape) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s shapes [3], [1]: err = %v", name, err)
		}
		if _, err := registrytest.Run(t, name, nil, 1, f64(3), f32); !errors.Is(err, registry.ErrDtype) {
			t.Errorf("%s dtype mismatch: err = %v", name, err)
		}
	}
}

// TestGradKernelSamples checks that every sample generator of the
// elementwise gradient kernels produces inputs the op accepts.
func TestGradKernelSamples(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, name := range []string{"SqrtGrad", "RsqrtGrad", "SigmoidGrad", "TanhGrad", "ReluGrad", "Relu6Grad"} {
		ss, outs := registrytest.RunSamples(t, name, r, 3, registrytest.KC(1))
		for i, s := range ss {
			for _, o := range outs[i] {
				for _, v := range testutil.Float64s(t, o) {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("%s sample %s: non-finite output", name, s.Name)
					}
				}
			}
		}
	}
}
