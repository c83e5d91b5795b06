package optim

import (
	"math"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// AdamSettings configures Adam and AdamW. Nil pointer fields take
// PyTorch's defaults; set them with Float(v) (zero included).
type AdamSettings struct {
	// LR is the learning rate; zero means the default 1e-3. Ignored when
	// Schedule is set.
	LR float64
	// Schedule, if non-nil, gives the learning rate of each step.
	Schedule Schedule
	// Beta1 and Beta2 are the decay rates of the moment estimates, in
	// [0, 1) (defaults 0.9 and 0.999).
	Beta1, Beta2 *float64
	// Eps is added to the denominator (default 1e-8).
	Eps *float64
	// WeightDecay: for Adam the L2 penalty added to the gradient (default
	// 0); for AdamW the decoupled decay rate (default 1e-2).
	WeightDecay *float64
	// AMSGrad uses the maximum of past second-moment estimates.
	AMSGrad bool
}

// Adam is the Adam optimizer (or AdamW) with PyTorch's torch.optim.Adam
// (torch.optim.AdamW) semantics. At the parameter's k-th update (k counts
// from 1 per parameter), with gradient g and learning rate lr:
//
//	p ← p·(1 − lr·wd)                     (AdamW, decoupled decay)
//	g ← g + wd·p                          (Adam, if wd ≠ 0)
//	m ← β1·m + (1−β1)·g
//	v ← β2·v + (1−β2)·g²
//	v̂ ← max(v̂, v) with AMSGrad, else v
//	p ← p − (lr/(1−β1^k)) · m / (√v̂/√(1−β2^k) + ε)
//
// ε is added after the bias correction of √v̂, as PyTorch does. The scalar
// factors are computed in float64, the element-wise work in the
// parameter's dtype. The state holds "adam.exp_avg/NAME",
// "adam.exp_avg_sq/NAME" and, with AMSGrad, "adam.max_exp_avg_sq/NAME"
// ("adamw." for AdamW).
type Adam struct {
	base
	beta1, beta2, eps, weightDecay float64
	amsgrad                        bool
	decoupled                      bool
}

// NewAdam returns an Adam optimizer for params (which must have distinct,
// non-empty names and float32 or float64 data).
func NewAdam(params []*autodiff.Param, s AdamSettings) (*Adam, error) {
	return newAdam(params, s, false)
}

// NewAdamW returns an AdamW optimizer (Adam with decoupled weight decay,
// default 1e-2) for params.
func NewAdamW(params []*autodiff.Param, s AdamSettings) (*Adam, error) {
	return newAdam(params, s, true)
}

func newAdam(params []*autodiff.Param, s AdamSettings, decoupled bool) (*Adam, error) {
	o := &Adam{
		beta1: orDefault(s.Beta1, 0.9), beta2: orDefault(s.Beta2, 0.999),
		eps: orDefault(s.Eps, 1e-8), amsgrad: s.AMSGrad, decoupled: decoupled,
	}
	if decoupled {
		o.kind, o.title = "adamw", "AdamW"
		o.weightDecay = orDefault(s.WeightDecay, 1e-2)
	} else {
		o.kind, o.title = "adam", "Adam"
		o.weightDecay = orDefault(s.WeightDecay, 0)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	lr := orLR(s.LR, 1e-3)
	if err := o.init(params, lr, s.Schedule, o.bufferNames()); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *Adam) bufferNames() []string {
	if o.amsgrad {
		return []string{"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
	}
	return []string{"exp_avg", "exp_avg_sq"}
}

func (o *Adam) validate() error {
	return o.checkHypers(
		hyperRule{o.beta1, o.beta1 >= 0 && o.beta1 < 1, "invalid beta1 %v: want 0 <= beta1 < 1"},
		hyperRule{o.beta2, o.beta2 >= 0 && o.beta2 < 1, "invalid beta2 %v: want 0 <= beta2 < 1"},
		hyperRule{o.eps, o.eps >= 0, "invalid eps %v"},
		hyperRule{o.weightDecay, o.weightDecay >= 0, "invalid weight decay %v"},
	)
}

func (o *Adam) hypers() []hyper {
	return []hyper{
		{name: "beta1", val: &o.beta1},
		{name: "beta2", val: &o.beta2},
		{name: "eps", val: &o.eps},
		{name: "weight_decay", val: &o.weightDecay},
		{name: "amsgrad", flag: &o.amsgrad, structural: true},
	}
}

// Step applies one Adam update (see Optimizer).
func (o *Adam) Step() error { return o.step(o) }

func (o *Adam) update32(i int, lr float64) { adamUpdate[float32](o, i, lr) }
func (o *Adam) update64(i int, lr float64) { adamUpdate[float64](o, i, lr) }

func adamUpdate[T tensorx.Float](o *Adam, i int, lr float64) {
	p := o.params[i]
	x, g := tensorx.MustSlice[T](p.Data), tensorx.MustSlice[T](p.Grad)
	m, v := buf[T](&o.base, "exp_avg", i), buf[T](&o.base, "exp_avg_sq", i)
	k := float64(o.steps[i])
	bc1 := 1 - math.Pow(o.beta1, k)
	bc2sqrt := math.Sqrt(1 - math.Pow(o.beta2, k))
	stepSize := T(lr / bc1)
	b1, b2 := T(o.beta1), T(o.beta2)
	c1, c2 := T(1-o.beta1), T(1-o.beta2)
	eps, bc2s := T(o.eps), T(bc2sqrt)
	if o.decoupled && o.weightDecay != 0 {
		f := T(1 - lr*o.weightDecay)
		for j := range x {
			x[j] *= f
		}
	}
	wd := T(0)
	if !o.decoupled {
		wd = T(o.weightDecay)
	}
	vmax := buf[T](&o.base, "max_exp_avg_sq", i) // nil without AMSGrad
	for j := range x {
		gj := g[j]
		if wd != 0 {
			gj += wd * x[j]
		}
		m[j] = b1*m[j] + c1*gj
		v[j] = b2*v[j] + c2*gj*gj
		vj := v[j]
		if vmax != nil {
			vmax[j] = max(vmax[j], vj)
			vj = vmax[j]
		}
		denom := sqrt(vj)/bc2s + eps
		x[j] -= stepSize * m[j] / denom
	}
}

// sqrt is the square root in T's precision (correctly rounded for both).
func sqrt[T tensorx.Float](x T) T { return T(math.Sqrt(float64(x))) }

// State returns a copy of the optimizer's state (see State).
func (o *Adam) State() (*State, error) { return o.state(o.hypers()) }

// LoadState restores a state saved by an optimizer of the same kind (Adam
// or AdamW) over parameters of the same names, shapes and dtypes (see
// State).
func (o *Adam) LoadState(s *State) error { return o.loadState(s, o.hypers(), o.validate) }
