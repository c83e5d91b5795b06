package optim

import (
	"errors"
	"fmt"
	"math"
)

// Schedule gives the learning rate of each step. LR(t) is the rate of the
// optimizer's Step number t, counted from 0. Schedules are pure functions
// of t, so restoring an optimizer's step count restores its schedule.
// Optimizers call Validate, if a schedule has one, when they are built.
type Schedule interface {
	LR(step int) float64
}

// Constant is a fixed learning rate.
type Constant float64

// LR returns c.
func (c Constant) LR(int) float64 { return float64(c) }

// Validate checks that the rate is finite and non-negative.
func (c Constant) Validate() error { return checkRate("Constant", float64(c)) }

func checkRate(what string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s: invalid learning rate %v", what, v)
	}
	return nil
}

// StepDecay multiplies the rate by Gamma every StepSize steps:
// LR(t) = Base·Gamma^⌊t/StepSize⌋ (PyTorch's StepLR, TensorFlow's
// ExponentialDecay with staircase=true).
type StepDecay struct {
	Base     float64
	StepSize int
	Gamma    float64
}

// LR returns Base·Gamma^⌊t/StepSize⌋ (Base for t < 0).
func (s StepDecay) LR(t int) float64 {
	if t < 0 || s.StepSize <= 0 {
		return s.Base
	}
	return s.Base * math.Pow(s.Gamma, float64(t/s.StepSize))
}

// Validate checks Base, StepSize > 0 and Gamma >= 0.
func (s StepDecay) Validate() error {
	if err := checkRate("StepDecay", s.Base); err != nil {
		return err
	}
	if s.StepSize <= 0 {
		return fmt.Errorf("StepDecay: StepSize %d must be positive", s.StepSize)
	}
	if math.IsNaN(s.Gamma) || math.IsInf(s.Gamma, 0) || s.Gamma < 0 {
		return fmt.Errorf("StepDecay: invalid Gamma %v", s.Gamma)
	}
	return nil
}

// Cosine anneals the rate from Base to Min over Steps steps along half a
// cosine, then stays at Min:
// LR(t) = Min + (Base−Min)·(1 + cos(π·min(t, Steps)/Steps))/2
// (PyTorch's CosineAnnealingLR closed form over its first half-period,
// TensorFlow's CosineDecay with alpha = Min/Base).
type Cosine struct {
	Base, Min float64
	Steps     int
}

// LR returns the annealed rate at step t.
func (c Cosine) LR(t int) float64 {
	if c.Steps <= 0 || t <= 0 {
		return c.Base
	}
	t = min(t, c.Steps)
	return c.Min + (c.Base-c.Min)*(1+math.Cos(math.Pi*float64(t)/float64(c.Steps)))/2
}

// Validate checks both rates and Steps > 0.
func (c Cosine) Validate() error {
	if err := errors.Join(checkRate("Cosine Base", c.Base), checkRate("Cosine Min", c.Min)); err != nil {
		return err
	}
	if c.Steps <= 0 {
		return fmt.Errorf("Cosine: Steps %d must be positive", c.Steps)
	}
	return nil
}

// Warmup ramps the rate up linearly over its first Steps steps, then
// follows Then, shifted: with target = Then.LR(0),
//
//	LR(t) = target·(Start + (1−Start)·t/Steps)   for t < Steps
//	LR(t) = Then.LR(t − Steps)                   for t ≥ Steps
//
// Start is the fraction of the target used at step 0 (0 ≤ Start ≤ 1; the
// zero value starts from a zero rate, as TensorFlow's warm-up does).
type Warmup struct {
	Steps int
	Start float64
	Then  Schedule
}

// LR returns the warmed-up rate at step t.
func (w Warmup) LR(t int) float64 {
	if w.Then == nil {
		return math.NaN()
	}
	if t >= w.Steps || w.Steps <= 0 {
		return w.Then.LR(t - max(w.Steps, 0))
	}
	if t < 0 {
		t = 0
	}
	return w.Then.LR(0) * (w.Start + (1-w.Start)*float64(t)/float64(w.Steps))
}

// Validate checks Steps >= 0, Start in [0, 1] and Then (and Then's own
// Validate, if any).
func (w Warmup) Validate() error {
	if w.Then == nil {
		return errors.New("Warmup: Then is nil")
	}
	if w.Steps < 0 {
		return fmt.Errorf("Warmup: Steps %d is negative", w.Steps)
	}
	if math.IsNaN(w.Start) || w.Start < 0 || w.Start > 1 {
		return fmt.Errorf("Warmup: Start %v is outside [0, 1]", w.Start)
	}
	if v, ok := w.Then.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("Warmup: Then: %w", err)
		}
	}
	return nil
}
