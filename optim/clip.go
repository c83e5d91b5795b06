package optim

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// ClipGradNorm scales the gradients of params in place so that their
// global L2 norm is at most maxNorm, as PyTorch's
// torch.nn.utils.clip_grad_norm_ does, and returns the norm before
// clipping. Parameters with Trainable false or a nil Grad are skipped.
//
// The norm is the square root of the sum of squares of every gradient
// element, accumulated in float64 in parameter order then element order
// (deterministic). The gradients are multiplied by
// maxNorm/(norm + 1e-6) when that factor is below 1, and left alone
// otherwise. A NaN or infinite norm (a gradient holding NaN or ±Inf) is an
// error wrapping ErrNonFinite, naming the parameter, and no gradient is
// changed, as PyTorch does with error_if_nonfinite=True: scaling by it
// would make every gradient, then every weight, NaN. The norm is returned
// with the error.
func ClipGradNorm(params []*autodiff.Param, maxNorm float64) (float64, error) {
	if math.IsNaN(maxNorm) || maxNorm < 0 {
		return 0, fmt.Errorf("%w: optim.ClipGradNorm: invalid max norm %v", autodiff.ErrInvalidArgument, maxNorm)
	}
	for i, p := range params {
		if p == nil {
			return 0, fmt.Errorf("%w: optim.ClipGradNorm: parameter %d is nil", autodiff.ErrInvalidArgument, i)
		}
		if !active(p) {
			continue
		}
		if dt := p.Grad.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
			return 0, fmt.Errorf("%w: optim.ClipGradNorm: parameter %q has a %v gradient", autodiff.ErrDtype, p.Name, dt)
		}
		if !contiguous(p.Grad) {
			return 0, fmt.Errorf("%w: optim.ClipGradNorm: parameter %q: the gradient must be contiguous", autodiff.ErrInvalidArgument, p.Name)
		}
	}
	var sum float64
	for _, p := range params {
		if !active(p) {
			continue
		}
		switch p.Grad.Dtype() {
		case tensor.Float32:
			sum += sumSquares(tensorx.MustSlice[float32](p.Grad))
		case tensor.Float64:
			sum += sumSquares(tensorx.MustSlice[float64](p.Grad))
		}
	}
	norm := math.Sqrt(sum)
	if !finite(norm) {
		return norm, clipNonFinite(params, norm)
	}
	coef := maxNorm / (norm + 1e-6)
	if coef >= 1 {
		return norm, nil
	}
	for _, p := range params {
		if !active(p) {
			continue
		}
		switch p.Grad.Dtype() {
		case tensor.Float32:
			scale(tensorx.MustSlice[float32](p.Grad), float32(coef))
		case tensor.Float64:
			scale(tensorx.MustSlice[float64](p.Grad), coef)
		}
	}
	return norm, nil
}

func sumSquares[T tensorx.Float](s []T) float64 {
	var acc float64
	for _, v := range s {
		acc += float64(v) * float64(v)
	}
	return acc
}

func scale[T tensorx.Float](s []T, c T) {
	for i := range s {
		s[i] *= c
	}
}
