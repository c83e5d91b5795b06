package optim

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// A NaN or infinite gradient (a NaN loss) is an error of Step, and nothing
// changes: no weight, no optimizer state, no step count (issue 18 §1).
func TestStepRefusesNonFiniteGradients(t *testing.T) {
	for _, c := range refConfigs {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				a := param(t, "a", dt, []int{5}, 1, 2, 3, 4, 5)
				b := param(t, "b", dt, []int{2}, 3, 4)
				opt := build(t, c, []*autodiff.Param{a, b}, nil)
				// One good step first, so the state is not all zeros.
				setGrad(t, a, 0.5, 0.5, 0.5, 0.5, 0.5)
				setGrad(t, b, 0.25, 0.25)
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
				before, err := opt.State()
				if err != nil {
					t.Fatal(err)
				}
				da, db := values(t, a.Data), values(t, b.Data)
				va, vb := a.Version(), b.Version()
				setGrad(t, a, 1, 1, 1, 1, 1)
				setGrad(t, b, 1, bad) // the bad element is the last one checked
				err = opt.Step()
				if !errors.Is(err, ErrNonFinite) || !strings.Contains(err.Error(), `parameter "b"`) {
					t.Fatalf("%v %v gradient %v: Step = %v, want ErrNonFinite naming b", c, dt, bad, err)
				}
				after, err := opt.State()
				if err != nil {
					t.Fatal(err)
				}
				if !eqF(values(t, a.Data), da) || !eqF(values(t, b.Data), db) || a.Version() != va || b.Version() != vb || opt.Steps() != 1 {
					t.Errorf("%v %v gradient %v: a refused Step changed a weight, a version or the step count", c, dt, bad)
				}
				for name, d := range before.Tensors {
					if !eqF(values(t, after.Tensors[name]), values(t, d)) {
						t.Errorf("%v %v gradient %v: state %s changed", c, dt, bad, name)
					}
				}
				if g := values(t, a.Grad); g[0] != 1 {
					t.Errorf("%v %v: a refused Step zeroed the gradients", c, dt)
				}
			}
		}
	}
}

// A Step when no trainable parameter has a gradient is an error naming
// them: Backward was not called, or reached other parameters.
func TestStepRefusesWhenNoParameterHasAGradient(t *testing.T) {
	for _, c := range refConfigs {
		a := param(t, "layer.w", tensor.Float64, []int{2}, 1, 2)
		b := param(t, "layer.b", tensor.Float64, []int{1}, 3)
		frozen := param(t, "frozen", tensor.Float64, []int{1}, 3)
		frozen.Trainable = false
		setGrad(t, frozen, 1)
		opt := build(t, c, []*autodiff.Param{a, b, frozen}, nil)
		err := opt.Step()
		if !errors.Is(err, autodiff.ErrNoGradient) || !strings.Contains(err.Error(), `"layer.b" "layer.w"`) || !strings.Contains(err.Error(), "Backward") {
			t.Errorf("%v: Step without gradients = %v, want ErrNoGradient naming the parameters", c, err)
		}
		if opt.Steps() != 0 || values(t, a.Data)[0] != 1 {
			t.Errorf("%v: a refused Step changed something", c)
		}
		// One gradient is enough.
		setGrad(t, b, 1)
		if err := opt.Step(); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
	// Only frozen parameters: nothing to train, nothing refused.
	frozen := param(t, "frozen", tensor.Float64, []int{1}, 3)
	frozen.Trainable = false
	opt, err := NewSGD([]*autodiff.Param{frozen}, SGDSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := opt.Step(); err != nil {
		t.Errorf("Step with only frozen parameters: %v", err)
	}
}

func eqF(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}
