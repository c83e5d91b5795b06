package autodiff

import "github.com/tapegrad/tapegrad/forward"

// Typed functions of the FusedBatchNorm family (TensorFlow's
// FusedBatchNorm, FusedBatchNormV3, FusedBatchNormGrad and
// FusedBatchNormGradV3; see forward.FusedBatchNormAttrs and
// forward.FusedBatchNormGradAttrs for the attributes). Each op runs on the
// tape of its first Value argument that has one; a zero Value or values of
// two tapes are an error on that tape, and the results are then poisoned
// Values that report it.

var (
	opFusedBatchNorm       = ref("FusedBatchNorm")
	opFusedBatchNormV3     = ref("FusedBatchNormV3")
	opFusedBatchNormGrad   = ref("FusedBatchNormGrad")
	opFusedBatchNormGradV3 = ref("FusedBatchNormGradV3")
)

// BatchNormOutputs are the outputs of FusedBatchNorm and FusedBatchNormV3,
// in TensorFlow's order.
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

// bnTapeOf returns the tape of the first argument that has one, or nil.
func bnTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// bnApply applies an op of the family on the tape of its first valid
// argument and returns all its outputs (zero Values if no argument has a
// tape: there is nowhere to record the error, and the zero Values report
// themselves as invalid).
func bnApply(r *opRef, attrs any, in ...Value) []Value {
	def := r.def()
	t := bnTapeOf(in...)
	if t == nil {
		return make([]Value, len(def.Outputs))
	}
	return t.applyDef(def, attrs, in, !t.noGrad, "forward", nil)
}

// bnOutputs collects the forward ops' outputs.
func bnOutputs(out []Value) BatchNormOutputs {
	o := BatchNormOutputs{Y: out[0], BatchMean: out[1], BatchVariance: out[2], ReserveSpace1: out[3], ReserveSpace2: out[4]}
	if len(out) > 5 {
		o.ReserveSpace3 = out[5]
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
	return bnOutputs(bnApply(opFusedBatchNormV3, attrs, x, scale, offset, mean, variance))
}

// FusedBatchNorm applies TensorFlow's FusedBatchNorm (4-D x only, no
// ReserveSpace3); otherwise as FusedBatchNormV3.
func FusedBatchNorm(x, scale, offset, mean, variance Value, attrs forward.FusedBatchNormAttrs) BatchNormOutputs {
	return bnOutputs(bnApply(opFusedBatchNorm, attrs, x, scale, offset, mean, variance))
}

// FusedBatchNormGradV3 applies TensorFlow's FusedBatchNormGradV3: the
// gradients of FusedBatchNormV3 with respect to x, scale and offset, given
// yBackprop (the gradient of Y), x, scale and the forward's reserve spaces
// (in inference: its mean and variance inputs; reserveSpace3 is ignored).
// Its result is differentiable with respect to yBackprop, x and scale
// (TensorFlow's second-order gradient, which in training treats the
// reserve spaces as the statistics of x).
func FusedBatchNormGradV3(yBackprop, x, scale, reserveSpace1, reserveSpace2, reserveSpace3 Value, attrs forward.FusedBatchNormGradAttrs) (xBackprop, scaleBackprop, offsetBackprop Value) {
	out := bnApply(opFusedBatchNormGradV3, attrs, yBackprop, x, scale, reserveSpace1, reserveSpace2, reserveSpace3)
	return out[0], out[1], out[2]
}

// FusedBatchNormGrad applies TensorFlow's FusedBatchNormGrad (4-D only);
// otherwise as FusedBatchNormGradV3.
func FusedBatchNormGrad(yBackprop, x, scale, reserveSpace1, reserveSpace2 Value, attrs forward.FusedBatchNormGradAttrs) (xBackprop, scaleBackprop, offsetBackprop Value) {
	out := bnApply(opFusedBatchNormGrad, attrs, yBackprop, x, scale, reserveSpace1, reserveSpace2)
	return out[0], out[1], out[2]
}
