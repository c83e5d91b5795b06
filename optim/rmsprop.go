package optim

import (
	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// RMSPropSettings configures RMSProp. Nil pointer fields take PyTorch's
// defaults; set them with Float(v) (zero included).
type RMSPropSettings struct {
	// LR is the learning rate; zero means the default 1e-2. Ignored when
	// Schedule is set.
	LR float64
	// Schedule, if non-nil, gives the learning rate of each step.
	Schedule Schedule
	// Alpha is the smoothing constant of the squared-gradient average, in
	// [0, 1] (default 0.99).
	Alpha *float64
	// Eps is added to the denominator (default 1e-8).
	Eps *float64
	// WeightDecay is the L2 penalty added to the gradient (default 0).
	WeightDecay float64
	// Momentum is the momentum factor (default 0: no momentum buffer).
	Momentum float64
	// Centered normalizes by an estimate of the gradient's variance.
	Centered bool
}

// RMSProp is the RMSProp optimizer with PyTorch's torch.optim.RMSprop
// semantics. For each parameter with gradient g and learning rate lr:
//
//	g ← g + wd·p                          (if wd ≠ 0)
//	s ← α·s + (1−α)·g²
//	a ← α·a + (1−α)·g                     (centered)
//	d ← √(s − a²) + ε if centered, else √s + ε
//	b ← μ·b + g/d, p ← p − lr·b           (if μ > 0)
//	p ← p − lr·g/d                        (otherwise)
//
// The state holds "rmsprop.square_avg/NAME", "rmsprop.momentum_buffer/NAME"
// when μ > 0 and "rmsprop.grad_avg/NAME" when centered.
type RMSProp struct {
	base
	alpha, eps, weightDecay, momentum float64
	centered                          bool
}

// NewRMSProp returns an RMSProp optimizer for params (which must have
// distinct, non-empty names and float32 or float64 data).
func NewRMSProp(params []*autodiff.Param, s RMSPropSettings) (*RMSProp, error) {
	o := &RMSProp{
		alpha: orDefault(s.Alpha, 0.99), eps: orDefault(s.Eps, 1e-8),
		weightDecay: s.WeightDecay, momentum: s.Momentum, centered: s.Centered,
	}
	o.kind, o.title = "rmsprop", "RMSProp"
	if err := o.validate(); err != nil {
		return nil, err
	}
	lr := orLR(s.LR, 1e-2)
	bufs := []string{"square_avg"}
	if o.momentum > 0 {
		bufs = append(bufs, "momentum_buffer")
	}
	if o.centered {
		bufs = append(bufs, "grad_avg")
	}
	if err := o.init(params, lr, s.Schedule, bufs); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *RMSProp) validate() error {
	return o.checkHypers(
		hyperRule{o.alpha, o.alpha >= 0 && o.alpha <= 1, "invalid alpha %v: want 0 <= alpha <= 1"},
		hyperRule{o.eps, o.eps >= 0, "invalid eps %v"},
		hyperRule{o.weightDecay, o.weightDecay >= 0, "invalid weight decay %v"},
		hyperRule{o.momentum, o.momentum >= 0, "invalid momentum %v"},
	)
}

func (o *RMSProp) hypers() []hyper {
	return []hyper{
		{name: "alpha", val: &o.alpha},
		{name: "eps", val: &o.eps},
		{name: "weight_decay", val: &o.weightDecay},
		{name: "momentum", val: &o.momentum, nonzero: true},
		{name: "centered", flag: &o.centered, structural: true},
	}
}

// Step applies one RMSProp update (see Optimizer).
func (o *RMSProp) Step() error { return o.step(o) }

func (o *RMSProp) update32(i int, lr float64) { rmspropUpdate[float32](o, i, lr) }
func (o *RMSProp) update64(i int, lr float64) { rmspropUpdate[float64](o, i, lr) }

func rmspropUpdate[T tensorx.Float](o *RMSProp, i int, lr float64) {
	p := o.params[i]
	x, g := tensorx.MustSlice[T](p.Data), tensorx.MustSlice[T](p.Grad)
	sq := buf[T](&o.base, "square_avg", i)
	mb := buf[T](&o.base, "momentum_buffer", i) // nil without momentum
	ga := buf[T](&o.base, "grad_avg", i)        // nil unless centered
	alpha, c, eps, wd := T(o.alpha), T(1-o.alpha), T(o.eps), T(o.weightDecay)
	mu, lrT := T(o.momentum), T(lr)
	for j := range x {
		gj := g[j]
		if wd != 0 {
			gj += wd * x[j]
		}
		sq[j] = alpha*sq[j] + c*gj*gj
		var d T
		if ga != nil {
			ga[j] = alpha*ga[j] + c*gj
			d = sqrt(sq[j]-ga[j]*ga[j]) + eps
		} else {
			d = sqrt(sq[j]) + eps
		}
		if mb != nil {
			mb[j] = mu*mb[j] + gj/d
			x[j] -= lrT * mb[j]
		} else {
			x[j] -= lrT * gj / d
		}
	}
}

// State returns a copy of the optimizer's state (see State).
func (o *RMSProp) State() (*State, error) { return o.state(o.hypers()) }

// LoadState restores a state saved by an RMSProp optimizer over parameters
// of the same names, shapes and dtypes (see State).
func (o *RMSProp) LoadState(s *State) error {
	return o.loadState(s, o.hypers(), o.validate)
}
