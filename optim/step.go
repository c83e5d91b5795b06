package optim

import (
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// The Step loop and the hyperparameter checks SGD, Adam and RMSProp share.

// updater is an optimizer's update of parameter i at learning rate lr,
// for float32 and for float64 parameters.
type updater interface {
	update32(i int, lr float64)
	update64(i int, lr float64)
}

// step runs one Step of u, the optimizer b belongs to: it validates the
// step and takes its learning rate, then, for every active parameter,
// counts the update, applies it and marks the parameter modified, and
// finishes the step.
func (b *base) step(u updater) error {
	lr, err := b.prepare()
	if err != nil {
		return err
	}
	for i, p := range b.params {
		if !active(p) {
			continue
		}
		b.steps[i]++
		switch p.Data.Dtype() {
		case tensor.Float32:
			u.update32(i, lr)
		case tensor.Float64:
			u.update64(i, lr)
		}
		p.MarkModified()
	}
	b.finish()
	return nil
}

// hyperRule is a check of one hyperparameter: v is valid when it is
// finite and ok holds; format (with v as its one argument) is the error
// message otherwise.
type hyperRule struct {
	v      float64
	ok     bool
	format string
}

// checkHypers returns an ErrInvalidArgument error for the first rule
// that fails, or nil.
func (b *base) checkHypers(rules ...hyperRule) error {
	for _, r := range rules {
		if math.IsNaN(r.v) || math.IsInf(r.v, 0) || !r.ok {
			return b.errorf(autodiff.ErrInvalidArgument, r.format, r.v)
		}
	}
	return nil
}

// orLR returns the learning rate lr, or def when lr is zero (unset).
func orLR(lr, def float64) float64 {
	if lr == 0 {
		return def
	}
	return lr
}
