package backward

import (
	"github.com/tapegrad/tapegrad/registry"
)

// Gradients of the Conv2D family, as TensorFlow registers them
// (tensorflow/python/ops/nn_grad.py; spec/conv2d.md §4). Every call
// forwards the op's own attrs (strides, padding, explicit_paddings,
// dilations, data_format, use_cudnn_on_gpu). The three ops are bilinear and
// each one's gradient is built from the other two, so gradients of any
// order work. The integer size inputs get no gradient; sizes passed on
// are int32 constants of the known shapes.
//
// The kernels of Conv2DBackpropInput and Conv2DBackpropFilter live in
// package forward (forward/conv2d.go) with Conv2D's: they share its
// im2col/GEMM machinery.

// convFamily names the three ops of a convolution family: the forward op
// and its two backprops. Conv2D and DepthwiseConv2dNative register the
// same gradient structure (backward/depthwise_conv2d.go uses it too).
type convFamily struct{ fwd, input, filter string }

var conv2DFamily = convFamily{"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"}

func init() { conv2DFamily.register() }

func (c convFamily) register() {
	registry.MustSetGradient(c.fwd, c.fwdGrad)
	registry.MustSetGradient(c.input, c.inputGrad)
	registry.MustSetGradient(c.filter, c.filterGrad)
}

// fwdGrad: F(x, f) with upstream g gives
// dx = Input(shape(x), f, g), df = Filter(x, shape(f), g).
func (c convFamily) fwdGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(2)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, f := in[0], in[1]
	if n.NeedsGrad(0) {
		out[0] = op1(e, c.input, n.Attrs(), e.Ints(x.Shape()...), f, g)
	}
	if n.NeedsGrad(1) {
		out[1] = op1(e, c.filter, n.Attrs(), x, e.Ints(f.Shape()...), g)
	}
	return out, nil
}

// inputGrad: Input(sizes, f, d) with upstream g (input-shaped) gives
// [nil, Filter(g, shape(f), d), F(g, f)].
func (c convFamily) inputGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	f, d := in[1], in[2]
	if n.NeedsGrad(1) {
		out[1] = op1(e, c.filter, n.Attrs(), g, e.Ints(f.Shape()...), d)
	}
	if n.NeedsGrad(2) {
		out[2] = op1(e, c.fwd, n.Attrs(), g, f)
	}
	return out, nil
}

// filterGrad: Filter(x, sizes, d) with upstream g (filter-shaped) gives
// [Input(shape(x), g, d), nil, F(x, g)].
func (c convFamily) filterGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, d := in[0], in[2]
	if n.NeedsGrad(0) {
		out[0] = op1(e, c.input, n.Attrs(), e.Ints(x.Shape()...), g, d)
	}
	if n.NeedsGrad(2) {
		out[2] = op1(e, c.fwd, n.Attrs(), x, g)
	}
	return out, nil
}
