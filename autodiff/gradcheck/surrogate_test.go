package gradcheck_test

import (
	"errors"
	"reflect"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// steRule is the exact straight-through rule of gradchecktest.Quantize
// with the default window [-2, 2].
func steRule(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
	x, err := tensorx.Float64s(in[0])
	if err != nil {
		return nil, err
	}
	u, err := tensorx.Float64s(up[0])
	if err != nil {
		return nil, err
	}
	g := make([]float64, len(x))
	for i := range x {
		if x[i] >= -2 && x[i] <= 2 {
			g[i] = u[i]
		}
	}
	d, err := tensorx.New(tensorx.Shape(in[0]), g)
	return []*tensor.Dense{d}, err
}

func quantInput(t *testing.T) *tensor.Dense {
	t.Helper()
	// Element [1 0] (flat 3) is outside the window.
	d, err := tensorx.New([]int{2, 3}, []float64{-1.7, 0.3, 1.9, 3.2, -0.6, 2})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSurrogate(t *testing.T) {
	x := quantInput(t)
	f := gradcheck.Op("gradchecktest.Quantize", nil)
	if err := gradcheck.CheckSurrogate(f, []*tensor.Dense{x}, steRule, gradcheck.Options{}); err != nil {
		t.Fatalf("exact rule: %v", err)
	}
	// float32 is checked without AllowFloat32.
	if err := gradcheck.CheckSurrogate(f, []*tensor.Dense{to32(t, x)}, steRule, gradcheck.Options{}); err != nil {
		t.Fatalf("float32: %v", err)
	}
	// Finite differences cannot check a straight-through gradient.
	if err := gradcheck.Check(f, []*tensor.Dense{x}, gradcheck.Options{}); err == nil {
		t.Errorf("Check accepted a straight-through gradient")
	}
	// A leaking estimator is caught at the element outside the window.
	leak := gradcheck.Op("gradchecktest.Quantize", STEAttrs{Leak: true})
	err := gradcheck.CheckSurrogate(leak, []*tensor.Dense{x}, steRule, gradcheck.Options{})
	fl := asFailure(t, err)
	if fl.Kind != gradcheck.SurrogateMismatch || fl.Input != 0 || fl.Output != -1 || !reflect.DeepEqual(fl.Index, []int{1, 0}) ||
		fl.Numerical != 0 || fl.Analytical == 0 || fl.Bad != 1 || fl.Total != 6 {
		t.Errorf("failure %+v, want a surrogate mismatch at [1 0]", fl)
	}
	// The window shifted by a hair: exact comparison catches the element
	// at 2, a tolerance does not hide it either (0 vs u).
	shift := gradcheck.Op("gradchecktest.Quantize", STEAttrs{Hi: 1.95})
	fl = asFailure(t, gradcheck.CheckSurrogate(shift, []*tensor.Dense{x}, steRule, gradcheck.Options{Atol: 1e-6}))
	if !reflect.DeepEqual(fl.Index, []int{1, 2}) {
		t.Errorf("failure %+v, want index [1 2]", fl)
	}
}

func TestSurrogateTolerance(t *testing.T) {
	x := quantInput(t)
	f := gradcheck.Op("gradchecktest.Quantize", nil)
	scaled := func(s float64) func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
		return func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
			g, err := steRule(in, up)
			if err != nil {
				return nil, err
			}
			v := g[0].Float64s()
			for i := range v {
				v[i] *= s
			}
			return g, nil
		}
	}
	near := scaled(1 + 1e-9)
	if err := gradcheck.CheckSurrogate(f, []*tensor.Dense{x}, near, gradcheck.Options{}); err == nil {
		t.Errorf("exact comparison accepted a 1e-9 relative difference")
	}
	if err := gradcheck.CheckSurrogate(f, []*tensor.Dense{x}, near, gradcheck.Options{Rtol: 1e-6}); err != nil {
		t.Errorf("Rtol 1e-6: %v", err)
	}
}

func TestSurrogateErrors(t *testing.T) {
	x := quantInput(t)
	f := gradcheck.Op("gradchecktest.Quantize", nil)
	in := []*tensor.Dense{x}
	cases := []struct {
		name string
		want error
		rule func(in, up []*tensor.Dense) ([]*tensor.Dense, error)
		f    gradcheck.Func
	}{
		{"rule error", registry.ErrUnimplemented, func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
			return nil, registry.Errorf(registry.ErrUnimplemented, "no")
		}, f},
		{"rule panic", registry.ErrInternal, func(in, up []*tensor.Dense) ([]*tensor.Dense, error) { panic("boom") }, f},
		{"wrong count", registry.ErrInvalidArgument, func(in, up []*tensor.Dense) ([]*tensor.Dense, error) { return nil, nil }, f},
		{"wrong shape", registry.ErrShape, func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
			d, _ := tensorx.Zeros(tensor.Float64, []int{6})
			return []*tensor.Dense{d}, nil
		}, f},
		{"tape error", registry.ErrNotFound, steRule, gradcheck.Op("gradchecktest.Missing", nil)},
		{"no rule", registry.ErrInvalidArgument, nil, f},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := gradcheck.CheckSurrogate(tc.f, in, tc.rule, gradcheck.Options{})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// A nil gradient from the rule means zero: right for a function that
	// ignores its input.
	zero := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return []autodiff.Value{tp.Apply("StopGradient", nil, in[0])[0], in[0]}
	}
	rule := func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
		if up[1] == nil || up[0] == nil {
			t.Errorf("upstreams %v", up)
		}
		return []*tensor.Dense{nil}, nil
	}
	if err := gradcheck.CheckSurrogate(zero, in, rule, gradcheck.Options{Outputs: []int{0}}); err != nil {
		t.Errorf("nil rule gradient: %v", err)
	}
	if err := gradcheck.CheckSurrogate(zero, in, rule, gradcheck.Options{}); err == nil {
		t.Errorf("zero rule accepted for an identity output")
	}
}

func TestSurrogateFunc(t *testing.T) {
	// Away from the window's edges and from rounding midpoints.
	x, err := tensorx.New([]int{2, 3}, []float64{-1.7, 0.3, 1.9, 3.2, -0.6, -2.4})
	if err != nil {
		t.Fatal(err)
	}
	in := []*tensor.Dense{x}
	clip := gradcheck.Op("gradchecktest.Clip", nil)
	for _, fast := range []bool{false, true} {
		o := gradcheck.Options{Fast: fast}
		if err := gradcheck.CheckSurrogateFunc(gradcheck.Op("gradchecktest.Quantize", nil), clip, in, o); err != nil {
			t.Errorf("fast=%v: straight-through vs clip: %v", fast, err)
		}
		err := gradcheck.CheckSurrogateFunc(gradcheck.Op("gradchecktest.Quantize", STEAttrs{Leak: true}), clip, in, o)
		fl := asFailure(t, err)
		if fl.Kind != gradcheck.SurrogateMismatch || fl.Output != 0 || fl.Input != 0 || fl.Fast != fast {
			t.Errorf("fast=%v: failure %+v", fast, fl)
		}
		if !fast && (fl.Bad != 2 || !reflect.DeepEqual(fl.Index, []int{1, 0}) && !reflect.DeepEqual(fl.Index, []int{1, 2})) {
			t.Errorf("failure %+v: want the elements outside the window, [1 0] and [1 2]", fl)
		}
	}
	// float32 needs AllowFloat32, as in Check.
	in32 := []*tensor.Dense{to32(t, x)}
	if err := gradcheck.CheckSurrogateFunc(gradcheck.Op("gradchecktest.Quantize", nil), clip, in32, gradcheck.Options{}); !errors.Is(err, registry.ErrDtype) {
		t.Errorf("float32: err = %v", err)
	}
	if err := gradcheck.CheckSurrogateFunc(gradcheck.Op("gradchecktest.Quantize", nil), clip, in32, gradcheck.Options{AllowFloat32: true}); err != nil {
		t.Errorf("float32 with AllowFloat32: %v", err)
	}
	// Outputs must correspond.
	two := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value { return []autodiff.Value{in[0], in[0]} }
	if err := gradcheck.CheckSurrogateFunc(gradcheck.Op("Identity", nil), two, in, gradcheck.Options{}); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Errorf("output count mismatch: err = %v", err)
	}
	if err := gradcheck.CheckSurrogateFunc(nil, two, in, gradcheck.Options{}); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Errorf("nil function: err = %v", err)
	}
}
