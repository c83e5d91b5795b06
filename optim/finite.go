package optim

import (
	"errors"
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// ErrNonFinite is wrapped by the errors of ClipGradNorm and of the
// optimizers' Step when a gradient holds NaN or ±Inf (a loss that became
// NaN, an overflow): an update would turn the weights into NaN, so none is
// made. Skip the step (ZeroGrad), or find the op that made the first NaN
// (autodiff.DetectAnomaly) and lower the learning rate. (It is not
// autodiff.ErrNonFinite, anomaly detection's error for the op that made
// a non-finite value.)
var ErrNonFinite = errors.New("non-finite gradient")

// allFinite reports whether every element of s is finite. v-v is 0 for a
// finite v and NaN for NaN and ±Inf, and a sum with a NaN is NaN, so the
// loop has no branch; four sums keep the additions independent.
func allFinite[T tensorx.Float](s []T) bool {
	var a0, a1, a2, a3 T
	i := 0
	for ; i+4 <= len(s); i += 4 {
		a0 += s[i] - s[i]
		a1 += s[i+1] - s[i+1]
		a2 += s[i+2] - s[i+2]
		a3 += s[i+3] - s[i+3]
	}
	for ; i < len(s); i++ {
		a0 += s[i] - s[i]
	}
	return a0+a1+a2+a3 == 0
}

// gradFinite reports whether p's gradient (float32 or float64, checked by
// the caller) has only finite elements.
func gradFinite(p *autodiff.Param) bool {
	if p.Grad.Dtype() == tensor.Float32 {
		return allFinite(tensorx.MustSlice[float32](p.Grad))
	}
	return allFinite(tensorx.MustSlice[float64](p.Grad))
}

// nonFiniteError is the error for parameter p's non-finite gradient;
// unchanged says what was left alone.
func nonFiniteError(who string, p *autodiff.Param, unchanged string) error {
	return fmt.Errorf("%w: %s: parameter %q has a NaN or infinite gradient; %s (skip the step with ZeroGrad; autodiff.DetectAnomaly finds the op that made it)", ErrNonFinite, who, p.Name, unchanged)
}

// checkFinite returns the error for the first active parameter whose
// gradient is not finite, or nil.
func (b *base) checkFinite() error {
	for _, p := range b.params {
		if active(p) && !gradFinite(p) {
			return nonFiniteError("optim."+b.title+".Step", p, "no parameter was changed")
		}
	}
	return nil
}

// checkSomeGrad returns an ErrNoGradient error when the optimizer has
// trainable parameters and none of them has a gradient: the loss was not
// backpropagated, or reached none of these parameters (see
// autodiff.Tape.Backward), and the Step would silently do nothing.
func (b *base) checkSomeGrad() error {
	for _, p := range b.params {
		if active(p) {
			return nil
		}
	}
	var trainable []string
	for _, p := range b.params {
		if p.Trainable {
			trainable = append(trainable, p.Name)
		}
	}
	if len(trainable) == 0 {
		return nil
	}
	return b.errorf(autodiff.ErrNoGradient, "none of the %d trainable parameters has a gradient (%s): call tape.Backward(loss) before Step, on a loss computed from these parameters bound with tape.Param",
		len(trainable), listNames("parameters", trainable))
}

// clipNonFinite is ClipGradNorm's error for a norm that is not finite.
func clipNonFinite(params []*autodiff.Param, norm float64) error {
	for _, p := range params {
		if p != nil && active(p) && !gradFinite(p) {
			return nonFiniteError(fmt.Sprintf("optim.ClipGradNorm: the gradient norm is %v", norm), p, "no gradient was changed")
		}
	}
	return fmt.Errorf("%w: optim.ClipGradNorm: the gradient norm is %v (the sum of squares overflows); no gradient was changed", ErrNonFinite, norm)
}

// finite reports whether x is neither NaN nor ±Inf.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
