package autodiff

// Typed functions of the softmax family (TensorFlow's Softmax, LogSoftmax,
// SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits).

var (
	opSoftmax           = ref("Softmax")
	opLogSoftmax        = ref("LogSoftmax")
	opSoftmaxXent       = ref("SoftmaxCrossEntropyWithLogits")
	opSparseSoftmaxXent = ref("SparseSoftmaxCrossEntropyWithLogits")
)

// smTapeOf returns the tape of the first argument that has one, or nil if
// every argument is the zero Value.
func smTapeOf(vs ...Value) *Tape {
	for _, v := range vs {
		if v.t != nil {
			return v.t
		}
	}
	return nil
}

// smApply applies an op of the family on the tape of its first valid
// argument. A zero Value or a value of another tape is an error on that
// tape (the inputs are checked by applyDef); if no argument has a tape
// there is nowhere to record the error, and the results are zero Values,
// whose Err reports them as invalid.
func smApply(r *opRef, in ...Value) []Value {
	t := smTapeOf(in...)
	def := r.def()
	if t == nil {
		return make([]Value, len(def.Outputs))
	}
	return t.applyDef(def, nil, in, !t.noGrad, "forward", nil)
}

// Softmax returns exp(x) / Σ exp(x) over the last axis of x (rank >= 1),
// computed stably as TensorFlow's Softmax op.
func Softmax(x Value) Value {
	return smApply(opSoftmax, x)[0]
}

// LogSoftmax returns x - log Σ exp(x) over the last axis of x (rank >= 1),
// computed stably as TensorFlow's LogSoftmax op.
func LogSoftmax(x Value) Value {
	return smApply(opLogSoftmax, x)[0]
}

// SoftmaxCrossEntropy applies TensorFlow's SoftmaxCrossEntropyWithLogits:
// for logits and labels of shape [batch, classes] (or shapes that
// broadcast to it), labels a probability distribution per row, it returns
// the per-row loss -Σ labels·log softmax(logits) of shape [batch] and
// backprop = softmax(logits) - labels of shape [batch, classes]. Both
// outputs are differentiable, with respect to the logits and the labels.
// As in TensorFlow, the gradient with respect to the logits is
// grad_loss·backprop, the derivative of the loss only when every row of
// labels sums to 1.
func SoftmaxCrossEntropy(logits, labels Value) (loss, backprop Value) {
	out := smApply(opSoftmaxXent, logits, labels)
	return out[0], out[1]
}

// SparseSoftmaxCrossEntropy applies TensorFlow's
// SparseSoftmaxCrossEntropyWithLogits: logits [batch, classes], labels
// [batch] int32 or int64 class indices in [0, classes) (others are an
// error). It returns the per-row loss -log softmax(logits)[label] of
// shape [batch] and backprop = softmax(logits) - onehot(labels). Both are
// differentiable with respect to the logits.
func SparseSoftmaxCrossEntropy(logits, labels Value) (loss, backprop Value) {
	out := smApply(opSparseSoftmaxXent, logits, labels)
	return out[0], out[1]
}
