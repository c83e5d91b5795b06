package backward

import (
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of the DepthwiseConv2dNative family, as TensorFlow registers
// them (tensorflow/python/ops/nn_grad.py; spec/depthwise_conv2d.md §4).
// Every call forwards the op's own attrs (strides, padding,
// explicit_paddings, dilations, data_format). The three ops are bilinear and
// each one's gradient is built from the other two, so gradients of any
// order work. The integer size inputs get no gradient; sizes passed on are
// int32 constants of the known shapes.
//
// All three follow TensorFlow's registrations: each backprop op is linear
// in each of its float inputs, and its adjoint with respect to one is
// another op of the family (as for Conv2D's backprops). Unlike TensorFlow's
// own kernels, the ops honour dilations and unequal strides, and the
// gradients forward those attrs unchanged, so they stay exact adjoints.
//
// The kernels of the two backprop ops live in package forward
// (forward/depthwise_conv2d.go) with the forward op's.

func init() {
	registry.MustSetGradient("DepthwiseConv2dNative", depthwiseConv2dGrad)
	registry.MustSetGradient("DepthwiseConv2dNativeBackpropInput", depthwiseConv2dBackpropInputGrad)
	registry.MustSetGradient("DepthwiseConv2dNativeBackpropFilter", depthwiseConv2dBackpropFilterGrad)
}

// depthwiseConv2dGrad: DepthwiseConv2dNative(x, f) with upstream g gives
// dx = DepthwiseConv2dNativeBackpropInput(shape(x), f, g) and
// df = DepthwiseConv2dNativeBackpropFilter(x, shape(f), g).
func depthwiseConv2dGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := make([]registry.Value, 2)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, f := in[0], in[1]
	if n.NeedsGrad(0) {
		out[0] = op1(e, "DepthwiseConv2dNativeBackpropInput", n.Attrs(), e.Ints(shapeOf(x)...), f, g)
	}
	if n.NeedsGrad(1) {
		out[1] = op1(e, "DepthwiseConv2dNativeBackpropFilter", n.Attrs(), x, e.Ints(shapeOf(f)...), g)
	}
	return out, nil
}

// depthwiseConv2dBackpropInputGrad: DepthwiseConv2dNativeBackpropInput(sizes,
// f, d) with upstream g (input-shaped) gives
// [nil, DepthwiseConv2dNativeBackpropFilter(g, shape(f), d), DepthwiseConv2dNative(g, f)].
func depthwiseConv2dBackpropInputGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := make([]registry.Value, 3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	f, d := in[1], in[2]
	if n.NeedsGrad(1) {
		out[1] = op1(e, "DepthwiseConv2dNativeBackpropFilter", n.Attrs(), g, e.Ints(shapeOf(f)...), d)
	}
	if n.NeedsGrad(2) {
		out[2] = op1(e, "DepthwiseConv2dNative", n.Attrs(), g, f)
	}
	return out, nil
}

// depthwiseConv2dBackpropFilterGrad: DepthwiseConv2dNativeBackpropFilter(x,
// sizes, d) with upstream g (filter-shaped) gives
// [DepthwiseConv2dNativeBackpropInput(shape(x), g, d), nil, DepthwiseConv2dNative(x, g)].
func depthwiseConv2dBackpropFilterGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := make([]registry.Value, 3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, d := in[0], in[2]
	if n.NeedsGrad(0) {
		out[0] = op1(e, "DepthwiseConv2dNativeBackpropInput", n.Attrs(), e.Ints(shapeOf(x)...), g, d)
	}
	if n.NeedsGrad(2) {
		out[2] = op1(e, "DepthwiseConv2dNative", n.Attrs(), x, g)
	}
	return out, nil
}
