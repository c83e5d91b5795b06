package optim

import (
	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// SGDSettings configures SGD. The zero value is plain SGD with PyTorch's
// default learning rate.
type SGDSettings struct {
	// LR is the learning rate; zero means PyTorch's default 1e-3. Ignored
	// when Schedule is set.
	LR float64
	// Schedule, if non-nil, gives the learning rate of each step.
	Schedule Schedule
	// Momentum is the momentum factor (default 0: no momentum buffer).
	Momentum float64
	// Dampening damps the gradient's contribution to the momentum buffer
	// (default 0).
	Dampening float64
	// Nesterov enables Nesterov momentum (needs Momentum > 0 and zero
	// Dampening).
	Nesterov bool
	// WeightDecay is the L2 penalty added to the gradient (default 0).
	WeightDecay float64
}

// SGD is stochastic gradient descent with PyTorch's torch.optim.SGD
// semantics. For each parameter p with gradient g, with weight decay wd,
// momentum μ, dampening τ and learning rate lr:
//
//	g ← g + wd·p                          (if wd ≠ 0)
//	b ← g on the parameter's first update,
//	    μ·b + (1−τ)·g afterwards          (if μ ≠ 0)
//	g ← g + μ·b if Nesterov, else b       (if μ ≠ 0)
//	p ← p − lr·g
//
// Its state holds "sgd.momentum_buffer/NAME" when μ ≠ 0.
type SGD struct {
	base
	momentum, dampening, weightDecay float64
	nesterov                         bool
}

// NewSGD returns an SGD optimizer for params (which must have distinct,
// non-empty names and float32 or float64 data).
func NewSGD(params []*autodiff.Param, s SGDSettings) (*SGD, error) {
	o := &SGD{momentum: s.Momentum, dampening: s.Dampening, weightDecay: s.WeightDecay, nesterov: s.Nesterov}
	o.kind, o.title = "sgd", "SGD"
	if err := o.validate(); err != nil {
		return nil, err
	}
	lr := orLR(s.LR, 1e-3)
	var bufs []string
	if s.Momentum != 0 {
		bufs = []string{"momentum_buffer"}
	}
	if err := o.init(params, lr, s.Schedule, bufs); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *SGD) validate() error {
	if err := o.checkHypers(
		hyperRule{o.momentum, o.momentum >= 0, "invalid momentum %v"},
		hyperRule{o.dampening, true, "invalid dampening %v"},
		hyperRule{o.weightDecay, o.weightDecay >= 0, "invalid weight decay %v"},
	); err != nil {
		return err
	}
	if o.nesterov && (o.momentum <= 0 || o.dampening != 0) {
		return o.errorf(autodiff.ErrInvalidArgument, "Nesterov momentum requires a momentum and zero dampening")
	}
	return nil
}

func (o *SGD) hypers() []hyper {
	return []hyper{
		{name: "momentum", val: &o.momentum, nonzero: true},
		{name: "dampening", val: &o.dampening},
		{name: "weight_decay", val: &o.weightDecay},
		{name: "nesterov", flag: &o.nesterov},
	}
}

// Step applies one SGD update (see Optimizer).
func (o *SGD) Step() error { return o.step(o) }

func (o *SGD) update32(i int, lr float64) { sgdUpdate[float32](o, i, lr) }
func (o *SGD) update64(i int, lr float64) { sgdUpdate[float64](o, i, lr) }

func sgdUpdate[T tensorx.Float](o *SGD, i int, lr float64) {
	p := o.params[i]
	x, g := tensorx.MustSlice[T](p.Data), tensorx.MustSlice[T](p.Grad)
	wd, mu, damp, neg := T(o.weightDecay), T(o.momentum), T(1-o.dampening), T(-lr)
	if o.momentum == 0 {
		for j := range x {
			gj := g[j]
			if wd != 0 {
				gj += wd * x[j]
			}
			x[j] += neg * gj
		}
		return
	}
	b := buf[T](&o.base, "momentum_buffer", i)
	first := o.steps[i] == 1
	for j := range x {
		gj := g[j]
		if wd != 0 {
			gj += wd * x[j]
		}
		if first {
			b[j] = gj
		} else {
			b[j] = mu*b[j] + damp*gj
		}
		if o.nesterov {
			gj += mu * b[j]
		} else {
			gj = b[j]
		}
		x[j] += neg * gj
	}
}

// State returns a copy of the optimizer's state (see State).
func (o *SGD) State() (*State, error) { return o.state(o.hypers()) }

// LoadState restores a state saved by an SGD optimizer over parameters of
// the same names, shapes and dtypes (see State).
func (o *SGD) LoadState(s *State) error {
	return o.loadState(s, o.hypers(), o.validate)
}
