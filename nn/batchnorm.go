package nn

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// BatchNormOpts configure a BatchNorm layer. The zero value is Keras's
// default (momentum 0.99, epsilon 0.001, NHWC, float32).
type BatchNormOpts struct {
	// Momentum m of the running statistics, in [0, 1] (default 0.99):
	// running ← m·running + (1 − m)·batch. It is passed to
	// FusedBatchNormV3 as exponential_avg_factor = 1 − m (rounded to
	// float32, the attr's type), as Keras does.
	Momentum *float64
	// Epsilon is added to the variance (default 0.001, Keras's; the raw
	// op's default is 0.0001).
	Epsilon float64
	// DataFormat is "NHWC" (default) or "NCHW" for 4-D inputs, "NDHWC" or
	// "NCDHW" for 5-D ones.
	DataFormat string
	// Dtype is the dtype of the parameters, buffers and inputs, float32
	// (default) or float64.
	Dtype tensor.Dtype
	// ReLU applies max(y, 0) to the output in the same pass
	// (_FusedBatchNormEx with activation_mode Relu, TensorFlow's fusion of
	// FusedBatchNormV3 and Relu): the values and gradients of BatchNorm
	// followed by ReLU, with one pass over the output fewer.
	ReLU bool
}

// BatchNorm normalises each channel of its 4-D or 5-D input with
// TensorFlow's FusedBatchNormV3: y = (x − μ)·Scale/sqrt(σ² + ε) + Offset.
//
// In training (the tape's mode), μ and σ² are the batch's mean and biased
// variance, and every Forward updates the running statistics (buffers
// MovingMean and MovingVariance) with the batch mean and the unbiased
// batch variance: running ← momentum·running + (1 − momentum)·batch, the
// op's exponential_avg_factor being 1 − momentum. In evaluation, μ and σ²
// are the running statistics (is_training false), and nothing is updated.
// Gradients flow to x, Scale and Offset in both modes, as TensorFlow's.
//
// With BatchNormOpts.ReLU the layer runs _FusedBatchNormEx instead, whose
// y is max(y, 0): the same values and gradients as BatchNorm then ReLU.
type BatchNorm struct {
	// Scale (γ, initially 1) and Offset (β, initially 0), [C], named
	// "scale" and "offset".
	Scale, Offset *autodiff.Param
	// MovingMean (initially 0) and MovingVariance (initially 1), [C],
	// named "moving_mean" and "moving_variance".
	MovingMean, MovingVariance *Buffer
	train, eval                forward.FusedBatchNormAttrs
	trainOp, evalOp            registry.Attrs[forward.FusedBatchNormAttrs] // FusedBatchNormV3 in train, eval mode
	relu                       bool
	trainEx, evalEx            registry.Attrs[forward.FusedBatchNormExAttrs] // _FusedBatchNormEx with Relu (ReLU)
	err                        error
}

// NewBatchNorm returns a batch normalisation of the given number of
// channels.
func NewBatchNorm(channels int, opts BatchNormOpts) *BatchNorm {
	b := &BatchNorm{}
	if b.err = b.init(channels, opts); b.err != nil {
		b.Scale, b.Offset, b.MovingMean, b.MovingVariance = nil, nil, nil, nil
	}
	return b
}

func (b *BatchNorm) init(c int, o BatchNormOpts) error {
	const layer = "nn.NewBatchNorm"
	if c <= 0 {
		return configError("%s: the channel count must be positive, got %d", layer, c)
	}
	m := 0.99
	if o.Momentum != nil {
		m = *o.Momentum
	}
	if !(m >= 0 && m <= 1) {
		return configError("%s: Momentum must be in [0, 1], got %v", layer, m)
	}
	eps := o.Epsilon
	if eps == 0 {
		eps = 0.001
	}
	if !(eps > 0) || eps > math.MaxFloat32 {
		return configError("%s: Epsilon must be positive, got %v", layer, o.Epsilon)
	}
	format := o.DataFormat
	switch format {
	case "":
		format = "NHWC"
	case "NHWC", "NCHW", "NDHWC", "NCDHW":
	default:
		return configError("%s: data format must be NHWC, NCHW, NDHWC or NCDHW, got %q", layer, o.DataFormat)
	}
	dt, err := paramDtype(layer, o.Dtype)
	if err != nil {
		return err
	}
	eps32, f32, tr, ev := float32(eps), float32(1-m), true, false
	b.train = forward.FusedBatchNormAttrs{Epsilon: &eps32, ExponentialAvgFactor: &f32, DataFormat: format, IsTraining: &tr}
	b.eval = forward.FusedBatchNormAttrs{Epsilon: &eps32, DataFormat: format, IsTraining: &ev}
	b.trainOp = registry.NewAttrs(b.train)
	b.evalOp = registry.NewAttrs(b.eval)
	if b.relu = o.ReLU; b.relu {
		b.trainEx = registry.NewAttrs(reluAttrs(b.train))
		b.evalEx = registry.NewAttrs(reluAttrs(b.eval))
	}
	if b.Scale, err = newParam("scale", dt, []int{c}, Ones, nil); err != nil {
		return wrapf(err, layer)
	}
	if b.Offset, err = newParam("offset", dt, []int{c}, Zeros, nil); err != nil {
		return wrapf(err, layer)
	}
	if b.MovingMean, err = newBuffer("moving_mean", dt, []int{c}, 0); err != nil {
		return wrapf(err, layer)
	}
	if b.MovingVariance, err = newBuffer("moving_variance", dt, []int{c}, 1); err != nil {
		return wrapf(err, layer)
	}
	return nil
}

// reluAttrs returns _FusedBatchNormEx's attrs for a's FusedBatchNormV3
// followed by Relu.
func reluAttrs(a forward.FusedBatchNormAttrs) forward.FusedBatchNormExAttrs {
	return forward.FusedBatchNormExAttrs{Epsilon: a.Epsilon, ExponentialAvgFactor: a.ExponentialAvgFactor,
		DataFormat: a.DataFormat, IsTraining: a.IsTraining, ActivationMode: "Relu"}
}

// Err returns the layer's configuration error, or nil.
func (b *BatchNorm) Err() error { return b.err }

func (b *BatchNorm) String() string {
	if b.err != nil {
		return "BatchNorm(invalid)"
	}
	relu := ""
	if b.relu {
		relu = ", ReLU"
	}
	return fmt.Sprintf("BatchNorm(%d, momentum %v, %s%s)", b.Scale.Data.Shape()[0], 1-float64(*b.train.ExponentialAvgFactor), b.train.DataFormat, relu)
}

// Forward normalises x, updating the running statistics in training.
func (b *BatchNorm) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return b.forward(t, x, nil)
}

func (b *BatchNorm) forward(t *autodiff.Tape, x autodiff.Value, bd binder) autodiff.Value {
	if b.err != nil {
		return fail(t, b.err)
	}
	scale, offset := bind(t, bd, b.Scale), bind(t, bd, b.Offset)
	mean, variance := t.Constant(b.MovingMean.Data), t.Constant(b.MovingVariance.Data)
	e := t.Emitter()
	xr, sr, or, mr, vr := t.Ref(x), t.Ref(scale), t.Ref(offset), t.Ref(mean), t.Ref(variance)
	if !t.IsTraining() {
		if b.relu {
			return autodiff.ValueOf(forward.FusedBatchNormEx(e, b.evalEx, xr, sr, or, mr, vr)[0])
		}
		return autodiff.ValueOf(forward.FusedBatchNormV3(e, b.evalOp, xr, sr, or, mr, vr)[0])
	}
	// The outputs: y, batch_mean, batch_variance, ...
	var refs []registry.Value
	if b.relu {
		refs = forward.FusedBatchNormEx(e, b.trainEx, xr, sr, or, mr, vr)
	} else {
		refs = forward.FusedBatchNormV3(e, b.trainOp, xr, sr, or, mr, vr)
	}
	out := [3]autodiff.Value{autodiff.ValueOf(refs[0]), autodiff.ValueOf(refs[1]), autodiff.ValueOf(refs[2])}
	for _, u := range [2]struct {
		v   autodiff.Value
		buf *Buffer
	}{{out[1], b.MovingMean}, {out[2], b.MovingVariance}} {
		d, err := u.v.Data()
		if err != nil {
			return out[0] // the tape holds the error
		}
		if d.Dtype() != u.buf.Data.Dtype() || tensorx.Len(d) != tensorx.Len(u.buf.Data) {
			return fail(t, registry.Errorf(registry.ErrInternal, "nn.BatchNorm: statistics %v %v do not match the buffer %v %v",
				d.Dtype(), d.Shape(), u.buf.Data.Dtype(), u.buf.Data.Shape()))
		}
		tensorx.CopyData(u.buf.Data, d)
	}
	return out[0]
}

// Params returns Scale and Offset.
func (b *BatchNorm) Params() []*autodiff.Param { return params(b.Scale, b.Offset) }

// Buffers returns MovingMean and MovingVariance.
func (b *BatchNorm) Buffers() []*Buffer {
	if b.err != nil {
		return nil
	}
	return []*Buffer{b.MovingMean, b.MovingVariance}
}
