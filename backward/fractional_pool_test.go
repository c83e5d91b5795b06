package backward_test

import (
	"errors"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/golden"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

var fpOps = []string{
	"FractionalAvgPool", "FractionalAvgPoolGrad", "tapegrad.FractionalAvgPoolWithSequences",
	"FractionalMaxPool", "FractionalMaxPoolGrad", "tapegrad.FractionalMaxPoolGradGrad",
}

// fpSpread returns values pairwise at least 0.04 apart (no ties within a
// finite-difference step).
func fpSpread(t *testing.T, r *rand.Rand, shape ...int) *tensor.Dense {
	t.Helper()
	n, _ := tensorx.Numel(shape)
	v := make([]float64, n)
	for i, p := range r.Perm(n) {
		v[i] = (float64(p)-float64(n)/2)*0.05 + 0.01*r.Float64()
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFractionalPoolGradcheck checks first- and second-order gradients of
// the six ops over every configuration of their sample generators (both
// sequence modes, both cell kinds, fixed and context-drawn seeds,
// sequences longer than needed, uncovered input, single cells; the
// max-pool ops away from ties).
func TestFractionalPoolGradcheck(t *testing.T) {
	checkSamples(t, fpOps, []int64{7}, 3, 5)
}

// TestFractionalAvgPoolSecondOrderChain checks a nonlinear composition to
// second order: y = FractionalAvgPool(x), z = y·y pooled again over given
// sequences, so FractionalAvgPoolGrad's gradient and the tapegrad adjoint
// op both take part; with seeds from the tape's source (deterministic
// false), which gradcheck seeds identically for every evaluation.
func TestFractionalAvgPoolSecondOrderChain(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.6, 1}, Overlapping: true}
	// y is [2,4,5,2] (7/1.44 → 4, 8/1.6 → 5), pooled again to [2,2,3,2].
	zr, zc := testutil.Int64s(t, 0, 2, 4), testutil.Int64s(t, 0, 2, 3, 5)
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y, _, _ := autodiff.FractionalAvgPool(in[0], a)
		sq := autodiff.Mul(y, y)
		z := autodiff.FractionalAvgPoolWithSequences(sq, tp.Constant(zr), tp.Constant(zc), false)
		return []autodiff.Value{y, z}
	}
	x := testutil.RandDense(t, r, 2, 7, 8, 2)
	checkOrders(t, "", f, []*tensor.Dense{x}, gradcheck.Options{Seed: 1}, gradcheck.Options{Seed: 2})
}

// TestFractionalAvgPoolThirdOrder differentiates a gradient of a gradient:
// the second-order check of a function returning the first-order
// gradient of a pooled square.
func TestFractionalAvgPoolThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Deterministic: true, Seed: 4, Seed2: 2}
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y, _, _ := autodiff.FractionalAvgPool(autodiff.Mul(in[0], in[0]), a)
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{in[0]}, []autodiff.Value{in[1]}, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			return []autodiff.Value{y}
		}
		return g
	}
	in := []*tensor.Dense{testutil.RandDense(t, r, 1, 6, 5, 2), testutil.RandDense(t, r, 1, 4, 3, 2)}
	if err := gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
}

// TestFractionalMaxPoolSecondOrderChain: y = FractionalMaxPool(tanh(x)),
// z = y·y, checked to second order away from ties (tanh keeps the inputs
// distinct).
func TestFractionalMaxPoolSecondOrderChain(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.7, 1.3, 1}, Overlapping: true, Deterministic: true, Seed: 9}
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y, _, _ := autodiff.FractionalMaxPool(autodiff.Tanh(in[0]), a)
		return []autodiff.Value{autodiff.Mul(y, y)}
	}
	x := fpSpread(t, r, 2, 6, 7, 2)
	checkOrders(t, "", f, []*tensor.Dense{x}, gradcheck.Options{Seed: 1}, gradcheck.Options{Seed: 2})
}

// TestFractionalPoolGradientOps checks that the registered gradients are
// built from the ops TensorFlow uses, with the forward's own sequences:
// the gradient of FractionalAvgPool equals FractionalAvgPoolGrad applied
// directly, that of FractionalMaxPool FractionalMaxPoolGrad.
func TestFractionalPoolGradientOps(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	for _, ov := range []bool{false, true} {
		tp := autodiff.NewTape(autodiff.Seed(5))
		x := tp.Watch(fpSpread(t, r, 2, 9, 7, 3))
		dy := testutil.RandDense(t, r, 2, 6, 4, 3)
		a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.75, 1}, Overlapping: ov}
		y, rows, cols := autodiff.FractionalAvgPool(x, a)
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{tp.Constant(dy)}, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		direct := autodiff.FractionalAvgPoolGrad([]int{2, 9, 7, 3}, tp.Constant(dy), rows, cols, ov)
		fpSame(t, "avg", g[0], direct)
		m, mr, mc := autodiff.FractionalMaxPool(x, a)
		g, err = tp.Grad([]autodiff.Value{m}, []autodiff.Value{x}, []autodiff.Value{tp.Constant(dy)}, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		fpSame(t, "max", g[0], autodiff.FractionalMaxPoolGrad(x, m, tp.Constant(dy), mr, mc, ov))
		// The sequence outputs take no gradient: asking for one through them
		// alone gives zeros.
		if rows.Dtype() != tensor.Int64 || cols.Dtype() != tensor.Int64 {
			t.Fatalf("sequence dtypes %v %v", rows.Dtype(), cols.Dtype())
		}
	}
}

func fpSame(t *testing.T, what string, a, b autodiff.Value) {
	t.Helper()
	x, y := testutil.Values(t, a), testutil.Values(t, b)
	if len(x) != len(y) {
		t.Fatalf("%s: %d values vs %d", what, len(x), len(y))
	}
	if i := testutil.BitDiff(x, y, false); i >= 0 {
		t.Fatalf("%s: element %d: %v vs %v", what, i, x[i], y[i])
	}
}

// TestFractionalPoolIntegerGradients checks that integer inputs get no
// gradient: an integer pooling on a tape with a watched float elsewhere
// records nothing to differentiate, and the sequences are integers.
func TestFractionalPoolIntegerGradients(t *testing.T) {
	tp := autodiff.NewTape()
	xi, _ := tensorx.New([]int{1, 4, 4, 1}, make([]int32, 16))
	x := tp.Watch(xi)
	y, _, _ := autodiff.FractionalAvgPool(x, forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}})
	if y.Dtype() != tensor.Int32 {
		t.Fatalf("int32 pooling: dtype %v", y.Dtype())
	}
	// The tape refuses integer targets: an error, not a panic.
	if _, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{}); err == nil {
		t.Fatal("gradient of an int32 pooling accepted")
	}
	// The gradient function returns nil for the integer inputs of the grad
	// op (shape and sequences).
	def, _ := registry.Lookup("FractionalAvgPoolGrad")
	samples, err := gradcheck.OpSamples(def, 1, 1)
	if err != nil || len(samples) != 1 {
		t.Fatal(err)
	}
	s := samples[0]
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return tp.Apply("FractionalAvgPoolGrad", s.Attrs, in...)
	}
	if err := gradcheck.Check(f, s.Inputs, gradcheck.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestFractionalAvgPoolGolden runs the golden cases of
// testdata/golden/fractional_avg_pool.json (as cmd/opcheck does).
func TestFractionalAvgPoolGolden(t *testing.T) {
	cases, err := golden.ReadFile(filepath.Join("..", "testdata", "golden", "fractional_avg_pool.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, c := range cases {
		for _, threads := range []int{1, 3} {
			res := golden.Run(c, golden.Options{Threads: threads})
			if !res.Passed() {
				t.Errorf("%s (threads %d): %s", c.Name, threads, strings.Join(res.Failures, "; "))
			}
			for _, w := range res.Warnings {
				t.Logf("%s: warning: %s", c.Name, w)
			}
		}
	}
}

// TestFractionalPoolGradErrors checks that bad inputs reaching the
// gradient ops through the tape are errors naming the op.
func TestFractionalPoolGradErrors(t *testing.T) {
	tp := autodiff.NewTape()
	r := rand.New(rand.NewSource(25))
	dy := tp.Watch(testutil.RandDense(t, r, 1, 2, 2, 1))
	rows := tp.Constant(testutil.Int64s(t, 0, 2, 9)) // beyond the input
	cols := tp.Constant(testutil.Int64s(t, 0, 2, 4))
	v := autodiff.FractionalAvgPoolGrad([]int{1, 4, 4, 1}, dy, rows, cols, false)
	if v.Err() == nil || !errors.Is(tp.Err(), autodiff.ErrInvalidArgument) || !strings.Contains(tp.Err().Error(), "FractionalAvgPoolGrad") {
		t.Fatalf("bad sequence: %v", tp.Err())
	}
}
