package backward

import (
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of the fractional pooling family (spec/fractional_avg_pool.md
// §5; tensorflow/python/ops/nn_grad.py). The kernels of the gradient ops
// live in package forward (forward/fractional_pool.go) with the forward
// kernels: they share the cell machinery.
//
//   - FractionalAvgPool → FractionalAvgPoolGrad(static shape of value as
//     int64, dy, row_pooling_sequence, col_pooling_sequence) with the
//     forward's recorded sequences (its outputs 1 and 2); the sequence
//     outputs are integers and take no gradient. As TensorFlow.
//   - FractionalMaxPool → FractionalMaxPoolGrad(value, output, dy,
//     row_pooling_sequence, col_pooling_sequence). As TensorFlow.
//   - FractionalAvgPoolGrad (beyond TensorFlow, which registers none): it
//     is linear in out_backprop, whose gradient is the adjoint, average
//     pooling with the same sequences:
//     tapegrad.FractionalAvgPoolWithSequences, whose own gradient is
//     FractionalAvgPoolGrad again, so every order works.
//   - FractionalMaxPoolGrad (beyond TensorFlow): linear in out_backprop,
//     whose gradient gathers the upstream gradient at each cell's maximum:
//     tapegrad.FractionalMaxPoolGradGrad, whose gradient is
//     FractionalMaxPoolGrad again. orig_input and orig_output get zero
//     gradient (nil), as TensorFlow's MaxPoolGrad gradient gives them: the
//     argmax is locally constant away from ties.
//
// Every call forwards the op's overlapping attr; integer inputs get no
// gradient.

func init() {
	registry.MustSetGradient("FractionalAvgPool", fpAvgPoolGrad)
	registry.MustSetGradient("FractionalAvgPoolGrad", fpAvgPoolGradGrad)
	registry.MustSetGradient("tapegrad.FractionalAvgPoolWithSequences", fpAvgWithSequencesGrad)
	registry.MustSetGradient("FractionalMaxPool", fpMaxPoolGrad)
	registry.MustSetGradient("FractionalMaxPoolGrad", fpMaxPoolGradGrad)
	registry.MustSetGradient("tapegrad.FractionalMaxPoolGradGrad", fpMaxPoolGradGradGrad)
}

// fpShapeConst returns the static shape of v as an int64 vector constant
// (FractionalAvgPoolGrad's orig_input_tensor_shape): Emitter.Ints's int32
// vector cast to int64, which costs no allocation (a tensor built here and
// copied by Emitter.Const would cost a dozen).
func fpShapeConst(e registry.Emitter, v registry.Value) registry.Value {
	return op1(e, "Cast", castInt64, e.Ints(v.Shape()...))
}

// fpGradAttrs[b2i(overlapping)] are the grad ops' attrs, boxed once.
var fpGradAttrs = [2]any{forward.FractionalPoolGradAttrs{}, forward.FractionalPoolGradAttrs{Overlapping: true}}

// castInt64 is Cast's attrs to int64, boxed once.
var castInt64 any = forward.CastAttrs{DstT: tensor.Int64}

// fpAvgPoolGrad: FractionalAvgPool(x) with upstream (g, _, _) gives
// FractionalAvgPoolGrad(shape(x), g, rows, cols).
func fpAvgPoolGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(1)
	if dy[0] == nil || !n.NeedsGrad(0) {
		return out, nil
	}
	a := n.Attrs().(forward.FractionalPoolAttrs)
	outs := n.Outputs()
	shape := fpShapeConst(e, n.Inputs()[0])
	out[0] = op1(e, "FractionalAvgPoolGrad", fpGradAttrs[b2i(a.Overlapping)],
		shape, dy[0], outs[1], outs[2])
	return out, nil
}

// fpAvgPoolGradGrad: FractionalAvgPoolGrad(shape, d, rows, cols) with
// upstream g (input-shaped) gives, for d, the average pooling of g over
// the same cells, restricted to d's batch and cell counts.
func fpAvgPoolGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(4)
	if dy[0] == nil || !n.NeedsGrad(1) {
		return out, nil
	}
	in := n.Inputs()
	ds := in[1].Shape()
	a := n.Attrs().(forward.FractionalPoolGradAttrs)
	out[1] = op1(e, "tapegrad.FractionalAvgPoolWithSequences",
		forward.FractionalPoolSeqAttrs{Overlapping: a.Overlapping, OutputBatch: ds[0], OutputRows: ds[1], OutputCols: ds[2]},
		dy[0], in[2], in[3])
	return out, nil
}

// fpAvgWithSequencesGrad: tapegrad.FractionalAvgPoolWithSequences(x, rows,
// cols) with upstream g gives FractionalAvgPoolGrad(shape(x), g, rows, cols)
// (images beyond output_batch get zeros).
func fpAvgWithSequencesGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	if dy[0] == nil || !n.NeedsGrad(0) {
		return out, nil
	}
	in := n.Inputs()
	a := n.Attrs().(forward.FractionalPoolSeqAttrs)
	shape := fpShapeConst(e, in[0])
	out[0] = op1(e, "FractionalAvgPoolGrad", fpGradAttrs[b2i(a.Overlapping)],
		shape, dy[0], in[1], in[2])
	return out, nil
}

// fpMaxPoolGrad: FractionalMaxPool(x) with upstream (g, _, _) gives
// FractionalMaxPoolGrad(x, y, g, rows, cols).
func fpMaxPoolGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(1)
	if dy[0] == nil || !n.NeedsGrad(0) {
		return out, nil
	}
	a := n.Attrs().(forward.FractionalPoolAttrs)
	outs := n.Outputs()
	out[0] = op1(e, "FractionalMaxPoolGrad", fpGradAttrs[b2i(a.Overlapping)],
		n.Inputs()[0], outs[0], dy[0], outs[1], outs[2])
	return out, nil
}

// fpMaxPoolGradGrad: FractionalMaxPoolGrad(x, y, d, rows, cols) with
// upstream g (shaped like x) gives nil, nil (zero) for x and y and
// tapegrad.FractionalMaxPoolGradGrad(x, y, g, rows, cols) for d.
func fpMaxPoolGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(5)
	if dy[0] == nil || !n.NeedsGrad(2) {
		return out, nil
	}
	in := n.Inputs()
	out[2] = op1(e, "tapegrad.FractionalMaxPoolGradGrad", n.Attrs(), in[0], in[1], dy[0], in[3], in[4])
	return out, nil
}

// fpMaxPoolGradGradGrad: tapegrad.FractionalMaxPoolGradGrad(x, y, g, rows,
// cols) with upstream u (shaped like y) gives nil, nil for x and y and
// FractionalMaxPoolGrad(x, y, u, rows, cols) for g.
func fpMaxPoolGradGradGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(5)
	if dy[0] == nil || !n.NeedsGrad(2) {
		return out, nil
	}
	in := n.Inputs()
	out[2] = op1(e, "FractionalMaxPoolGrad", n.Attrs(), in[0], in[1], dy[0], in[3], in[4])
	return out, nil
}
