package nn

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// DenseOpts configure a Dense layer. The zero value is Keras's default
// (Glorot-uniform kernel, zero bias, float32), except that Rand must be set.
type DenseOpts struct {
	// NoBias drops the bias.
	NoBias bool
	// KernelInit initialises the weight (default GlorotUniform);
	// BiasInit the bias (default Zeros).
	KernelInit, BiasInit Initializer
	// Rand is the random source of the initializers. Required.
	Rand *rand.Rand
	// Dtype is the parameters' dtype, float32 (default) or float64.
	Dtype tensor.Dtype
}

// Dense is a fully connected layer: y = x·Weight + Bias for x of shape
// [batch, in] (TensorFlow's MatMul and BiasAdd). Use Flatten before it for
// inputs of higher rank.
type Dense struct {
	// Weight is the kernel, [in, out], named "weight".
	Weight *autodiff.Param
	// Bias is the bias, [out], named "bias"; nil with NoBias.
	Bias *autodiff.Param
	err  error
}

// The ops of Dense, with their attrs.
var (
	denseMatMul  = registry.NewAttrs(forward.MatMulAttrs{})
	denseBiasAdd = registry.NewAttrs(forward.BiasAddAttrs{DataFormat: "NHWC"})
)

// NewDense returns a Dense layer from in to out features.
func NewDense(in, out int, opts DenseOpts) *Dense {
	d := &Dense{}
	d.err = d.init(in, out, opts)
	if d.err != nil {
		d.Weight, d.Bias = nil, nil
	}
	return d
}

func (d *Dense) init(in, out int, o DenseOpts) error {
	if in <= 0 || out <= 0 {
		return configError("nn.NewDense: sizes must be positive, got in %d, out %d", in, out)
	}
	dt, err := paramDtype("nn.NewDense", o.Dtype)
	if err != nil {
		return err
	}
	if o.Rand == nil {
		return configError("nn.NewDense: DenseOpts.Rand is nil (initializers take an explicit *rand.Rand)")
	}
	if d.Weight, err = newParam("weight", dt, []int{in, out}, orInit(o.KernelInit, GlorotUniform), o.Rand); err != nil {
		return wrapf(err, "nn.NewDense")
	}
	if !o.NoBias {
		if d.Bias, err = newParam("bias", dt, []int{out}, orInit(o.BiasInit, Zeros), o.Rand); err != nil {
			return wrapf(err, "nn.NewDense")
		}
	}
	return nil
}

// Err returns the layer's configuration error, or nil.
func (d *Dense) Err() error { return d.err }

// Forward returns x·Weight + Bias.
func (d *Dense) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return d.forward(t, x, nil)
}

func (d *Dense) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if d.err != nil {
		return fail(t, d.err)
	}
	return d.forwardKernel(t, x, bind(t, b, d.Weight), b)
}

// forwardKernel applies the layer with the kernel value w.
func (d *Dense) forwardKernel(t *autodiff.Tape, x, w autodiff.Value, b binder) autodiff.Value {
	y := apply2(t, forward.MatMul, denseMatMul, x, w)
	if d.Bias != nil {
		y = apply2(t, forward.BiasAdd, denseBiasAdd, y, bind(t, b, d.Bias))
	}
	return y
}

func (d *Dense) kernel() *autodiff.Param { return d.Weight }

// quantShape: one quantisation channel per output feature.
func (d *Dense) quantShape() []int { return nil }

// Params returns Weight and Bias (if any).
func (d *Dense) Params() []*autodiff.Param { return params(d.Weight, d.Bias) }

// Buffers returns nil: Dense has no buffers.
func (d *Dense) Buffers() []*Buffer { return nil }

// params lists the non-nil parameters.
func params(ps ...*autodiff.Param) []*autodiff.Param {
	var out []*autodiff.Param
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// orInit returns init, or def if init is nil.
func orInit(init, def Initializer) Initializer {
	if init == nil {
		return def
	}
	return init
}

// paramDtype returns the parameters' dtype: float32 for the zero Dtype.
func paramDtype(layer string, dt tensor.Dtype) (tensor.Dtype, error) {
	switch dt {
	case tensor.Dtype{}:
		return tensor.Float32, nil
	case tensor.Float32, tensor.Float64:
		return dt, nil
	}
	return dt, registry.Errorf(registry.ErrDtype, "%s: parameters must be float32 or float64, got %v", layer, dt)
}
