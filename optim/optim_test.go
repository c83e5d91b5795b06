package optim

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// param makes a parameter of dtype dt holding vals.
func param(t testing.TB, name string, dt tensor.Dtype, shape []int, vals ...float64) *autodiff.Param {
	t.Helper()
	p, err := autodiff.NewParam(name, dense(t, dt, shape, vals))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dense(t testing.TB, dt tensor.Dtype, shape []int, vals []float64) *tensor.Dense {
	t.Helper()
	var d *tensor.Dense
	var err error
	if dt == tensor.Float32 {
		s := make([]float32, len(vals))
		for i, v := range vals {
			s[i] = float32(v)
		}
		d, err = tensorx.New(shape, s)
	} else {
		d, err = tensorx.New(shape, append([]float64(nil), vals...))
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// setGrad stores vals into p.Grad, reusing its buffer when it has one.
func setGrad(t testing.TB, p *autodiff.Param, vals ...float64) {
	t.Helper()
	if p.Grad == nil {
		p.Grad = dense(t, p.Data.Dtype(), tensorx.Shape(p.Data), vals)
		return
	}
	switch p.Grad.Dtype() {
	case tensor.Float32:
		g := p.Grad.Float32s()
		for i, v := range vals {
			g[i] = float32(v)
		}
	default:
		copy(p.Grad.Float64s(), vals)
	}
}

func values(t testing.TB, d *tensor.Dense) []float64 {
	t.Helper()
	v, err := tensorx.Float64s(d)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func checkClose(t testing.TB, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Errorf("%s[%d] = %.17g, want %.17g (diff %.3g)", what, i, got[i], want[i], d)
		}
	}
}

var floatDtypes = []tensor.Dtype{tensor.Float64, tensor.Float32}

func tolFor(dt tensor.Dtype) float64 {
	if dt == tensor.Float32 {
		return 2e-7
	}
	return 1e-15
}

// One step of each optimizer from p = [1, -2], g = [0.5, -0.25] against
// values computed by hand from the documented formulas.
func TestOneStepHandValues(t *testing.T) {
	type mk func([]*autodiff.Param) (Optimizer, error)
	cases := []struct {
		name string
		new  mk
		grad []float64
		want []float64
	}{
		{"SGD", func(ps []*autodiff.Param) (Optimizer, error) { return NewSGD(ps, SGDSettings{LR: 0.1}) },
			[]float64{0.5, 0.25}, []float64{0.95, -2.025}},
		{"SGD weight decay", func(ps []*autodiff.Param) (Optimizer, error) {
			return NewSGD(ps, SGDSettings{LR: 0.1, WeightDecay: 0.1})
		}, // g' = g + 0.1 p = [0.6, 0.05]
			[]float64{0.5, 0.25}, []float64{0.94, -2.005}},
		{"SGD momentum first step", func(ps []*autodiff.Param) (Optimizer, error) {
			return NewSGD(ps, SGDSettings{LR: 0.1, Momentum: 0.9, Dampening: 0.5})
		}, // b = g on the first step, dampening unused
			[]float64{0.5, 0.25}, []float64{0.95, -2.025}},
		{"SGD Nesterov", func(ps []*autodiff.Param) (Optimizer, error) {
			return NewSGD(ps, SGDSettings{LR: 0.1, Momentum: 0.9, Nesterov: true})
		}, // b = g, g' = g + 0.9 b = 1.9 g
			[]float64{0.5, 0.25}, []float64{0.905, -2.0475}},
		{"Adam", func(ps []*autodiff.Param) (Optimizer, error) { return NewAdam(ps, AdamSettings{LR: 0.1}) },
			// m = 0.1g, v = 0.001g², p -= (0.1/0.1)·m/(√v/√0.001 + 1e-8) = 0.1·|g|/(|g|+1e-8)·sign(g)
			[]float64{0.5, -0.25}, []float64{1 - 0.05/0.50000001, -2 + 0.025/0.25000001}},
		{"AdamW", func(ps []*autodiff.Param) (Optimizer, error) {
			return NewAdamW(ps, AdamSettings{LR: 0.1, WeightDecay: Float(0.1)})
		}, // p *= 1 − 0.1·0.1 first
			[]float64{0.5, -0.25}, []float64{0.99 - 0.05/0.50000001, -1.98 + 0.025/0.25000001}},
		{"RMSProp", func(ps []*autodiff.Param) (Optimizer, error) { return NewRMSProp(ps, RMSPropSettings{}) },
			// lr 0.01, s = 0.01g², p -= 0.01·g/(|g|/10 + 1e-8)
			[]float64{0.5, -0.25}, []float64{1 - 0.005/0.05000001, -2 + 0.0025/0.02500001}},
		{"RMSProp centered", func(ps []*autodiff.Param) (Optimizer, error) {
			return NewRMSProp(ps, RMSPropSettings{Centered: true})
		}, // s − a² = 0.01g² − 0.0001g² = 0.0099g²
			[]float64{0.5, -0.25}, []float64{1 - 0.005/(0.5*math.Sqrt(0.0099)+1e-8), -2 + 0.0025/(0.25*math.Sqrt(0.0099)+1e-8)}},
	}
	// The same numbers, evaluated to 17 digits by hand (as a check on the
	// expressions above).
	literal := map[string][]float64{
		"Adam":             {0.9000000019999999, -1.9000000039999998},
		"AdamW":            {0.8900000019999998, -1.8800000039999998},
		"RMSProp":          {0.900000019999996, -1.9000000399999841},
		"RMSProp centered": {0.899496238676095, -1.899496258878103},
	}
	for _, c := range cases {
		if lit, ok := literal[c.name]; ok {
			checkClose(t, c.name+" literal", c.want, lit, 1e-15)
		}
		for _, dt := range floatDtypes {
			p := param(t, "w", dt, []int{2}, 1, -2)
			opt, err := c.new([]*autodiff.Param{p})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			setGrad(t, p, c.grad...)
			v0 := p.Version()
			if err := opt.Step(); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			checkClose(t, c.name+" "+dt.String(), values(t, p.Data), c.want, tolFor(dt))
			if p.Version() != v0+1 {
				t.Errorf("%s: MarkModified not called once (version %d -> %d)", c.name, v0, p.Version())
			}
			if g := values(t, p.Grad); g[0] != 0 || g[1] != 0 {
				t.Errorf("%s: gradient not zeroed: %v", c.name, g)
			}
			if opt.Steps() != 1 {
				t.Errorf("%s: Steps() = %d", c.name, opt.Steps())
			}
		}
	}
}

// Two SGD steps with momentum 0.9 and dampening 0.1 (b2 = 0.9·b1 + 0.9·g).
func TestSGDMomentumTwoSteps(t *testing.T) {
	p := param(t, "w", tensor.Float64, []int{2}, 1, -2)
	opt, err := NewSGD([]*autodiff.Param{p}, SGDSettings{LR: 0.1, Momentum: 0.9, Dampening: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		setGrad(t, p, 0.5, 0.25)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	// b1 = [0.5, 0.25]; b2 = [0.9, 0.45]; p = [1 − 0.05 − 0.09, −2 − 0.025 − 0.045]
	checkClose(t, "p", values(t, p.Data), []float64{0.86, -2.07}, 1e-15)
}

// ---- naive float64 references, written from PyTorch's documented
// algorithms, one element at a time ----

type refParam struct {
	x, b, m, v, vmax, sq, ga []float64
	k                        int
}

func newRef(x []float64) *refParam {
	n := len(x)
	return &refParam{x: append([]float64(nil), x...), b: make([]float64, n), m: make([]float64, n),
		v: make([]float64, n), vmax: make([]float64, n), sq: make([]float64, n), ga: make([]float64, n)}
}

type refConfig struct {
	kind                                 string
	lr, mom, damp, wd, b1, b2, eps, alph float64
	nesterov, ams, centered              bool
}

func (r *refParam) step(c refConfig, g []float64, lr float64) {
	r.k++
	for j := range r.x {
		gj := g[j]
		switch c.kind {
		case "sgd":
			if c.wd != 0 {
				gj += c.wd * r.x[j]
			}
			if c.mom != 0 {
				if r.k == 1 {
					r.b[j] = gj
				} else {
					r.b[j] = c.mom*r.b[j] + (1-c.damp)*gj
				}
				if c.nesterov {
					gj += c.mom * r.b[j]
				} else {
					gj = r.b[j]
				}
			}
			r.x[j] -= lr * gj
		case "adam", "adamw":
			if c.kind == "adamw" {
				r.x[j] *= 1 - lr*c.wd
			} else if c.wd != 0 {
				gj += c.wd * r.x[j]
			}
			r.m[j] = c.b1*r.m[j] + (1-c.b1)*gj
			r.v[j] = c.b2*r.v[j] + (1-c.b2)*gj*gj
			vh := r.v[j]
			if c.ams {
				r.vmax[j] = math.Max(r.vmax[j], r.v[j])
				vh = r.vmax[j]
			}
			mhat := r.m[j] / (1 - math.Pow(c.b1, float64(r.k)))
			denom := math.Sqrt(vh)/math.Sqrt(1-math.Pow(c.b2, float64(r.k))) + c.eps
			r.x[j] -= lr * mhat / denom
		case "rmsprop":
			if c.wd != 0 {
				gj += c.wd * r.x[j]
			}
			r.sq[j] = c.alph*r.sq[j] + (1-c.alph)*gj*gj
			avg := r.sq[j]
			if c.centered {
				r.ga[j] = c.alph*r.ga[j] + (1-c.alph)*gj
				avg -= r.ga[j] * r.ga[j]
			}
			d := math.Sqrt(avg) + c.eps
			if c.mom > 0 {
				r.b[j] = c.mom*r.b[j] + gj/d
				r.x[j] -= lr * r.b[j]
			} else {
				r.x[j] -= lr * gj / d
			}
		}
	}
}

func build(t testing.TB, c refConfig, ps []*autodiff.Param, sched Schedule) Optimizer {
	t.Helper()
	var opt Optimizer
	var err error
	switch c.kind {
	case "sgd":
		opt, err = NewSGD(ps, SGDSettings{LR: c.lr, Schedule: sched, Momentum: c.mom, Dampening: c.damp, Nesterov: c.nesterov, WeightDecay: c.wd})
	case "adam":
		opt, err = NewAdam(ps, AdamSettings{LR: c.lr, Schedule: sched, Beta1: Float(c.b1), Beta2: Float(c.b2), Eps: Float(c.eps), WeightDecay: Float(c.wd), AMSGrad: c.ams})
	case "adamw":
		opt, err = NewAdamW(ps, AdamSettings{LR: c.lr, Schedule: sched, Beta1: Float(c.b1), Beta2: Float(c.b2), Eps: Float(c.eps), WeightDecay: Float(c.wd), AMSGrad: c.ams})
	case "rmsprop":
		opt, err = NewRMSProp(ps, RMSPropSettings{LR: c.lr, Schedule: sched, Alpha: Float(c.alph), Eps: Float(c.eps), WeightDecay: c.wd, Momentum: c.mom, Centered: c.centered})
	}
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

var refConfigs = []refConfig{
	{kind: "sgd", lr: 0.05},
	{kind: "sgd", lr: 0.05, mom: 0.9, damp: 0.2, wd: 0.01},
	{kind: "sgd", lr: 0.05, mom: 0.8, wd: 0.01, nesterov: true},
	{kind: "adam", lr: 0.01, b1: 0.9, b2: 0.999, eps: 1e-8},
	{kind: "adam", lr: 0.01, b1: 0.8, b2: 0.99, eps: 1e-6, wd: 0.05, ams: true},
	{kind: "adamw", lr: 0.01, b1: 0.9, b2: 0.999, eps: 1e-8, wd: 0.1},
	{kind: "adamw", lr: 0.01, b1: 0, b2: 0.9, eps: 1e-8, wd: 0.1, ams: true},
	{kind: "rmsprop", lr: 0.01, alph: 0.99, eps: 1e-8},
	{kind: "rmsprop", lr: 0.01, alph: 0.9, eps: 1e-6, wd: 0.01, mom: 0.5, centered: true},
}

func (c refConfig) String() string {
	var b strings.Builder
	b.WriteString(c.kind)
	if c.mom != 0 {
		b.WriteString("+momentum")
	}
	if c.nesterov {
		b.WriteString("+nesterov")
	}
	if c.ams {
		b.WriteString("+amsgrad")
	}
	if c.centered {
		b.WriteString("+centered")
	}
	return b.String()
}

// Twenty steps of every configuration on two parameters, with random
// gradients, a schedule, a parameter that is sometimes without gradient
// and a frozen one, against the naive float64 loop.
func TestMatchesReference(t *testing.T) {
	sched := Warmup{Steps: 3, Start: 0.2, Then: Cosine{Base: 1, Min: 0.1, Steps: 15}}
	for _, c := range refConfigs {
		for _, dt := range floatDtypes {
			rng := rand.New(rand.NewPCG(1, 2))
			a0 := []float64{0.5, -1.5, 2, 0.25, -0.75, 1}
			b0 := []float64{-0.3, 0.7, 1.1}
			a := param(t, "a", dt, []int{2, 3}, a0...)
			b := param(t, "b", dt, []int{3}, b0...)
			frozen := param(t, "frozen", dt, []int{1}, 3)
			frozen.Trainable = false
			setGrad(t, frozen, 1)
			ls := scaleSchedule{sched, c.lr} // the schedule, scaled to the config's rate
			opt := build(t, c, []*autodiff.Param{a, b, frozen}, ls)
			ra, rb := newRef(a0), newRef(b0)
			if dt == tensor.Float32 {
				// The reference starts from the float32-rounded values.
				ra, rb = newRef(values(t, a.Data)), newRef(values(t, b.Data))
			}
			for step := range 20 {
				ga, gb := make([]float64, 6), make([]float64, 3)
				for i := range ga {
					ga[i] = round(dt, rng.NormFloat64())
				}
				for i := range gb {
					gb[i] = round(dt, rng.NormFloat64())
				}
				setGrad(t, a, ga...)
				lr := ls.LR(step)
				if step%3 == 1 {
					b.Grad = nil // no gradient this step: skipped, no state change
				} else {
					setGrad(t, b, gb...)
					rb.step(c, gb, lr)
				}
				ra.step(c, ga, lr)
				if got := opt.LR(); got != lr {
					t.Fatalf("%v: LR() = %v, want %v", c, got, lr)
				}
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
			}
			tol := 1e-12
			if dt == tensor.Float32 {
				tol = 2e-5
			}
			checkClose(t, c.String()+" "+dt.String()+" a", values(t, a.Data), ra.x, tol)
			checkClose(t, c.String()+" "+dt.String()+" b", values(t, b.Data), rb.x, tol)
			if v := values(t, frozen.Data); v[0] != round(dt, 3) || frozen.Version() != 0 {
				t.Errorf("%v: frozen parameter changed: %v (version %d)", c, v, frozen.Version())
			}
			if g := values(t, frozen.Grad); g[0] != 0 {
				t.Errorf("%v: frozen parameter's gradient not zeroed", c)
			}
			st, err := opt.State()
			if err != nil {
				t.Fatal(err)
			}
			if st.Scalars[c.kind+".step/a"] != 20 || st.Scalars[c.kind+".step/b"] != float64(rb.k) || st.Scalars[c.kind+".step/frozen"] != 0 || st.Scalars[c.kind+".steps"] != 20 {
				t.Errorf("%v: step counts %v", c, st.Scalars)
			}
		}
	}
}

type scaleSchedule struct {
	s Schedule
	f float64
}

func (s scaleSchedule) LR(t int) float64 { return s.f * s.s.LR(t) }

func round(dt tensor.Dtype, v float64) float64 {
	if dt == tensor.Float32 {
		return float64(float32(v))
	}
	return v
}

func TestStepAllocatesNothing(t *testing.T) {
	for _, c := range refConfigs {
		a := param(t, "a", tensor.Float32, []int{64}, make([]float64, 64)...)
		b := param(t, "b", tensor.Float64, []int{8, 8}, make([]float64, 64)...)
		opt := build(t, c, []*autodiff.Param{a, b}, Warmup{Steps: 2, Then: Constant(0.1)})
		g := make([]float64, 64)
		for i := range g {
			g[i] = float64(i%7) - 3
		}
		setGrad(t, a, g...)
		setGrad(t, b, g...)
		allocs := testing.AllocsPerRun(20, func() {
			setGrad(t, a, g...)
			setGrad(t, b, g...)
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per Step", c, allocs)
		}
	}
}

func TestStepErrorsChangeNothing(t *testing.T) {
	for _, c := range refConfigs {
		a := param(t, "a", tensor.Float64, []int{2}, 1, 2)
		b := param(t, "b", tensor.Float64, []int{2}, 3, 4)
		opt := build(t, c, []*autodiff.Param{a, b}, nil)
		setGrad(t, a, 1, 1)
		b.Grad = dense(t, tensor.Float64, []int{3}, []float64{1, 1, 1})
		err := opt.Step()
		if !errors.Is(err, autodiff.ErrShape) || !strings.Contains(err.Error(), `parameter "b"`) {
			t.Errorf("%v: wrong-shape gradient: %v", c, err)
		}
		if v := values(t, a.Data); v[0] != 1 || a.Version() != 0 || values(t, a.Grad)[0] != 1 || opt.Steps() != 0 {
			t.Errorf("%v: a failed Step changed a parameter, a gradient or the step count", c)
		}
		b.Grad = dense(t, tensor.Float32, []int{2}, []float64{1, 1})
		if err := opt.Step(); !errors.Is(err, autodiff.ErrShape) {
			t.Errorf("%v: wrong-dtype gradient: %v", c, err)
		}
		// Data replaced by a tensor of another shape.
		b.Grad = nil
		b.Data = dense(t, tensor.Float64, []int{3}, []float64{1, 2, 3})
		b.Grad = dense(t, tensor.Float64, []int{3}, []float64{1, 2, 3})
		err = opt.Step()
		if c.kind == "sgd" && c.mom == 0 {
			if err != nil {
				t.Errorf("%v: stateless SGD should accept a reshaped parameter: %v", c, err)
			}
		} else if !errors.Is(err, autodiff.ErrShape) || !strings.Contains(err.Error(), "state") {
			t.Errorf("%v: parameter reshaped under its state: %v", c, err)
		}
	}
	// A schedule giving a bad rate.
	a := param(t, "a", tensor.Float64, []int{1}, 1)
	opt, err := NewSGD([]*autodiff.Param{a}, SGDSettings{Schedule: badSchedule{}})
	if err != nil {
		t.Fatal(err)
	}
	setGrad(t, a, 1)
	if err := opt.Step(); !errors.Is(err, autodiff.ErrInvalidArgument) || values(t, a.Data)[0] != 1 {
		t.Errorf("negative scheduled rate: %v", err)
	}
	// A view as data.
	v := param(t, "v", tensor.Float64, []int{2, 2}, 1, 2, 3, 4)
	opt, err = NewSGD([]*autodiff.Param{v}, SGDSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Data.T(); err != nil {
		t.Fatal(err)
	}
	setGrad(t, v, 1, 1, 1, 1)
	if err := opt.Step(); !errors.Is(err, autodiff.ErrInvalidArgument) {
		t.Errorf("transposed data: %v", err)
	}
}

type badSchedule struct{}

func (badSchedule) LR(int) float64 { return -1 }

func TestConstructorErrors(t *testing.T) {
	ok := param(t, "w", tensor.Float64, []int{1}, 1)
	intParam := &autodiff.Param{Name: "i", Data: func() *tensor.Dense {
		d, _ := tensorx.New([]int{1}, []int32{1})
		return d
	}(), Trainable: true}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil param", second(NewSGD([]*autodiff.Param{nil}, SGDSettings{})), "parameter 0 is nil"},
		{"no name", second(NewSGD([]*autodiff.Param{{Data: ok.Data}}, SGDSettings{})), "no name"},
		{"duplicate", second(NewAdam([]*autodiff.Param{ok, ok}, AdamSettings{})), `two parameters are named "w"`},
		{"int data", second(NewAdam([]*autodiff.Param{intParam}, AdamSettings{})), "want float32 or float64"},
		{"no data", second(NewRMSProp([]*autodiff.Param{{Name: "x"}}, RMSPropSettings{})), "has no data"},
		{"negative lr", second(NewSGD(nil, SGDSettings{LR: -1})), "invalid learning rate -1"},
		{"NaN lr", second(NewAdam(nil, AdamSettings{LR: math.NaN()})), "invalid learning rate NaN"},
		{"negative momentum", second(NewSGD(nil, SGDSettings{Momentum: -0.1})), "invalid momentum"},
		{"nesterov without momentum", second(NewSGD(nil, SGDSettings{Nesterov: true})), "Nesterov momentum requires"},
		{"nesterov with dampening", second(NewSGD(nil, SGDSettings{Nesterov: true, Momentum: 0.9, Dampening: 0.1})), "Nesterov momentum requires"},
		{"beta1 = 1", second(NewAdam(nil, AdamSettings{Beta1: Float(1)})), "invalid beta1 1"},
		{"beta2 < 0", second(NewAdamW(nil, AdamSettings{Beta2: Float(-0.5)})), "invalid beta2"},
		{"eps < 0", second(NewAdam(nil, AdamSettings{Eps: Float(-1)})), "invalid eps"},
		{"adamw decay < 0", second(NewAdamW(nil, AdamSettings{WeightDecay: Float(-1)})), "invalid weight decay"},
		{"alpha > 1", second(NewRMSProp(nil, RMSPropSettings{Alpha: Float(1.5)})), "invalid alpha"},
		{"rmsprop momentum < 0", second(NewRMSProp(nil, RMSPropSettings{Momentum: -1})), "invalid momentum"},
		{"bad schedule", second(NewSGD(nil, SGDSettings{Schedule: StepDecay{Base: 0.1}})), "StepSize 0 must be positive"},
		{"bad warmup", second(NewSGD(nil, SGDSettings{Schedule: Warmup{Steps: 2}})), "Then is nil"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, c.err, c.want)
			continue
		}
		if !errors.Is(c.err, autodiff.ErrInvalidArgument) && !errors.Is(c.err, autodiff.ErrDtype) {
			t.Errorf("%s: %v wraps no sentinel", c.name, c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestDefaults(t *testing.T) {
	p := param(t, "w", tensor.Float64, []int{1}, 1)
	ps := []*autodiff.Param{p}
	sgd, _ := NewSGD(ps, SGDSettings{})
	adam, _ := NewAdam(ps, AdamSettings{})
	adamw, _ := NewAdamW(ps, AdamSettings{})
	rms, _ := NewRMSProp(ps, RMSPropSettings{})
	check := func(o Optimizer, want map[string]float64) {
		t.Helper()
		st, err := o.State()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if st.Scalars[k] != v {
				t.Errorf("%s = %v, want %v", k, st.Scalars[k], v)
			}
		}
	}
	check(sgd, map[string]float64{"sgd.lr": 1e-3, "sgd.momentum": 0, "sgd.dampening": 0, "sgd.weight_decay": 0, "sgd.nesterov": 0})
	check(adam, map[string]float64{"adam.lr": 1e-3, "adam.beta1": 0.9, "adam.beta2": 0.999, "adam.eps": 1e-8, "adam.weight_decay": 0, "adam.amsgrad": 0})
	check(adamw, map[string]float64{"adamw.lr": 1e-3, "adamw.beta1": 0.9, "adamw.beta2": 0.999, "adamw.eps": 1e-8, "adamw.weight_decay": 1e-2})
	check(rms, map[string]float64{"rmsprop.lr": 1e-2, "rmsprop.alpha": 0.99, "rmsprop.eps": 1e-8, "rmsprop.momentum": 0, "rmsprop.centered": 0})
	if rms.LR() != 1e-2 || len(sgd.Params()) != 1 {
		t.Error("LR or Params wrong")
	}
	// Zero set explicitly through Float.
	z, err := NewAdam(ps, AdamSettings{Beta1: Float(0), Eps: Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	check(z, map[string]float64{"adam.beta1": 0, "adam.eps": 0})
}
