package gradcheck_test

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// randTensor returns a float64 tensor with values in ±[lo, hi].
func randTensor(t *testing.T, r *rand.Rand, lo, hi float64, shape ...int) *tensor.Dense {
	t.Helper()
	n, err := tensorx.Numel(shape)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + (hi-lo)*r.Float64()
		if r.Intn(2) == 0 {
			v[i] = -v[i]
		}
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func to32(t *testing.T, d *tensor.Dense) *tensor.Dense {
	t.Helper()
	v, err := tensorx.Float64s(d)
	if err != nil {
		t.Fatal(err)
	}
	s := make([]float32, len(v))
	for i, x := range v {
		s[i] = float32(x)
	}
	out, err := tensorx.New(tensorx.Shape(d), s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func asFailure(t *testing.T, err error) *gradcheck.Failure {
	t.Helper()
	var fl *gradcheck.Failure
	if !errors.As(err, &fl) {
		t.Fatalf("want a *gradcheck.Failure, got %v", err)
	}
	return fl
}

func TestCorrectOpsPass(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	x := randTensor(t, r, 0.2, 1.5, 2, 3)
	y := randTensor(t, r, 0.2, 1.5, 2, 3)
	z := randTensor(t, r, 0.2, 1.5, 2, 3)
	cases := []struct {
		name string
		f    gradcheck.Func
		in   []*tensor.Dense
	}{
		{"AddN", gradcheck.Op("AddN", nil), []*tensor.Dense{x, y, z}},
		{"Identity", gradcheck.Op("Identity", nil), []*tensor.Dense{x}},
		{"Cube", gradcheck.Op("gradchecktest.Cube", nil), []*tensor.Dense{x}},
		{"ScaledProduct", gradcheck.Op("gradchecktest.ScaledProduct", ScaleAttrs{Scale: -1.5}), []*tensor.Dense{x, y, z}},
		{"Pair", gradcheck.Op("gradchecktest.Pair", nil), []*tensor.Dense{x, y}},
		{"composite", func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
			c := tp.Apply("gradchecktest.Cube", nil, in[0])[0]
			p := tp.Apply("gradchecktest.Pair", nil, c, in[1])
			return []autodiff.Value{tp.Apply("AddN", nil, p[0], c, in[0])[0], p[1]}
		}, []*tensor.Dense{x, y}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, fast := range []bool{false, true} {
				o := gradcheck.Options{Fast: fast, Seed: 3}
				if err := gradcheck.Check(tc.f, tc.in, o); err != nil {
					t.Errorf("Check(fast=%v): %v", fast, err)
				}
				if err := gradcheck.CheckSecondOrder(tc.f, tc.in, o); err != nil {
					t.Errorf("CheckSecondOrder(fast=%v): %v", fast, err)
				}
			}
		})
	}
}

func TestWrongGradientFails(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	x := randTensor(t, r, 0.5, 1.5, 3, 4)
	err := gradcheck.Check(gradcheck.Op("gradchecktest.BadSquare", nil), []*tensor.Dense{x}, gradcheck.Options{})
	fl := asFailure(t, err)
	if fl.Kind != gradcheck.Mismatch || fl.Order != 1 || fl.Output != 0 || fl.Input != 0 || fl.Fast {
		t.Errorf("failure %+v: want a first-order mismatch of output 0, input 0", fl)
	}
	if len(fl.Index) != 2 || fl.Bad != 12 || fl.Total != 12 {
		t.Errorf("failure %+v: want a 2-D index and 12 of 12 elements bad", fl)
	}
	// The analytical value is 1.25 times the numerical one.
	if ratio := fl.Analytical / fl.Numerical; ratio < 1.2499 || ratio > 1.2501 {
		t.Errorf("analytical/numerical = %v, want 1.25 (%v)", ratio, fl)
	}
	for _, want := range []string{"first-order", "output 0", "input 0", "numerical", "analytical", "tolerance"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	// Fast mode catches it too.
	fl = asFailure(t, gradcheck.Check(gradcheck.Op("gradchecktest.BadSquare", nil), []*tensor.Dense{x}, gradcheck.Options{Fast: true}))
	if !fl.Fast || fl.Index != nil || fl.Output != 0 || fl.Input != 0 {
		t.Errorf("fast failure %+v", fl)
	}
}

func TestFailureNamesOutputInputElement(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	a := randTensor(t, r, 0.5, 1.5, 2, 3)
	b := randTensor(t, r, 0.5, 1.5, 2, 3)
	for _, bad := range []int{0, 4, 5} {
		f := gradcheck.Op("gradchecktest.Pair", PairAttrs{Bad: bad + 1})
		fl := asFailure(t, gradcheck.Check(f, []*tensor.Dense{a, b}, gradcheck.Options{Seed: int64(bad)}))
		want := []int{bad / 3, bad % 3}
		if fl.Output != 1 || fl.Input != 1 || !reflect.DeepEqual(fl.Index, want) || fl.Bad != 1 || fl.Total != 6 {
			t.Errorf("bad index %d: failure %+v, want output 1, input 1, index %v, 1 of 6 bad", bad, fl, want)
		}
		// Restricting the check to the other input or output passes.
		if err := gradcheck.Check(f, []*tensor.Dense{a, b}, gradcheck.Options{Wrt: []int{0}}); err != nil {
			t.Errorf("Wrt [0]: %v", err)
		}
		if err := gradcheck.Check(f, []*tensor.Dense{a, b}, gradcheck.Options{Outputs: []int{0}}); err != nil {
			t.Errorf("Outputs [0]: %v", err)
		}
	}
}

func TestJointGradient(t *testing.T) {
	// The gradient is right for each output alone, wrong when both outputs
	// receive a gradient in the same backward pass.
	r := rand.New(rand.NewSource(4))
	a := randTensor(t, r, 0.5, 1.5, 4)
	b := randTensor(t, r, 0.5, 1.5, 4)
	for _, fast := range []bool{false, true} {
		f := gradcheck.Op("gradchecktest.Pair", PairAttrs{BadJoint: true})
		fl := asFailure(t, gradcheck.Check(f, []*tensor.Dense{a, b}, gradcheck.Options{Fast: fast}))
		if fl.Output != -1 || fl.Input != 1 || fl.Fast != fast {
			t.Errorf("fast=%v: failure %+v, want output -1 (joint), input 1", fast, fl)
		}
		if !fast && !reflect.DeepEqual(fl.Index, []int{0}) {
			t.Errorf("index %v, want [0]", fl.Index)
		}
		if !strings.Contains(fl.Error(), "all checked outputs") {
			t.Errorf("message %q", fl)
		}
	}
}

func TestSecondOrderCatchesWrongGradGrad(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	x := randTensor(t, r, 0.3, 1.2, 5)
	for _, fast := range []bool{false, true} {
		o := gradcheck.Options{Fast: fast, Seed: 7}
		// d(CubeGrad)/dx wrong: the first order cannot see it.
		f := gradcheck.Op("gradchecktest.Cube", CubeAttrs{GGScale: 5})
		if err := gradcheck.Check(f, []*tensor.Dense{x}, o); err != nil {
			t.Fatalf("first order of Cube with a wrong second derivative: %v", err)
		}
		fl := asFailure(t, gradcheck.CheckSecondOrder(f, []*tensor.Dense{x}, o))
		if fl.Order != 2 || fl.Output != 0 || fl.Input != 0 || fl.Upstream || fl.Fast != fast {
			t.Errorf("fast=%v: failure %+v, want order 2, gradient of input 0 w.r.t. input 0", fast, fl)
		}
		if !strings.Contains(fl.Error(), "second-order") {
			t.Errorf("message %q", fl)
		}
		// d(CubeGrad)/d(dy) wrong: reported as a derivative w.r.t. the
		// upstream gradient of output 0.
		f = gradcheck.Op("gradchecktest.Cube", CubeAttrs{GUScale: 4})
		if err := gradcheck.Check(f, []*tensor.Dense{x}, o); err != nil {
			t.Fatalf("first order: %v", err)
		}
		fl = asFailure(t, gradcheck.CheckSecondOrder(f, []*tensor.Dense{x}, o))
		if fl.Order != 2 || fl.Output != 0 || fl.Input != 0 || !fl.Upstream {
			t.Errorf("fast=%v: failure %+v, want order 2 w.r.t. the upstream of output 0", fast, fl)
		}
		if !strings.Contains(fl.Error(), "upstream gradient of output 0") {
			t.Errorf("message %q", fl)
		}
	}
}

func TestSecondOrderIndices(t *testing.T) {
	// Two inputs, only the second checked: the failure must name input 1
	// (as f's input), not g's internal numbering.
	r := rand.New(rand.NewSource(6))
	y := randTensor(t, r, 0.3, 1.2, 3)
	x := randTensor(t, r, 0.3, 1.2, 3)
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		s := tp.Apply("AddN", nil, in[0], in[0])[0]
		return []autodiff.Value{s, tp.Apply("gradchecktest.Cube", CubeAttrs{GGScale: 7}, in[1])[0]}
	}
	fl := asFailure(t, gradcheck.CheckSecondOrder(f, []*tensor.Dense{y, x}, gradcheck.Options{Wrt: []int{1}}))
	if fl.Output != 1 || fl.Input != 1 || fl.Upstream {
		t.Errorf("failure %+v, want d(gradient of input 1)/d(input 1)", fl)
	}
}

func TestFloat32(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	x := to32(t, randTensor(t, r, 0.5, 1.5, 4))
	f := gradcheck.Op("gradchecktest.Cube", nil)
	err := gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{})
	if !errors.Is(err, registry.ErrDtype) || !strings.Contains(err.Error(), "AllowFloat32") {
		t.Errorf("float32 input without AllowFloat32: err = %v, want ErrDtype", err)
	}
	if err := gradcheck.CheckSecondOrder(f, []*tensor.Dense{x}, gradcheck.Options{}); !errors.Is(err, registry.ErrDtype) {
		t.Errorf("second order, float32: err = %v, want ErrDtype", err)
	}
	if err := gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{AllowFloat32: true}); err != nil {
		t.Errorf("float32 with AllowFloat32: %v", err)
	}
	if err := gradcheck.CheckSecondOrder(f, []*tensor.Dense{x}, gradcheck.Options{AllowFloat32: true}); err != nil {
		t.Errorf("float32 second order with AllowFloat32: %v", err)
	}
	fl := asFailure(t, gradcheck.Check(gradcheck.Op("gradchecktest.BadSquare", nil), []*tensor.Dense{x}, gradcheck.Options{AllowFloat32: true}))
	if fl.Atol != gradcheck.Float32Atol || fl.Rtol != gradcheck.Float32Rtol {
		t.Errorf("float32 tolerances %v/%v, want the float32 defaults", fl.Atol, fl.Rtol)
	}
	// A float64 input with a float32 output is refused too.
	x64 := randTensor(t, r, 0.5, 1.5, 4)
	cast := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return []autodiff.Value{tp.Constant(x), in[0]}
	}
	if err := gradcheck.Check(cast, []*tensor.Dense{x64}, gradcheck.Options{}); !errors.Is(err, registry.ErrDtype) {
		t.Errorf("float32 output: err = %v, want ErrDtype", err)
	}
	if err := gradcheck.Check(cast, []*tensor.Dense{x64}, gradcheck.Options{Outputs: []int{1}}); err != nil {
		t.Errorf("float32 output not checked: %v", err)
	}
}

func TestNondeterminism(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	x := randTensor(t, r, 0.5, 1.5, 2, 2)
	f := gradcheck.Op("gradchecktest.Noise", ScaleAttrs{Scale: 1e-13})
	fl := asFailure(t, gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{}))
	if fl.Kind != gradcheck.Nondeterministic || fl.Where != "outputs" || fl.Output != 0 || !reflect.DeepEqual(fl.Index, []int{0, 0}) {
		t.Errorf("failure %+v, want nondeterminism of output 0 at [0 0]", fl)
	}
	if !strings.Contains(fl.Error(), "nondeterminism") {
		t.Errorf("message %q", fl)
	}
	if err := gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{NondetTol: 1e-9}); err != nil {
		t.Errorf("with NondetTol: %v", err)
	}
	// Nondeterministic gradient, deterministic forward.
	g := gradcheck.Op("gradchecktest.NoisyGrad", ScaleAttrs{Scale: 1e-13})
	fl = asFailure(t, gradcheck.Check(g, []*tensor.Dense{x}, gradcheck.Options{}))
	if fl.Kind != gradcheck.Nondeterministic || fl.Where != "gradients" || fl.Output != 0 || fl.Input != 0 {
		t.Errorf("failure %+v, want nondeterministic gradients", fl)
	}
	if err := gradcheck.Check(g, []*tensor.Dense{x}, gradcheck.Options{NondetTol: 1e-9}); err != nil {
		t.Errorf("with NondetTol: %v", err)
	}
}

func TestRandomOpsAreReplayed(t *testing.T) {
	// A function drawing from the tape's random source sees the same
	// numbers at every evaluation, so it is deterministic for the check.
	r := rand.New(rand.NewSource(9))
	x := randTensor(t, r, 0.5, 1.5, 3)
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		noise := tp.Full(tensor.Float64, []int{3}, tp.Rand().Float64())
		return tp.Apply("gradchecktest.ScaledProduct", nil, in[0], in[0], noise)
	}
	if err := gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{Seed: 5}); err != nil {
		t.Error(err)
	}
}

func TestIntegerInputsPassThrough(t *testing.T) {
	r := rand.New(rand.NewSource(10))
	x := randTensor(t, r, 0.5, 1.5, 3)
	n, err := tensorx.New([]int{2}, []int32{7, -3})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		calls++
		v, err := in[1].Int32s()
		if err != nil || len(v) != 2 || v[0] != 7 || v[1] != -3 {
			t.Errorf("integer input reached f as %v, %v", v, err)
		}
		if in[1].RequiresGrad() {
			t.Errorf("integer input is watched")
		}
		return []autodiff.Value{tp.Apply("gradchecktest.Cube", nil, in[0])[0], in[1]}
	}
	if err := gradcheck.Check(f, []*tensor.Dense{x, n}, gradcheck.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := gradcheck.CheckSecondOrder(f, []*tensor.Dense{x, n}, gradcheck.Options{}); err != nil {
		t.Fatal(err)
	}
	if calls < 7 {
		t.Errorf("f called %d times", calls)
	}
	if err := gradcheck.Check(f, []*tensor.Dense{x, n}, gradcheck.Options{Wrt: []int{1}}); !errors.Is(err, registry.ErrDtype) {
		t.Errorf("Wrt an integer input: err = %v, want ErrDtype", err)
	}
	if err := gradcheck.Check(f, []*tensor.Dense{x, n}, gradcheck.Options{Outputs: []int{1}}); !errors.Is(err, registry.ErrDtype) {
		t.Errorf("Outputs an integer output: err = %v, want ErrDtype", err)
	}
}

func TestInputsNotModified(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	x := randTensor(t, r, 0.5, 1.5, 3)
	before, _ := tensorx.Float64s(x)
	if err := gradcheck.Check(gradcheck.Op("gradchecktest.Cube", nil), []*tensor.Dense{x}, gradcheck.Options{}); err != nil {
		t.Fatal(err)
	}
	after, _ := tensorx.Float64s(x)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("inputs changed: %v -> %v", before, after)
	}
}

func TestErrorsNotPanics(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	x := randTensor(t, r, 0.5, 1.5, 3)
	y := randTensor(t, r, 0.5, 1.5, 4)
	in := []*tensor.Dense{x}
	cases := []struct {
		name string
		err  error
		run  func() error
	}{
		{"unknown op", registry.ErrNotFound, func() error { return gradcheck.Check(gradcheck.Op("gradchecktest.Nope", nil), in, gradcheck.Options{}) }},
		{"unknown op second order", registry.ErrNotFound, func() error {
			return gradcheck.CheckSecondOrder(gradcheck.Op("gradchecktest.Nope", nil), in, gradcheck.Options{})
		}},
		{"shape error", registry.ErrShape, func() error {
			return gradcheck.Check(gradcheck.Op("AddN", nil), []*tensor.Dense{x, y}, gradcheck.Options{})
		}},
		{"no gradient", registry.ErrNoGradient, func() error {
			return gradcheck.CheckSecondOrder(gradcheck.Op("gradchecktest.Quantize", nil), in, gradcheck.Options{})
		}},
		{"panic", registry.ErrInternal, func() error {
			return gradcheck.Check(func(*autodiff.Tape, []autodiff.Value) []autodiff.Value { panic("boom") }, in, gradcheck.Options{})
		}},
		{"no outputs", registry.ErrInvalidArgument, func() error {
			return gradcheck.Check(func(*autodiff.Tape, []autodiff.Value) []autodiff.Value { return nil }, in, gradcheck.Options{})
		}},
		{"zero value output", autodiff.ErrInvalidValue, func() error {
			return gradcheck.Check(func(*autodiff.Tape, []autodiff.Value) []autodiff.Value { return []autodiff.Value{{}} }, in, gradcheck.Options{})
		}},
		{"nil func", registry.ErrInvalidArgument, func() error { return gradcheck.Check(nil, in, gradcheck.Options{}) }},
		{"nil input", registry.ErrInvalidArgument, func() error {
			return gradcheck.Check(gradcheck.Op("Identity", nil), []*tensor.Dense{nil}, gradcheck.Options{})
		}},
		{"no inputs", registry.ErrInvalidArgument, func() error { return gradcheck.Check(gradcheck.Op("Identity", nil), nil, gradcheck.Options{}) }},
		{"wrt range", registry.ErrInvalidArgument, func() error {
			return gradcheck.Check(gradcheck.Op("Identity", nil), in, gradcheck.Options{Wrt: []int{1}})
		}},
		{"wrt twice", registry.ErrInvalidArgument, func() error {
			return gradcheck.Check(gradcheck.Op("Identity", nil), in, gradcheck.Options{Wrt: []int{0, 0}})
		}},
		{"outputs range", registry.ErrInvalidArgument, func() error {
			return gradcheck.Check(gradcheck.Op("Identity", nil), in, gradcheck.Options{Outputs: []int{-1}})
		}},
		{"negative tolerance", registry.ErrInvalidArgument, func() error {
			return gradcheck.Check(gradcheck.Op("Identity", nil), in, gradcheck.Options{Atol: -1})
		}},
		{"changing shapes", registry.ErrInvalidArgument, func() error {
			calls := 0
			return gradcheck.Check(func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
				calls++
				if calls > 1 {
					return []autodiff.Value{in[0], in[0]}
				}
				return []autodiff.Value{in[0]}
			}, in, gradcheck.Options{})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, tc.err) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
			var fl *gradcheck.Failure
			if errors.As(err, &fl) {
				t.Errorf("an error, not a check failure, was expected: %v", err)
			}
		})
	}
}

func TestOpSamplesAndCheckSample(t *testing.T) {
	def, err := registry.Lookup("gradchecktest.Cube")
	if err != nil {
		t.Fatal(err)
	}
	s := registry.Sample{Name: "vec", Inputs: []*tensor.Dense{randTensor(t, rand.New(rand.NewSource(13)), 0.5, 1, 3)}}
	if err := gradcheck.CheckSample(def, s, gradcheck.Options{}); err != nil {
		t.Fatal(err)
	}
	// A wrong gradient of the gradient fails CheckSample, unless the
	// sample opts out of the second order.
	s.Attrs = CubeAttrs{GGScale: 5}
	err = gradcheck.CheckSample(def, s, gradcheck.Options{})
	if fl := asFailure(t, err); fl.Order != 2 {
		t.Errorf("failure %+v, want order 2", fl)
	}
	if !strings.Contains(err.Error(), `gradchecktest.Cube sample "vec"`) {
		t.Errorf("message %q does not name the op and sample", err)
	}
	s.NoSecondOrder = "test"
	if err := gradcheck.CheckSample(def, s, gradcheck.Options{}); err != nil {
		t.Errorf("NoSecondOrder: %v", err)
	}
	// Sample tolerances override the options.
	bad, _ := registry.Lookup("gradchecktest.BadSquare")
	s = registry.Sample{Name: "loose", Inputs: s.Inputs, Rtol: 0.5, NoSecondOrder: "test"}
	if err := gradcheck.CheckSample(bad, s, gradcheck.Options{}); err != nil {
		t.Errorf("Rtol 0.5 should accept a 25%% error: %v", err)
	}

	// OpSamples: evenly spread, deterministic, panics become errors.
	gen := &registry.OpDef{Name: "gen", Samples: func(r *rand.Rand) []registry.Sample {
		out := make([]registry.Sample, 10)
		for i := range out {
			out[i].Name = string(rune('a' + i))
			out[i].Rtol = r.Float64()
		}
		return out
	}}
	a, err := gradcheck.OpSamples(gen, 1, 3)
	if err != nil || len(a) != 3 || a[0].Name != "a" || a[1].Name != "d" || a[2].Name != "g" {
		t.Errorf("OpSamples(max 3) = %v, %v", a, err)
	}
	b, _ := gradcheck.OpSamples(gen, 1, 0)
	if len(b) != 10 || b[3].Rtol != a[1].Rtol {
		t.Errorf("OpSamples(all) = %d samples, not deterministic", len(b))
	}
	gen.Samples = func(*rand.Rand) []registry.Sample { panic("boom") }
	if _, err := gradcheck.OpSamples(gen, 1, 0); !errors.Is(err, registry.ErrInternal) {
		t.Errorf("panicking generator: err = %v", err)
	}
}
