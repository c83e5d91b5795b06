package autodiff

import (
	"github.com/tapegrad/tapegrad/backward"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed functions of the FusedBatchNorm family (TensorFlow's
// FusedBatchNorm, FusedBatchNormV3, _FusedBatchNormEx, FusedBatchNormGrad
// and FusedBatchNormGradV3; see forward.FusedBatchNormAttrs and
// forward.FusedBatchNormGradAttrs for the attributes). Each op runs on the
// tape of its first Value argument that has one; a zero Value or values of
// two tapes are an error on that tape, and the results are then poisoned
// Values that report it.

// BatchNormOutputs are the outputs of FusedBatchNorm, FusedBatchNormV3 and
// _FusedBatchNormEx, in TensorFlow's order.
type BatchNormOutputs struct {
	// Y is the normalised x: (x − μ)·γ/sqrt(σ² + ε) + β, of x's shape.
	Y Value
	// BatchMean and BatchVariance ([C]) are, in training, the new running
	// statistics: the batch mean and the unbiased (Bessel-corrected) batch
	// variance, blended into the mean and variance inputs when
	// exponential_avg_factor f != 1 ((1−f)·old + f·batch). In inference
	// they are copies of the mean and variance inputs.
	BatchMean, BatchVariance Value
	// ReserveSpace1 and ReserveSpace2 ([C]) are what the grad op needs: in
	// training the batch mean and the biased batch variance; in inference
	// copies of the mean and variance inputs.
	ReserveSpace1, ReserveSpace2 Value
	// ReserveSpace3 is FusedBatchNormV3's sixth output, a scalar 0 (the
	// zero Value for FusedBatchNorm).
	ReserveSpace3 Value
}

// bnForward applies FusedBatchNorm, FusedBatchNormV3 or _FusedBatchNormEx.
func bnForward[A any](b func(registry.Emitter, registry.Attrs[A], registry.Value, registry.Value, registry.Value, registry.Value, registry.Value) []registry.Value,
	x, scale, offset, mean, variance Value, attrs A) BatchNormOutputs {
	t := tapeOf(x, scale, offset, mean, variance)
	if t == nil {
		return BatchNormOutputs{}
	}
	out := b(t.Emitter(), registry.NewAttrs(attrs), t.box(x), t.box(scale), t.box(offset), t.box(mean), t.box(variance))
	o := BatchNormOutputs{
		Y:             ValueOf(out[0]),
		BatchMean:     ValueOf(out[1]),
		BatchVariance: ValueOf(out[2]),
		ReserveSpace1: ValueOf(out[3]),
		ReserveSpace2: ValueOf(out[4]),
	}
	if len(out) > 5 {
		o.ReserveSpace3 = ValueOf(out[5])
	}
	return o
}

// FusedBatchNormV3 applies TensorFlow's FusedBatchNormV3: per-channel
// batch normalisation of x (4-D NHWC/NCHW or 5-D NDHWC/NCDHW, as
// attrs.DataFormat says) with scale γ and offset β of shape [C].
//
// In training (attrs.IsTraining nil or true) x is normalised with its
// own batch statistics, and mean and variance are the running statistics
// to blend them into; with exponential_avg_factor 1 (the default) they
// are not read and may be empty (shape [0], e.g. tape.Full(dt, []int{0},
// 0)). In inference x is normalised with mean and variance ([C]).
//
// The result is differentiable (any order) with respect to x, scale and
// offset through Y, as TensorFlow's gradient: gradients flowing into the
// statistics outputs are dropped, and mean and variance get none.
func FusedBatchNormV3(x, scale, offset, mean, variance Value, attrs forward.FusedBatchNormAttrs) BatchNormOutputs {
	return bnForward(forward.FusedBatchNormV3, x, scale, offset, mean, variance, attrs)
}

// FusedBatchNormEx applies TensorFlow's _FusedBatchNormEx: FusedBatchNormV3
// followed by attrs.ActivationMode, "Identity" (the default) or "Relu"
// (Y = max(Y, 0), as Relu computes it), applied to each piece of Y as it
// is written: one pass over Y fewer than FusedBatchNormV3 then Relu, with
// the same values. attrs.NumSideInputs must be 0. Its gradient is the
// graph TensorFlow differentiates before fusing: ReluGrad (with Y as
// features) then FusedBatchNormV3's gradient, differentiable to any
// order. Otherwise as FusedBatchNormV3.
func FusedBatchNormEx(x, scale, offset, mean, variance Value, attrs forward.FusedBatchNormExAttrs) BatchNormOutputs {
	return bnForward(forward.FusedBatchNormEx, x, scale, offset, mean, variance, attrs)
}

// FusedBatchNorm applies TensorFlow's FusedBatchNorm (4-D x only, no
// ReserveSpace3); otherwise as FusedBatchNormV3.
func FusedBatchNorm(x, scale, offset, mean, variance Value, attrs forward.FusedBatchNormAttrs) BatchNormOutputs {
	return bnForward(forward.FusedBatchNorm, x, scale, offset, mean, variance, attrs)
}

// FusedBatchNormGradV3 applies TensorFlow's FusedBatchNormGradV3: the
// gradients of FusedBatchNormV3 with respect to x, scale and offset, given
// yBackprop (the gradient of Y), x, scale and the forward's reserve spaces
// (in inference: its mean and variance inputs; reserveSpace3 is ignored).
// Its result is differentiable with respect to yBackprop, x and scale
// (TensorFlow's second-order gradient, which in training treats the
// reserve spaces as the statistics of x).
func FusedBatchNormGradV3(yBackprop, x, scale, reserveSpace1, reserveSpace2, reserveSpace3 Value, attrs forward.FusedBatchNormGradAttrs) (xBackprop, scaleBackprop, offsetBackprop Value) {
	t := tapeOf(yBackprop, x, scale, reserveSpace1, reserveSpace2, reserveSpace3)
	if t == nil {
		return Value{}, Value{}, Value{}
	}
	out := backward.FusedBatchNormGradV3(t.Emitter(), registry.NewAttrs(attrs),
		t.box(yBackprop), t.box(x), t.box(scale), t.box(reserveSpace1), t.box(reserveSpace2), t.box(reserveSpace3))
	return ValueOf(out[0]), ValueOf(out[1]), ValueOf(out[2])
}

// FusedBatchNormGrad applies TensorFlow's FusedBatchNormGrad (4-D only);
// otherwise as FusedBatchNormGradV3.
func FusedBatchNormGrad(yBackprop, x, scale, reserveSpace1, reserveSpace2 Value, attrs forward.FusedBatchNormGradAttrs) (xBackprop, scaleBackprop, offsetBackprop Value) {
	t := tapeOf(yBackprop, x, scale, reserveSpace1, reserveSpace2)
	if t == nil {
		return Value{}, Value{}, Value{}
	}
	out := backward.FusedBatchNormGrad(t.Emitter(), registry.NewAttrs(attrs),
		t.box(yBackprop), t.box(x), t.box(scale), t.box(reserveSpace1), t.box(reserveSpace2))
	return ValueOf(out[0]), ValueOf(out[1]), ValueOf(out[2])
}
