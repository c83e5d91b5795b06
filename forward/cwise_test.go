package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of Abs, Sign, Maximum, Minimum, Pow, the comparisons, Select and
// SelectV2 against naive float64 loops written from docs/spec/cwise.md.

// cwNaiveMax and cwNaiveMin are the spec's rules: NaN if either operand
// is NaN (x's first), else std::max / std::min.
func cwNaiveMax(x, y float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	if math.IsNaN(y) {
		return y
	}
	if x < y {
		return y
	}
	return x
}

func cwNaiveMin(x, y float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	if math.IsNaN(y) {
		return y
	}
	if y < x {
		return y
	}
	return x
}

// cwSpecial mixes ties, signed zeros and NaNs into v.
func cwSpecial(r *rand.Rand, v []float64) {
	for i := range v {
		switch r.Intn(10) {
		case 0:
			v[i] = math.NaN()
		case 1:
			v[i] = 0
		case 2:
			v[i] = math.Copysign(0, -1)
		case 3:
			v[i] = float64(r.Intn(3) - 1) // ties
		}
	}
}

func TestMaxMinPowGrid(t *testing.T) {
	ops := []struct {
		name string
		f    func(x, y float64) float64
	}{
		{"Maximum", cwNaiveMax},
		{"Minimum", cwNaiveMin},
		{"Pow", math.Pow},
	}
	r := rand.New(rand.NewSource(11))
	for _, op := range ops {
		for it := 0; it < 120; it++ {
			as, bs := mtRandShapes(r)
			a, b := mtRandSlice(r, as), mtRandSlice(r, bs)
			cwSpecial(r, a)
			cwSpecial(r, b)
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				ra, rb := testutil.Round(dt, a), testutil.Round(dt, b)
				wantShape, want := mtNaiveBinary(as, bs, ra, rb, op.f)
				want = testutil.Round(dt, want)
				out := registrytest.MustRun(t, op.name, nil, 2, testutil.Dense(t, dt, as, a), testutil.Dense(t, dt, bs, b))[0]
				testutil.ShapeIs(t, op.name, out, wantShape...)
				got := testutil.Float64s(t, out)
				for i := range want {
					same := got[i] == want[i] && math.Signbit(got[i]) == math.Signbit(want[i])
					if !same && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
						t.Fatalf("%s %v %v %v: element %d = %v, want %v", op.name, dt, as, bs, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestMaxMinSpecialValues pins the NaN and signed-zero rules.
func TestMaxMinSpecialValues(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	x := []float64{nan, 1, 0, negZero, 2, nan}
	y := []float64{1, nan, negZero, 0, 2, nan}
	mx := testutil.Float64s(t, registrytest.MustRun(t, "Maximum", nil, 1, testutil.Dense(t, tensor.Float64, []int{6}, x), testutil.Dense(t, tensor.Float64, []int{6}, y))[0])
	mn := testutil.Float64s(t, registrytest.MustRun(t, "Minimum", nil, 1, testutil.Dense(t, tensor.Float64, []int{6}, x), testutil.Dense(t, tensor.Float64, []int{6}, y))[0])
	if !math.IsNaN(mx[0]) || !math.IsNaN(mx[1]) || !math.IsNaN(mx[5]) || !math.IsNaN(mn[0]) || !math.IsNaN(mn[1]) {
		t.Fatalf("NaN not propagated: max %v min %v", mx, mn)
	}
	// std::max(0, -0) is the first operand; so is std::min(0, -0).
	if math.Signbit(mx[2]) || !math.Signbit(mx[3]) || math.Signbit(mn[2]) || !math.Signbit(mn[3]) || mx[4] != 2 || mn[4] != 2 {
		t.Fatalf("signed zeros / ties: max %v min %v", mx, mn)
	}
}

func TestAbsSign(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	v := []float64{-2.5, 3, 0, negZero, nan, math.Inf(-1)}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		abs := testutil.Float64s(t, registrytest.MustRun(t, "Abs", nil, 1, testutil.Dense(t, dt, []int{6}, v))[0])
		sign := testutil.Float64s(t, registrytest.MustRun(t, "Sign", nil, 1, testutil.Dense(t, dt, []int{6}, v))[0])
		if abs[0] != 2.5 || abs[1] != 3 || abs[2] != 0 || math.Signbit(abs[3]) || !math.IsNaN(abs[4]) || !math.IsInf(abs[5], 1) {
			t.Errorf("Abs %v: %v", dt, abs)
		}
		if sign[0] != -1 || sign[1] != 1 || sign[2] != 0 || sign[3] != 0 || math.Signbit(sign[3]) || !math.IsNaN(sign[4]) || sign[5] != -1 {
			t.Errorf("Sign %v: %v", dt, sign)
		}
	}
	i32 := testutil.New(t, []int{4}, []int32{-3, 0, 5, math.MinInt32})
	abs := registrytest.MustRun(t, "Abs", nil, 1, i32)[0]
	if got := tensorx.MustSlice[int32](abs); got[0] != 3 || got[1] != 0 || got[2] != 5 || got[3] != math.MinInt32 {
		t.Errorf("Abs int32: %v", got)
	}
	sign := registrytest.MustRun(t, "Sign", nil, 1, testutil.New(t, []int{3}, []int64{-7, 0, 9}))[0]
	if got := tensorx.MustSlice[int64](sign); got[0] != -1 || got[1] != 0 || got[2] != 1 {
		t.Errorf("Sign int64: %v", got)
	}
}

// cwCompare is the naive comparison of op on float64 values.
func cwCompare(op string, x, y float64) bool {
	switch op {
	case "Greater":
		return x > y
	case "GreaterEqual":
		return x >= y
	case "Less":
		return x < y
	case "LessEqual":
		return x <= y
	case "Equal":
		return x == y
	}
	return x != y
}

// cwDense converts float64 values to a tensor of dtype dt (integer dtypes
// truncate; the values are small integers or NaN-free for them).
func cwDense(t *testing.T, dt tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	switch dt {
	case tensor.Int32:
		return testutil.New(t, shape, testutil.Convert[int32](v))
	case tensor.Int64:
		return testutil.New(t, shape, testutil.Convert[int64](v))
	}
	return testutil.Dense(t, dt, shape, v)
}

func TestCompareGrid(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	for _, op := range []string{"Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual"} {
		for it := 0; it < 80; it++ {
			as, bs := mtRandShapes(r)
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Int32, tensor.Int64} {
				a, b := mtRandSlice(r, as), mtRandSlice(r, bs)
				for _, v := range [][]float64{a, b} {
					for i := range v {
						v[i] = math.Round(v[i]) // frequent ties
					}
					if dt == tensor.Float32 || dt == tensor.Float64 {
						cwSpecial(r, v)
					}
				}
				wantShape, want := mtNaiveBinary(as, bs, a, b, func(x, y float64) float64 {
					if cwCompare(op, x, y) {
						return 1
					}
					return 0
				})
				out := registrytest.MustRun(t, op, nil, 3, cwDense(t, dt, as, a), cwDense(t, dt, bs, b))[0]
				if out.Dtype() != tensor.Bool {
					t.Fatalf("%s: dtype %v", op, out.Dtype())
				}
				testutil.ShapeIs(t, op, out, wantShape...)
				for i, g := range tensorx.MustSlice[bool](out) {
					if g != (want[i] == 1) {
						t.Fatalf("%s %v %v %v: element %d = %v", op, dt, as, bs, i, g)
					}
				}
			}
		}
	}
}

func TestEqualBoolAndIncompatible(t *testing.T) {
	a := testutil.New(t, []int{2, 2}, []bool{true, false, true, false})
	b := testutil.New(t, []int{2}, []bool{true, true})
	eq := tensorx.MustSlice[bool](registrytest.MustRun(t, "Equal", nil, 1, a, b)[0])
	ne := tensorx.MustSlice[bool](registrytest.MustRun(t, "NotEqual", nil, 1, a, b)[0])
	if fmt.Sprint(eq) != "[true false true false]" || fmt.Sprint(ne) != "[false true false true]" {
		t.Fatalf("bool Equal %v NotEqual %v", eq, ne)
	}
	x := testutil.Dense(t, tensor.Float64, []int{2, 3}, testutil.Arange(6))
	y := testutil.Dense(t, tensor.Float64, []int{4}, testutil.Arange(4))
	for _, op := range []string{"Equal", "NotEqual"} {
		_, err := registrytest.Run(t, op, nil, 1, x, y)
		testutil.WantErr(t, err, registry.ErrShape, op+": Incompatible shapes: [2,3] vs. [4]")
		f := false
		out := registrytest.MustRun(t, op, EqualAttrs{IncompatibleShapeError: &f}, 1, x, y)[0]
		testutil.ShapeIs(t, op, out)
		if got := tensorx.MustSlice[bool](out)[0]; got != (op == "NotEqual") {
			t.Errorf("%s incompatible, incompatible_shape_error=false: %v", op, got)
		}
	}
	_, err := registrytest.Run(t, "Greater", nil, 1, x, testutil.Dense(t, tensor.Float32, []int{3}, testutil.Arange(3)))
	testutil.WantErr(t, err, registry.ErrDtype, "Greater")
	_, err = registrytest.Run(t, "Less", nil, 1, testutil.New(t, []int{1}, []bool{true}), testutil.New(t, []int{1}, []bool{true}))
	testutil.WantErr(t, err, registry.ErrDtype, "Less")
}

// cwSelectNaive is SelectV2 by the naive index map over three shapes.
func cwSelectNaive(cs, ts, es []int, c []bool, tv, ev []float64) ([]int, []float64) {
	out, ok := broadcastShape(cs, ts)
	if !ok {
		panic("cwSelectNaive")
	}
	if out, ok = broadcastShape(out, es); !ok {
		panic("cwSelectNaive")
	}
	n := testutil.Numel(out)
	res := make([]float64, n)
	idx := make([]int, len(out))
	for flat := 0; flat < n; flat++ {
		rem := flat
		for d := len(out) - 1; d >= 0; d-- {
			idx[d] = rem % out[d]
			rem /= out[d]
		}
		if c[mtOperandIndex(cs, idx)] {
			res[flat] = tv[mtOperandIndex(ts, idx)]
		} else {
			res[flat] = ev[mtOperandIndex(es, idx)]
		}
	}
	return out, res
}

// cwRandBools returns n random bools.
func cwRandBools(r *rand.Rand, n int) []bool {
	v := make([]bool, n)
	for i := range v {
		v[i] = r.Intn(2) == 0
	}
	return v
}

// cwSubShape returns a shape that broadcasts to s: a random suffix of s
// with random dimensions set to 1.
func cwSubShape(r *rand.Rand, s []int) []int {
	k := r.Intn(len(s) + 1)
	out := append([]int(nil), s[len(s)-k:]...)
	for i := range out {
		if r.Intn(3) == 0 {
			out[i] = 1
		}
	}
	return out
}

func TestSelectV2Grid(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	for it := 0; it < 300; it++ {
		ts, es := mtRandShapes(r)
		full, _ := broadcastShape(ts, es)
		cs := cwSubShape(r, full)
		if r.Intn(3) == 0 {
			cs, ts = ts, cs
		}
		c := cwRandBools(r, testutil.Numel(cs))
		tv, ev := mtRandSlice(r, ts), mtRandSlice(r, es)
		wantShape, want := cwSelectNaive(cs, ts, es, c, tv, ev)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32, tensor.Int64} {
			threads := 1 + it%3
			out := registrytest.MustRun(t, "SelectV2", nil, threads, testutil.New(t, cs, c), cwDense(t, dt, ts, tv), cwDense(t, dt, es, ev))[0]
			testutil.ShapeIs(t, "SelectV2", out, wantShape...)
			got := testutil.Float64s(t, out)
			w := want
			switch dt {
			case tensor.Int64:
				w = testutil.Convert[float64](testutil.Convert[int64](want))
			case tensor.Float32:
				w = testutil.Round(dt, want)
			}
			testutil.Close(t, fmt.Sprintf("SelectV2 %v %v %v %v", dt, cs, ts, es), got, w, testutil.Tol{})
		}
	}
	_, err := registrytest.Run(t, "SelectV2", nil, 1, testutil.New(t, []int{2}, []bool{true, false}),
		testutil.Dense(t, tensor.Float64, []int{3}, testutil.Arange(3)), testutil.Dense(t, tensor.Float64, []int{}, []float64{1}))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "SelectV2: condition [2], then [3], and else [] must be broadcastable")
}

func TestSelect(t *testing.T) {
	r := rand.New(rand.NewSource(14))
	f64 := func(shape ...int) (*tensor.Dense, []float64) {
		v := mtRandSlice(r, shape)
		return testutil.Dense(t, tensor.Float64, shape, v), v
	}
	// Elementwise.
	c := cwRandBools(r, 6)
	x, xv := f64(2, 3)
	y, yv := f64(2, 3)
	got := testutil.Float64s(t, registrytest.MustRun(t, "Select", nil, 1, testutil.New(t, []int{2, 3}, c), x, y)[0])
	for i := range got {
		want := yv[i]
		if c[i] {
			want = xv[i]
		}
		if got[i] != want {
			t.Fatalf("Select elementwise %d: %v want %v", i, got[i], want)
		}
	}
	// Scalar condition.
	for _, cv := range []bool{true, false} {
		got := testutil.Float64s(t, registrytest.MustRun(t, "Select", nil, 1, testutil.New(t, []int{}, []bool{cv}), x, y)[0])
		want := yv
		if cv {
			want = xv
		}
		testutil.Close(t, "Select scalar", got, want, testutil.Tol{})
	}
	// Vector condition choosing rows of a rank-3 t.
	rows := cwRandBools(r, 3)
	x3, x3v := f64(3, 2, 2)
	y3, y3v := f64(3, 2, 2)
	got = testutil.Float64s(t, registrytest.MustRun(t, "Select", nil, 1, testutil.New(t, []int{3}, rows), x3, y3)[0])
	for i := range got {
		want := y3v[i]
		if rows[i/4] {
			want = x3v[i]
		}
		if got[i] != want {
			t.Fatalf("Select rows %d: %v want %v", i, got[i], want)
		}
	}
	// Errors, with TensorFlow's messages.
	for _, c := range []struct {
		cond        *tensor.Dense
		then, else_ *tensor.Dense
		kind        error
		msg         string
	}{
		{testutil.New(t, []int{}, []bool{true}), x, x3, registry.ErrInvalidArgument, "'then' and 'else' must have the same size.  but received: [2,3] vs. [3,2,2]"},
		{testutil.New(t, []int{2}, []bool{true, true}), x3, y3, registry.ErrInvalidArgument, "Number of batches of 'then' must match size of 'cond', but saw: 3 vs. 2"},
		{testutil.New(t, []int{3}, rows), x3, x, registry.ErrInvalidArgument, "'then' and 'else' must have the same size"},
		{testutil.New(t, []int{2, 2}, []bool{true, true, false, false}), x, y, registry.ErrInvalidArgument, "must have the same size and shape.  Input 0: [2,2] != input 1: [2,3]"},
		{testutil.New(t, []int{2, 3}, c), x, testutil.Dense(t, tensor.Float32, []int{2, 3}, yv), registry.ErrDtype, "input 2 (e) has dtype float32"},
		{testutil.Dense(t, tensor.Float64, []int{2, 3}, yv), x, y, registry.ErrDtype, "input 0 (condition) has dtype float64"},
	} {
		_, err := registrytest.Run(t, "Select", nil, 1, c.cond, c.then, c.else_)
		testutil.WantErr(t, err, c.kind, "Select", c.msg)
	}
}

// TestCwiseThreads checks that large inputs give the same bits on one and
// several threads (the parallel paths of the new kernels).
func TestCwiseThreads(t *testing.T) {
	r := rand.New(rand.NewSource(15))
	as, bs := []int{300, 200}, []int{200}
	a, b := mtRandSlice(r, as), mtRandSlice(r, bs)
	c := cwRandBools(r, 200)
	for _, op := range []string{"Maximum", "Pow", "Greater", "SelectV2", "Abs"} {
		var first *tensor.Dense
		for _, threads := range []int{1, 4} {
			var in []*tensor.Dense
			switch op {
			case "SelectV2":
				in = []*tensor.Dense{testutil.New(t, bs, c), testutil.Dense(t, tensor.Float64, as, a), testutil.Dense(t, tensor.Float64, bs, b)}
			case "Abs":
				in = []*tensor.Dense{testutil.Dense(t, tensor.Float64, as, a)}
			default:
				in = []*tensor.Dense{testutil.Dense(t, tensor.Float64, as, a), testutil.Dense(t, tensor.Float64, bs, b)}
			}
			out := registrytest.MustRun(t, op, nil, threads, in...)[0]
			if first == nil {
				first = out
			} else if !testutil.BitEqual(t, first, out) {
				t.Errorf("%s: results differ between 1 and %d threads", op, threads)
			}
		}
	}
}

// TestBcastNPlanRank refuses shapes above the maximum rank (tensors cannot
// have them, so only the plan is tested) and reports incompatible ones.
func TestBcastNPlanRank(t *testing.T) {
	big := make([]int, tensorx.MaxRank+1)
	for i := range big {
		big[i] = 1
	}
	if _, ok, err := newBcastNPlan(big, []int{1}); !ok || err == nil {
		t.Fatalf("rank %d: ok %v err %v", len(big), ok, err)
	}
	if _, ok, _ := newBcastNPlan([]int{2}, []int{3}, []int{1}); ok {
		t.Fatal("[2] [3] [1] should not broadcast")
	}
}
