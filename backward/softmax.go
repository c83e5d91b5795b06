package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of the softmax family, as TensorFlow's nn_grad.py registers
// them, built only from registered ops so that they can be differentiated
// again. The cross-entropy gradients read the op's own backprop output
// (output 1); using it is recorded on the tape like any use of a value, so
// a second-order pass sends a gradient into output 1 and this gradient
// function then adds TensorFlow's grad_grad term.

func init() {
	registry.MustSetGradient(forward.OpSoftmax, softmaxGrad)
	registry.MustSetGradient(forward.OpLogSoftmax, logSoftmaxGrad)
	registry.MustSetGradient(forward.OpSoftmaxCrossEntropyWithLogits, xentGrad)
	registry.MustSetGradient(forward.OpSparseSoftmaxCrossEntropyWithLogits, sparseXentGrad)
}

// smSumLast sums x over its last axis, keeping it (shape [..., 1]).
func smSumLast(e registry.Emitter, x registry.Value) registry.Value {
	return forward.Sum(e, sumKeepDims, x, e.Ints(len(x.Shape())-1))
}

// softmaxGrad: dx = (dy - Σ_last(dy * y)) * y, with y the op's output.
func softmaxGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	y := n.Outputs()[0]
	s := smSumLast(e, forward.Mul(e, dy[0], y))
	return vals(e, forward.Mul(e, forward.Sub(e, dy[0], s), y)), nil
}

// logSoftmaxGrad: dx = dy - Σ_last(dy) * exp(y), with y the op's output.
func logSoftmaxGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	y := n.Outputs()[0]
	s := forward.Mul(e, smSumLast(e, dy[0]), forward.Exp(e, y))
	return vals(e, forward.Sub(e, dy[0], s)), nil
}

// smXentGradGrad is TensorFlow's second-order term of the cross-entropy
// ops for the features: the softmax Jacobian applied to grad_grad,
// (gg - Σ_c(gg * p)) * p with p = softmax(features).
func smXentGradGrad(e registry.Emitter, features, gg registry.Value) registry.Value {
	p := forward.Softmax(e, features)
	s := smSumLast(e, forward.Mul(e, gg, p))
	return forward.Mul(e, forward.Sub(e, gg, s), p)
}

// smAdd returns a + b, treating nil as zero.
func smAdd(e registry.Emitter, a, b registry.Value) registry.Value {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return forward.AddV2(e, a, b)
}

// smColumn reshapes the per-row gradient of the loss [batch] to
// [batch, 1] (TensorFlow's expand_dims(grad_loss, -1)).
func smColumn(e registry.Emitter, g registry.Value) registry.Value {
	return forward.Reshape(e, g, e.Ints(smColumnShape...))
}

// smColumnShape is smColumn's target shape, [-1, 1] (the -1 inferred as
// the batch): a package-level slice, as a fresh argument list for the
// Emitter interface would be heap-allocated on each call.
var smColumnShape = []int{-1, 1}

// xentGrad is the gradient of SoftmaxCrossEntropyWithLogits(features,
// labels) -> (loss, backprop):
//
//	features: grad_loss[:, None] * backprop
//	          + (gg - Σ_c(gg * p)) * p      if backprop gets a gradient gg
//	labels:   grad_loss[:, None] * -log_softmax(features)
//	          - gg                          if backprop gets a gradient gg
//
// with p = softmax(features). The features terms and the first labels
// term are TensorFlow's; as in TensorFlow, grad_loss * backprop is the
// derivative of the loss only when every row of labels sums to 1 (the
// exact one is (Σ_c labels)·p - labels), which the op asks of its labels.
//
// The -gg labels term goes beyond TensorFlow, whose gradient omits it:
// backprop = p - labels depends on the labels, and without the term the
// labels gradient is wrong whenever backprop feeds the differentiated
// value (second-order gradients, or a loss built from backprop).
//
// When the inputs were broadcast (TensorFlow's kernel broadcasts features
// and labels against each other), p and log_softmax are computed from the
// features broadcast to [batch, classes] and each gradient is summed back
// to its input's shape.
func xentGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	in := n.Inputs()
	features, labels := in[0], in[1]
	backprop := n.Outputs()[1]
	full := backprop.Shape()
	// The features as the kernel saw them: [batch, classes].
	fb := features
	if !bcSameShape(features.Shape(), full) && (n.NeedsGrad(1) && dy[0] != nil || n.NeedsGrad(0) && dy[1] != nil) {
		fb = forward.BroadcastTo(e, features, e.Ints(full...))
	}
	var gf, gl, col registry.Value
	if dy[0] != nil {
		col = smColumn(e, dy[0])
	}
	if n.NeedsGrad(0) {
		if col != nil {
			gf = forward.Mul(e, col, backprop)
		}
		if dy[1] != nil {
			gf = smAdd(e, gf, smXentGradGrad(e, fb, dy[1]))
		}
		gf = sumToShape(e, gf, features.Shape())
	}
	if n.NeedsGrad(1) {
		if col != nil {
			gl = forward.Mul(e, col, forward.Neg(e, forward.LogSoftmax(e, fb)))
		}
		if dy[1] != nil {
			if gl == nil {
				gl = forward.Neg(e, dy[1])
			} else {
				gl = forward.Sub(e, gl, dy[1])
			}
		}
		gl = sumToShape(e, gl, labels.Shape())
	}
	return vals(e, gf, gl), nil
}

// sparseXentGrad is the gradient of SparseSoftmaxCrossEntropyWithLogits,
// as TensorFlow's: grad_loss[:, None] * backprop for the features, plus
// (gg - Σ_c(gg * p)) * p when backprop gets a gradient gg; none for the
// integer labels.
func sparseXentGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	if !n.NeedsGrad(0) {
		return e.Values(2), nil
	}
	var gf registry.Value
	if dy[0] != nil {
		gf = forward.Mul(e, smColumn(e, dy[0]), n.Outputs()[1])
	}
	if dy[1] != nil {
		gf = smAdd(e, gf, smXentGradGrad(e, n.Inputs()[0], dy[1]))
	}
	return vals(e, gf, nil), nil
}
