package optim

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

func TestScheduleValues(t *testing.T) {
	cases := []struct {
		name string
		s    Schedule
		want []float64 // LR(0), LR(1), ...
	}{
		{"constant", Constant(0.3), []float64{0.3, 0.3, 0.3}},
		{"step decay", StepDecay{Base: 0.1, StepSize: 3, Gamma: 0.5}, []float64{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025}},
		// Min + (Base−Min)(1+cos(πt/4))/2 with cos(π/4) = √2/2
		{"cosine", Cosine{Base: 1, Min: 0.1, Steps: 4}, []float64{1, 0.1 + 0.45*(1+math.Sqrt2/2), 0.55, 0.1 + 0.45*(1-math.Sqrt2/2), 0.1, 0.1, 0.1}},
		{"cosine to zero", Cosine{Base: 2, Steps: 2}, []float64{2, 1, 0, 0}},
		{"warm-up from zero", Warmup{Steps: 4, Then: Constant(0.1)}, []float64{0, 0.025, 0.05, 0.075, 0.1, 0.1}},
		{"warm-up then step decay", Warmup{Steps: 2, Start: 0.5, Then: StepDecay{Base: 1, StepSize: 1, Gamma: 0.5}}, []float64{0.5, 0.75, 1, 0.5, 0.25}},
		{"warm-up then cosine", Warmup{Steps: 1, Start: 0.2, Then: Cosine{Base: 1, Steps: 2}}, []float64{0.2, 1, 0.5, 0, 0}},
		{"no warm-up", Warmup{Then: Constant(0.7)}, []float64{0.7, 0.7}},
	}
	for _, c := range cases {
		for step, want := range c.want {
			if got := c.s.LR(step); math.Abs(got-want) > 1e-15 {
				t.Errorf("%s: LR(%d) = %.17g, want %.17g", c.name, step, got, want)
			}
		}
		if v, ok := c.s.(interface{ Validate() error }); !ok || v.Validate() != nil {
			t.Errorf("%s: does not validate", c.name)
		}
	}
	// Literal values of the cosine case, by hand.
	if got := (Cosine{Base: 1, Min: 0.1, Steps: 4}).LR(1); math.Abs(got-0.8681980515339464) > 1e-15 {
		t.Errorf("cosine LR(1) = %v", got)
	}
}

func TestScheduleValidate(t *testing.T) {
	cases := []struct {
		s    interface{ Validate() error }
		want string
	}{
		{Constant(-1), "invalid learning rate"},
		{Constant(math.Inf(1)), "invalid learning rate"},
		{StepDecay{Base: 0.1, StepSize: 0, Gamma: 0.5}, "StepSize 0"},
		{StepDecay{Base: 0.1, StepSize: 2, Gamma: -1}, "invalid Gamma"},
		{StepDecay{Base: math.NaN(), StepSize: 2}, "invalid learning rate"},
		{Cosine{Base: 1, Steps: 0}, "Steps 0"},
		{Cosine{Base: 1, Min: -1, Steps: 3}, "Cosine Min"},
		{Warmup{Steps: 2}, "Then is nil"},
		{Warmup{Steps: -1, Then: Constant(1)}, "negative"},
		{Warmup{Steps: 1, Start: 2, Then: Constant(1)}, "outside [0, 1]"},
		{Warmup{Steps: 1, Then: Cosine{Base: 1}}, "Then: Cosine: Steps 0"},
	}
	for _, c := range cases {
		if err := c.s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%#v: got %v, want an error containing %q", c.s, err, c.want)
		}
	}
}

// An optimizer follows its schedule: SGD with gradient 1 moves the
// parameter by the sum of the rates.
func TestOptimizerFollowsSchedule(t *testing.T) {
	p := param(t, "w", tensor.Float64, []int{1}, 0)
	s := Warmup{Steps: 2, Then: StepDecay{Base: 0.4, StepSize: 2, Gamma: 0.5}}
	opt, err := NewSGD([]*autodiff.Param{p}, SGDSettings{LR: 99, Schedule: s})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for step := range 7 {
		if opt.LR() != s.LR(step) {
			t.Fatalf("step %d: LR() = %v, want %v", step, opt.LR(), s.LR(step))
		}
		want -= s.LR(step)
		setGrad(t, p, 1)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	// 0 + 0.2 + 0.4 + 0.4 + 0.2 + 0.2 + 0.1
	if got := values(t, p.Data)[0]; math.Abs(got-want) > 1e-15 || math.Abs(want+1.5) > 1e-15 {
		t.Errorf("p = %v, want %v = -1.5", got, want)
	}
}
