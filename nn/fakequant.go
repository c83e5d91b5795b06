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

// Quantisation-aware training, as TensorFlow's QAT (the Keras quantizers
// of tensorflow_model_optimization) does it:
//
//   - FakeQuantWeights wraps a Dense, Conv2D or DepthwiseConv2D layer and
//     fake-quantises its kernel per output channel
//     (FakeQuantWithMinMaxVarsPerChannel) with the ranges of the kernel
//     itself (TensorFlow's LastValueQuantizer);
//   - FakeQuantActivation fake-quantises a tensor per tensor
//     (FakeQuantWithMinMaxVars) with ranges that follow the batch ranges as
//     an exponential moving average (MovingAverageQuantizer), or with
//     trainable ranges.
//
// The gradients are TensorFlow's straight-through estimator: the upstream
// gradient passes where the value lies in the nudged range, and (for
// trainable ranges) the parts below and above it go to min and max.

// Quantizable is a layer whose kernel FakeQuantWeights can quantise:
// *Dense, *Conv2D and *DepthwiseConv2D.
type Quantizable interface {
	Module
	// kernel returns the weight to quantise.
	kernel() *autodiff.Param
	// quantShape returns the shape under which the kernel is quantised
	// per channel of its last axis (the output channels), or nil for the
	// kernel's own shape.
	quantShape() []int
	// forwardKernel applies the layer with w in place of its kernel.
	forwardKernel(t *autodiff.Tape, x, w autodiff.Value, b binder) autodiff.Value
}

// WeightQuantOpts configure FakeQuantWeights. The zero value is
// TensorFlow's default for convolution kernels (8 bits, narrow range,
// symmetric ranges).
type WeightQuantOpts struct {
	// NumBits is the bit width, 2..16 (default 8).
	NumBits int
	// NarrowRange uses the grid [1, 2^NumBits − 1] instead of
	// [0, 2^NumBits − 1] (default true).
	NarrowRange *bool
	// Symmetric makes every range symmetric around 0 (default true), as
	// TensorFlow's LastValueQuantizer(symmetric=True): min = min(m, M/r),
	// max = max(M, m·r) for the channel's minimum m and maximum M, with
	// r = −1 for a narrow range and −(2^b − 2)/2^b otherwise. Without it
	// the range is [min(m, 0), max(M, 0)].
	Symmetric *bool
}

// FakeQuantWeights wraps a layer and fake-quantises its kernel per output
// channel before applying it, as TensorFlow's quantisation-aware training
// does for Conv2D, DepthwiseConv2D and Dense kernels.
//
// In training, every Forward computes each channel's range from the
// kernel's current values (outside the tape, so no gradient flows into the
// ranges, as into TensorFlow's non-trainable min/max variables) and stores
// it in the buffers Min and Max; in evaluation the stored ranges are used.
// The ranges start at [−6, 6], as TensorFlow's. The kernel's gradient is
// the straight-through estimator: the upstream gradient where the weight
// lies in its channel's nudged range, 0 elsewhere.
//
// Channels are the output channels: the kernel's last axis for Dense
// [in, out] and Conv2D [KH, KW, in/groups, out], and the in·multiplier
// output channels c·M + m for DepthwiseConv2D [KH, KW, C, M] (the axis of
// TFLite's per-channel depthwise quantisation).
type FakeQuantWeights struct {
	// Layer is the wrapped layer; its parameters are the wrapper's.
	Layer Quantizable
	// Min and Max are the per-channel ranges, [channels], named
	// "weight_min" and "weight_max".
	Min, Max  *Buffer
	attrs     forward.FakeQuantAttrs
	symmetric bool
	err       error
}

// NewFakeQuantWeights wraps l (a *Dense, *Conv2D or *DepthwiseConv2D).
func NewFakeQuantWeights(l Quantizable, opts WeightQuantOpts) *FakeQuantWeights {
	f := &FakeQuantWeights{Layer: l}
	f.err = f.init(opts)
	return f
}

func (f *FakeQuantWeights) init(o WeightQuantOpts) error {
	const layer = "nn.NewFakeQuantWeights"
	if f.Layer == nil {
		return configError("%s: nil layer", layer)
	}
	if err := moduleErr(f.Layer); err != nil {
		return wrapf(err, "%s: wrapped layer", layer)
	}
	bits, err := quantBits(layer, o.NumBits)
	if err != nil {
		return err
	}
	f.attrs = forward.FakeQuantAttrs{NumBits: bits, NarrowRange: o.NarrowRange == nil || *o.NarrowRange}
	f.symmetric = o.Symmetric == nil || *o.Symmetric
	k := f.Layer.kernel()
	shape := f.Layer.quantShape()
	if shape == nil {
		shape = k.Data.Shape()
	}
	ch := []int{shape[len(shape)-1]}
	if f.Min, err = newBuffer("weight_min", k.Data.Dtype(), ch, -6); err != nil {
		return wrapf(err, layer)
	}
	if f.Max, err = newBuffer("weight_max", k.Data.Dtype(), ch, 6); err != nil {
		return wrapf(err, layer)
	}
	return nil
}

// quantBits returns the bit width: 8 for 0, else it must be in 2..16.
func quantBits(layer string, b int) (int, error) {
	if b == 0 {
		return 8, nil
	}
	if b < 2 || b > 16 {
		return 0, configError("%s: NumBits must be in 2..16, got %d", layer, b)
	}
	return b, nil
}

// Err returns the configuration error, or nil.
func (f *FakeQuantWeights) Err() error { return f.err }

func (f *FakeQuantWeights) String() string {
	return fmt.Sprintf("FakeQuantWeights(%T, %d bits)", f.Layer, f.attrs.NumBits)
}

// Params returns the wrapped layer's parameters.
func (f *FakeQuantWeights) Params() []*autodiff.Param {
	if f.err != nil {
		return nil
	}
	return f.Layer.Params()
}

// Buffers returns the wrapped layer's buffers, then Min and Max.
func (f *FakeQuantWeights) Buffers() []*Buffer {
	if f.err != nil {
		return nil
	}
	return append(append([]*Buffer(nil), f.Layer.Buffers()...), f.Min, f.Max)
}

// Forward applies the wrapped layer with its kernel fake-quantised.
func (f *FakeQuantWeights) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return f.forward(t, x, nil)
}

func (f *FakeQuantWeights) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if f.err != nil {
		return fail(t, f.err)
	}
	k := f.Layer.kernel()
	w := bind(t, b, k)
	if t.IsTraining() {
		if d, err := w.Data(); err == nil {
			if err := f.updateRanges(d); err != nil {
				return fail(t, err)
			}
		}
	}
	qs := f.Layer.quantShape()
	wq := w
	if qs != nil {
		wq = autodiff.Reshape(w, qs...)
	}
	wq = autodiff.FakeQuantPerChannel(wq, t.Constant(f.Min.Data), t.Constant(f.Max.Data), f.attrs)
	if qs != nil {
		wq = autodiff.Reshape(wq, k.Data.Shape()...)
	}
	return f.Layer.forwardKernel(t, x, wq, b)
}

// updateRanges stores the per-channel ranges of the kernel values d.
func (f *FakeQuantWeights) updateRanges(d *tensor.Dense) error {
	if d.Dtype() != f.Min.Data.Dtype() || tensorx.Len(d) != tensorx.Len(f.Layer.kernel().Data) {
		return registry.Errorf(registry.ErrShape, "nn.FakeQuantWeights: kernel %v %v does not match the layer's %v %v",
			d.Dtype(), d.Shape(), f.Min.Data.Dtype(), f.Layer.kernel().Data.Shape())
	}
	switch d.Dtype() {
	case tensor.Float32:
		channelRanges(tensorx.MustSlice[float32](d), tensorx.MustSlice[float32](f.Min.Data), tensorx.MustSlice[float32](f.Max.Data), f.symmetric, f.attrs)
	case tensor.Float64:
		channelRanges(tensorx.MustSlice[float64](d), tensorx.MustSlice[float64](f.Min.Data), tensorx.MustSlice[float64](f.Max.Data), f.symmetric, f.attrs)
	}
	return nil
}

// channelRanges writes into lo and hi (one entry per channel) the ranges
// of w, whose element i belongs to channel i mod len(lo). NaNs are
// skipped.
func channelRanges[T tensorx.Float](w, lo, hi []T, symmetric bool, a forward.FakeQuantAttrs) {
	inf := T(math.Inf(1))
	for c := range lo {
		lo[c], hi[c] = inf, -inf
	}
	n := len(lo)
	for i := 0; i < len(w); i += n {
		row := w[i : i+n]
		for c, v := range row {
			if v < lo[c] {
				lo[c] = v
			}
			if v > hi[c] {
				hi[c] = v
			}
		}
	}
	for c := range lo {
		if lo[c] > hi[c] { // no value (all NaN)
			lo[c], hi[c] = 0, 0
		}
		lo[c], hi[c] = quantRange(lo[c], hi[c], symmetric, a)
	}
}

// quantRange turns the minimum m and maximum M of a batch into a
// quantisation range that contains 0, as TensorFlow's QAT quantizers do.
func quantRange[T tensorx.Float](m, M T, symmetric bool, a forward.FakeQuantAttrs) (T, T) {
	if symmetric {
		ratio := -1.0
		if !a.NarrowRange {
			ratio = -float64(int(1)<<a.NumBits-2) / float64(int(1)<<a.NumBits)
		}
		r := T(ratio)
		return min(m, M/r), max(M, m*r)
	}
	return min(m, 0), max(M, 0)
}

// ActQuantOpts configure FakeQuantActivation. The zero value is
// TensorFlow's default for activations (8 bits, full range, asymmetric,
// moving averages with decay 0.999, initial range [−6, 6], float32).
type ActQuantOpts struct {
	// NumBits is the bit width, 2..16 (default 8).
	NumBits int
	// NarrowRange uses the grid [1, 2^NumBits − 1].
	NarrowRange bool
	// Symmetric makes the batch range symmetric around 0 (see
	// WeightQuantOpts.Symmetric) before it enters the moving average.
	Symmetric bool
	// EMADecay is the moving averages' decay d, in [0, 1] (default 0.999):
	// range ← range − (range − batch range)·(1 − d), as TensorFlow's
	// assign_moving_average without zero debiasing.
	EMADecay *float64
	// Learned makes the range two trainable parameters, trained by the
	// gradient of FakeQuantWithMinMaxVars, instead of moving averages.
	Learned bool
	// InitMin and InitMax are the initial range (default −6 and 6).
	InitMin, InitMax *float64
	// Dtype is the dtype of the range and of the inputs, float32 (default)
	// or float64.
	Dtype tensor.Dtype
}

// FakeQuantActivation fake-quantises its input per tensor
// (FakeQuantWithMinMaxVars), as TensorFlow's quantisation-aware training
// does for activations.
//
// With moving averages (the default), the range is kept in the buffers Min
// and Max (scalars, "min" and "max"): in training, every Forward takes the
// batch's range [min(x, 0), max(x, 0)] (symmetrised if asked; NaNs are
// skipped; an empty batch changes nothing), blends it into the buffers,
// and quantises with the updated range, as TensorFlow's
// MovingAverageQuantizer; in evaluation it quantises with the stored
// range. The input's gradient is the straight-through estimator; no
// gradient flows into the range.
//
// With Learned, the range is two trainable scalar parameters MinParam and
// MaxParam ("min" and "max") that receive the range gradients of
// FakeQuantWithMinMaxVars (the sums of the upstream gradients below and
// above the nudged range), in training and evaluation alike.
type FakeQuantActivation struct {
	// Min and Max are the moving-average range (nil with Learned).
	Min, Max *Buffer
	// MinParam and MaxParam are the trainable range (Learned only).
	MinParam, MaxParam *autodiff.Param
	attrs              forward.FakeQuantAttrs
	symmetric          bool
	decay              float64
	dtype              tensor.Dtype
	err                error
}

// NewFakeQuantActivation returns an activation fake-quantiser.
func NewFakeQuantActivation(opts ActQuantOpts) *FakeQuantActivation {
	f := &FakeQuantActivation{}
	f.err = f.init(opts)
	return f
}

func (f *FakeQuantActivation) init(o ActQuantOpts) error {
	const layer = "nn.NewFakeQuantActivation"
	bits, err := quantBits(layer, o.NumBits)
	if err != nil {
		return err
	}
	f.attrs = forward.FakeQuantAttrs{NumBits: bits, NarrowRange: o.NarrowRange}
	f.symmetric = o.Symmetric
	f.decay = 0.999
	if o.EMADecay != nil {
		f.decay = *o.EMADecay
	}
	if !(f.decay >= 0 && f.decay <= 1) {
		return configError("%s: EMADecay must be in [0, 1], got %v", layer, f.decay)
	}
	lo, hi := -6.0, 6.0
	if o.InitMin != nil {
		lo = *o.InitMin
	}
	if o.InitMax != nil {
		hi = *o.InitMax
	}
	if !(lo <= hi) {
		return configError("%s: InitMin %v must be <= InitMax %v", layer, lo, hi)
	}
	if f.dtype, err = paramDtype(layer, o.Dtype); err != nil {
		return err
	}
	if o.Learned {
		if f.MinParam, err = newParam("min", f.dtype, []int{}, Constant(lo), nil); err != nil {
			return wrapf(err, layer)
		}
		if f.MaxParam, err = newParam("max", f.dtype, []int{}, Constant(hi), nil); err != nil {
			return wrapf(err, layer)
		}
		return nil
	}
	if f.Min, err = newBuffer("min", f.dtype, []int{}, lo); err != nil {
		return wrapf(err, layer)
	}
	if f.Max, err = newBuffer("max", f.dtype, []int{}, hi); err != nil {
		return wrapf(err, layer)
	}
	return nil
}

// Err returns the configuration error, or nil.
func (f *FakeQuantActivation) Err() error { return f.err }

func (f *FakeQuantActivation) String() string {
	mode := "moving average"
	if f.MinParam != nil {
		mode = "learned"
	}
	return fmt.Sprintf("FakeQuantActivation(%d bits, %s)", f.attrs.NumBits, mode)
}

// Params returns MinParam and MaxParam with Learned, else nil.
func (f *FakeQuantActivation) Params() []*autodiff.Param { return params(f.MinParam, f.MaxParam) }

// Buffers returns Min and Max without Learned, else nil.
func (f *FakeQuantActivation) Buffers() []*Buffer {
	if f.Min == nil {
		return nil
	}
	return []*Buffer{f.Min, f.Max}
}

// Forward returns x fake-quantised.
func (f *FakeQuantActivation) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return f.forward(t, x, nil)
}

func (f *FakeQuantActivation) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if f.err != nil {
		return fail(t, f.err)
	}
	if x.Err() != nil {
		return invalidInput(t, x)
	}
	if x.Dtype() != f.dtype {
		return fail(t, registry.Errorf(registry.ErrDtype, "nn.FakeQuantActivation: input has dtype %v, the range %v", x.Dtype(), f.dtype))
	}
	if f.MinParam != nil {
		return autodiff.FakeQuantVars(x, bind(t, b, f.MinParam), bind(t, b, f.MaxParam), f.attrs)
	}
	if t.IsTraining() {
		if d, err := x.Data(); err == nil {
			switch f.dtype {
			case tensor.Float32:
				emaRange(tensorx.MustSlice[float32](d), tensorx.MustSlice[float32](f.Min.Data), tensorx.MustSlice[float32](f.Max.Data), f.decay, f.symmetric, f.attrs)
			case tensor.Float64:
				emaRange(tensorx.MustSlice[float64](d), tensorx.MustSlice[float64](f.Min.Data), tensorx.MustSlice[float64](f.Max.Data), f.decay, f.symmetric, f.attrs)
			}
		}
	}
	return autodiff.FakeQuantVars(x, t.Constant(f.Min.Data), t.Constant(f.Max.Data), f.attrs)
}

// emaRange blends the range of x into the one-element lo and hi.
func emaRange[T tensorx.Float](x, lo, hi []T, decay float64, symmetric bool, a forward.FakeQuantAttrs) {
	m, M := T(math.Inf(1)), T(math.Inf(-1))
	for _, v := range x {
		if v < m {
			m = v
		}
		if v > M {
			M = v
		}
	}
	if m > M { // empty, or only NaNs
		return
	}
	m, M = quantRange(m, M, symmetric, a)
	c := T(1 - decay)
	lo[0] -= (lo[0] - m) * c
	hi[0] -= (hi[0] - M) * c
}
