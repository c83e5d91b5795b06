package nn

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/registry"
)

// LayerNormOpts configure a LayerNorm layer. The zero value is Keras's
// default (epsilon 0.001, scale and center, float32).
type LayerNormOpts struct {
	// Epsilon is added to the variance (default 0.001, Keras's).
	Epsilon float64
	// NoScale drops Gamma; NoCenter drops Beta.
	NoScale, NoCenter bool
	// Dtype is the parameters' dtype, float32 (default) or float64.
	Dtype tensor.Dtype
}

// LayerNorm normalises each example over its last dimension (Keras's
// LayerNormalization with axis -1, PyTorch's LayerNorm over the last
// dimension): y = (x − μ)/sqrt(σ² + ε)·Gamma + Beta, with μ and σ² the
// mean and biased variance of x along the last dimension. Built from
// registered ops (Mean, Sub, Square, Rsqrt, Mul, AddV2), so its gradients
// of every order are those ops'.
type LayerNorm struct {
	// Gamma (initially 1) and Beta (initially 0), [features], named
	// "gamma" and "beta"; nil with NoScale, NoCenter.
	Gamma, Beta *autodiff.Param
	features    int
	eps         float64
	dtype       tensor.Dtype
	err         error
}

// NewLayerNorm returns a layer normalisation over a last dimension of the
// given size.
func NewLayerNorm(features int, opts LayerNormOpts) *LayerNorm {
	l := &LayerNorm{features: features, eps: opts.Epsilon}
	if l.eps == 0 {
		l.eps = 1e-3
	}
	l.err = l.init(opts)
	if l.err != nil {
		l.Gamma, l.Beta = nil, nil
	}
	return l
}

func (l *LayerNorm) init(o LayerNormOpts) error {
	const layer = "nn.NewLayerNorm"
	if l.features <= 0 {
		return configError("%s: features must be positive, got %d", layer, l.features)
	}
	if !(l.eps > 0) || math.IsInf(l.eps, 0) {
		return configError("%s: epsilon must be positive and finite, got %v", layer, o.Epsilon)
	}
	dt, err := paramDtype(layer, o.Dtype)
	if err != nil {
		return err
	}
	l.dtype = dt
	if !o.NoScale {
		if l.Gamma, err = newParam("gamma", dt, []int{l.features}, Ones, nil); err != nil {
			return wrapf(err, "%s", layer)
		}
	}
	if !o.NoCenter {
		if l.Beta, err = newParam("beta", dt, []int{l.features}, Zeros, nil); err != nil {
			return wrapf(err, "%s", layer)
		}
	}
	return nil
}

// Err returns the configuration error, or nil.
func (l *LayerNorm) Err() error { return l.err }

// Epsilon returns the layer's ε.
func (l *LayerNorm) Epsilon() float64 { return l.eps }

// String describes the layer: LayerNorm(features, eps=ε).
func (l *LayerNorm) String() string {
	if l.err != nil {
		return "LayerNorm(invalid)"
	}
	return fmt.Sprintf("LayerNorm(%d, eps=%v)", l.features, l.eps)
}

// Params returns Gamma and Beta (those present).
func (l *LayerNorm) Params() []*autodiff.Param { return params(l.Gamma, l.Beta) }

// Buffers returns nil: LayerNorm has no buffers.
func (l *LayerNorm) Buffers() []*Buffer { return nil }

// Forward normalises x over its last dimension.
func (l *LayerNorm) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return l.forward(t, x, nil)
}

// lnLast is the axis list of the last dimension.
var lnLast = []int{-1}

func (l *LayerNorm) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if l.err != nil {
		return fail(t, l.err)
	}
	if x.Err() != nil {
		return invalidInput(t, x)
	}
	if s := x.Shape(); len(s) == 0 || s[len(s)-1] != l.features {
		return fail(t, registry.Errorf(registry.ErrShape, "nn.LayerNorm: input's last dimension must be %d, got shape %v", l.features, s))
	}
	if x.Dtype() != l.dtype {
		return fail(t, registry.Errorf(registry.ErrDtype, "nn.LayerNorm: input has dtype %v, the layer %v", x.Dtype(), l.dtype))
	}
	mean := autodiff.Mean(x, lnLast, true)
	xc := autodiff.Sub(x, mean)
	v := autodiff.Mean(autodiff.Square(xc), lnLast, true)
	y := autodiff.Mul(xc, autodiff.Rsqrt(autodiff.Add(v, t.Scalar(l.dtype, l.eps))))
	if l.Gamma != nil {
		y = autodiff.Mul(y, bind(t, b, l.Gamma))
	}
	if l.Beta != nil {
		y = autodiff.Add(y, bind(t, b, l.Beta))
	}
	return y
}
