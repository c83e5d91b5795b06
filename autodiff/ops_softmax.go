package autodiff

import "github.com/tapegrad/tapegrad/forward"

// Typed functions of the softmax family (TensorFlow's Softmax, LogSoftmax,
// SoftmaxCrossEntropyWithLogits and SparseSoftmaxCrossEntropyWithLogits).

// Softmax returns exp(x) / Σ exp(x) over the last axis of x (rank >= 1),
// computed stably as TensorFlow's Softmax op.
func Softmax(x Value) Value {
	return unary(forward.Softmax, x)
}

// LogSoftmax returns x - log Σ exp(x) over the last axis of x (rank >= 1),
// computed stably as TensorFlow's LogSoftmax op.
func LogSoftmax(x Value) Value {
	return unary(forward.LogSoftmax, x)
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
	t := tapeOf(logits, labels)
	if t == nil {
		return Value{}, Value{}
	}
	out := forward.SoftmaxCrossEntropyWithLogits(t.Emitter(), t.box(logits), t.box(labels))
	return ValueOf(out[0]), ValueOf(out[1])
}

// SparseSoftmaxCrossEntropy applies TensorFlow's
// SparseSoftmaxCrossEntropyWithLogits: logits [batch, classes], labels
// [batch] int32 or int64 class indices in [0, classes) (others are an
// error). It returns the per-row loss -log softmax(logits)[label] of
// shape [batch] and backprop = softmax(logits) - onehot(labels). Both are
// differentiable with respect to the logits.
func SparseSoftmaxCrossEntropy(logits, labels Value) (loss, backprop Value) {
	t := tapeOf(logits, labels)
	if t == nil {
		return Value{}, Value{}
	}
	out := forward.SparseSoftmaxCrossEntropyWithLogits(t.Emitter(), t.box(logits), t.box(labels))
	return ValueOf(out[0]), ValueOf(out[1])
}
