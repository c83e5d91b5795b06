package optim

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/safetensors"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// gradFor returns the (deterministic) gradient of parameter idx at step.
func gradFor(dt tensor.Dtype, step, idx, n int) []float64 {
	rng := rand.New(rand.NewPCG(uint64(step), uint64(idx)))
	g := make([]float64, n)
	for i := range g {
		g[i] = round(dt, rng.NormFloat64())
	}
	return g
}

func newParams(t testing.TB, dt tensor.Dtype) []*autodiff.Param {
	return []*autodiff.Param{
		param(t, "layer1.weight", dt, []int{2, 3}, 0.5, -1.5, 2, 0.25, -0.75, 1),
		param(t, "layer1.bias", dt, []int{3}, -0.3, 0.7, 1.1),
	}
}

func train(t testing.TB, opt Optimizer, ps []*autodiff.Param, from, to int) {
	t.Helper()
	for step := from; step < to; step++ {
		for i, p := range ps {
			if i == 1 && step%4 == 2 {
				p.Grad = nil // sometimes no gradient: per-parameter steps differ
				continue
			}
			setGrad(t, p, gradFor(p.Data.Dtype(), step, i, tensorx.Len(p.Data))...)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkpoint goes through the real file format: parameters and state
// tensors as safetensors tensors, scalars as metadata strings.
func checkpoint(t testing.TB, ps []*autodiff.Param, st *State) []byte {
	t.Helper()
	ts := make(map[string]*tensor.Dense)
	for name, d := range st.Tensors {
		ts["optim/"+name] = d
	}
	for _, p := range ps {
		ts["param/"+p.Name] = p.Data
	}
	md := make(map[string]string)
	for k, v := range st.Scalars {
		md[k] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	b, err := safetensors.Marshal(ts, md)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func restore(t testing.TB, b []byte) ([]*autodiff.Param, *State) {
	t.Helper()
	ts, md, err := safetensors.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Tensors: map[string]*tensor.Dense{}, Scalars: map[string]float64{}}
	var ps []*autodiff.Param
	for _, name := range []string{"layer1.weight", "layer1.bias"} {
		p, err := autodiff.NewParam(name, ts["param/"+name])
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for name, d := range ts {
		if rest, ok := strings.CutPrefix(name, "optim/"); ok {
			st.Tensors[rest] = d
		}
	}
	for k, v := range md {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatal(err)
		}
		st.Scalars[k] = f
	}
	return ps, st
}

func sameBits(t testing.TB, what string, a, b *tensor.Dense) {
	t.Helper()
	x, y := values(t, a), values(t, b)
	if a.Dtype() != b.Dtype() || len(x) != len(y) {
		t.Fatalf("%s: %v[%d] vs %v[%d]", what, a.Dtype(), len(x), b.Dtype(), len(y))
	}
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			t.Errorf("%s[%d]: %.17g != %.17g", what, i, x[i], y[i])
			return
		}
	}
}

// Training N steps equals training k steps, checkpointing, restoring into
// fresh parameters and optimizer, and training N−k steps, bit for bit.
func TestStateRoundTripBitIdentical(t *testing.T) {
	const n, k = 13, 6
	sched := Warmup{Steps: 4, Start: 0.1, Then: StepDecay{Base: 0.05, StepSize: 3, Gamma: 0.7}}
	for _, c := range refConfigs {
		for _, dt := range floatDtypes {
			straight := newParams(t, dt)
			opt := build(t, c, straight, sched)
			train(t, opt, straight, 0, n)

			first := newParams(t, dt)
			opt1 := build(t, c, first, sched)
			train(t, opt1, first, 0, k)
			st, err := opt1.State()
			if err != nil {
				t.Fatal(err)
			}
			file := checkpoint(t, first, st)

			resumed, st2 := restore(t, file)
			opt2 := build(t, c, resumed, sched)
			if err := opt2.LoadState(st2); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			// The loaded state is copied, not aliased.
			for _, d := range st2.Tensors {
				if s, _ := tensorx.Slice[float64](d); len(s) > 0 {
					s[0] = math.NaN()
				}
				if s, _ := tensorx.Slice[float32](d); len(s) > 0 {
					s[0] = float32(math.NaN())
				}
			}
			if opt2.Steps() != k || opt2.LR() != sched.LR(k) {
				t.Errorf("%v: restored Steps %d LR %v", c, opt2.Steps(), opt2.LR())
			}
			train(t, opt2, resumed, k, n)
			for i := range straight {
				sameBits(t, c.String()+" "+dt.String()+" "+straight[i].Name, resumed[i].Data, straight[i].Data)
			}
			sa, _ := opt.State()
			sb, _ := opt2.State()
			for name, d := range sa.Tensors {
				sameBits(t, c.String()+" state "+name, sb.Tensors[name], d)
			}
			for name, v := range sa.Scalars {
				if sb.Scalars[name] != v {
					t.Errorf("%v: scalar %s = %v, want %v", c, name, sb.Scalars[name], v)
				}
			}
		}
	}
}

func TestStateIsACopy(t *testing.T) {
	ps := newParams(t, tensor.Float64)
	opt := build(t, refConfigs[3], ps, nil)
	train(t, opt, ps, 0, 2)
	st, _ := opt.State()
	before := values(t, st.Tensors["adam.exp_avg/layer1.bias"])
	train(t, opt, ps, 2, 3)
	after := values(t, st.Tensors["adam.exp_avg/layer1.bias"])
	for i := range before {
		if before[i] != after[i] {
			t.Fatal("State aliases the optimizer's buffers")
		}
	}
	if len(st.Tensors) != 4 || len(st.Scalars) != 2+2+5 {
		t.Errorf("state has %d tensors, %d scalars: %v", len(st.Tensors), len(st.Scalars), st.Scalars)
	}
}

func TestLoadStateRestoresHyperparameters(t *testing.T) {
	ps := newParams(t, tensor.Float32)
	a, _ := NewAdam(ps, AdamSettings{LR: 0.1, Beta1: Float(0.5)})
	st, _ := a.State()
	b, _ := NewAdam(ps, AdamSettings{LR: 0.3})
	if err := b.LoadState(st); err != nil {
		t.Fatal(err)
	}
	if b.LR() != 0.1 || b.beta1 != 0.5 {
		t.Errorf("LR %v beta1 %v after load, want 0.1 0.5", b.LR(), b.beta1)
	}
}

func TestLoadStateErrors(t *testing.T) {
	ps := newParams(t, tensor.Float64)
	fresh := func() *State {
		o := build(t, refConfigs[4], ps, nil) // Adam with AMSGrad
		st, err := o.State()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	f32 := dense(t, tensor.Float32, []int{3}, []float64{0, 0, 0})
	cases := []struct {
		name   string
		mutate func(s *State)
		want   string
	}{
		{"missing tensor", func(s *State) { delete(s.Tensors, "adam.exp_avg/layer1.bias") }, `missing ["adam.exp_avg/layer1.bias"]`},
		{"extra tensor", func(s *State) { s.Tensors["adam.exp_avg/other"] = f32 }, `unexpected ["adam.exp_avg/other"]`},
		{"renamed parameter", func(s *State) {
			s.Tensors["adam.exp_avg_sq/l1.b"] = s.Tensors["adam.exp_avg_sq/layer1.bias"]
			delete(s.Tensors, "adam.exp_avg_sq/layer1.bias")
		}, `missing ["adam.exp_avg_sq/layer1.bias"] unexpected ["adam.exp_avg_sq/l1.b"]`},
		{"shape mismatch", func(s *State) {
			s.Tensors["adam.exp_avg/layer1.weight"] = dense(t, tensor.Float64, []int{3, 2}, make([]float64, 6))
		}, `"adam.exp_avg/layer1.weight" is float64 (3, 2), want float64 (2, 3)`},
		{"dtype mismatch", func(s *State) { s.Tensors["adam.max_exp_avg_sq/layer1.bias"] = f32 }, "is float32 (3), want float64 (3)"},
		{"nil tensor", func(s *State) { s.Tensors["adam.exp_avg/layer1.bias"] = nil }, "is nil"},
		{"missing scalar", func(s *State) { delete(s.Scalars, "adam.beta2") }, `missing scalar "adam.beta2"`},
		{"missing step", func(s *State) { delete(s.Scalars, "adam.step/layer1.bias") }, `missing scalar "adam.step/layer1.bias"`},
		{"extra scalar", func(s *State) { s.Scalars["adam.momentum"] = 0 }, `unexpected scalars ["adam.momentum"]`},
		{"fractional step", func(s *State) { s.Scalars["adam.steps"] = 2.5 }, "is not a step count"},
		{"negative step", func(s *State) { s.Scalars["adam.step/layer1.weight"] = -1 }, "is not a step count"},
		{"bad flag", func(s *State) { s.Scalars["adam.amsgrad"] = 0.5 }, "want 0 or 1"},
		{"structural flag", func(s *State) { s.Scalars["adam.amsgrad"] = 0 }, "saved with amsgrad = false"},
		{"invalid beta", func(s *State) { s.Scalars["adam.beta1"] = 2 }, "invalid beta1 2"},
		{"invalid lr", func(s *State) { s.Scalars["adam.lr"] = -1 }, "invalid learning rate -1"},
	}
	for _, c := range cases {
		o := build(t, refConfigs[4], ps, nil)
		train(t, o, ps, 0, 1)
		before, _ := o.State()
		st := fresh()
		c.mutate(st)
		err := o.LoadState(st)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
			continue
		}
		if !errors.Is(err, autodiff.ErrInvalidArgument) && !errors.Is(err, autodiff.ErrShape) {
			t.Errorf("%s: %v wraps no sentinel", c.name, err)
		}
		// A failed load changes nothing.
		after, _ := o.State()
		for k, v := range before.Scalars {
			if after.Scalars[k] != v {
				t.Errorf("%s: scalar %s changed from %v to %v", c.name, k, v, after.Scalars[k])
			}
		}
		for k, d := range before.Tensors {
			sameBits(t, c.name+" "+k, after.Tensors[k], d)
		}
	}
	o := build(t, refConfigs[4], ps, nil)
	if err := o.LoadState(nil); err == nil {
		t.Error("nil state accepted")
	}
	// State of another kind or configuration.
	w, _ := NewAdamW(ps, AdamSettings{AMSGrad: true})
	if err := w.LoadState(fresh()); err == nil || !strings.Contains(err.Error(), "missing scalar \"adamw.") {
		t.Errorf("Adam state into AdamW: %v", err)
	}
	s0, _ := NewSGD(ps, SGDSettings{})
	sm, _ := NewSGD(ps, SGDSettings{Momentum: 0.9})
	st, _ := sm.State()
	if err := s0.LoadState(st); err == nil || !strings.Contains(err.Error(), "saved with momentum = 0.9") {
		t.Errorf("momentum state into plain SGD: %v", err)
	}
	r0, _ := NewRMSProp(ps, RMSPropSettings{})
	rc, _ := NewRMSProp(ps, RMSPropSettings{Centered: true})
	st, _ = rc.State()
	if err := r0.LoadState(st); err == nil || !strings.Contains(err.Error(), "centered = true") {
		t.Errorf("centered state into plain RMSProp: %v", err)
	}
}
