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

func init() {
	registry.MustSetGradient("Conv2D", conv2DGrad)
	registry.MustSetGradient("Conv2DBackpropInput", conv2DBackpropInputGrad)
	registry.MustSetGradient("Conv2DBackpropFilter", conv2DBackpropFilterGrad)
}

// conv2DGrad: Conv2D(x, f) with upstream g gives
// dx = Conv2DBackpropInput(shape(x), f, g), df = Conv2DBackpropFilter(x, shape(f), g).
func conv2DGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := make([]registry.Value, 2)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, f := in[0], in[1]
	if n.NeedsGrad(0) {
		out[0] = op1(e, "Conv2DBackpropInput", n.Attrs(), e.Ints(shapeOf(x)...), f, g)
	}
	if n.NeedsGrad(1) {
		out[1] = op1(e, "Conv2DBackpropFilter", n.Attrs(), x, e.Ints(shapeOf(f)...), g)
	}
	return out, nil
}

// conv2DBackpropInputGrad: Conv2DBackpropInput(sizes, f, d) with upstream
// g (input-shaped) gives [nil, Conv2DBackpropFilter(g, shape(f), d), Conv2D(g, f)].
func conv2DBackpropInputGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := make([]registry.Value, 3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	f, d := in[1], in[2]
	if n.NeedsGrad(1) {
		out[1] = op1(e, "Conv2DBackpropFilter", n.Attrs(), g, e.Ints(shapeOf(f)...), d)
	}
	if n.NeedsGrad(2) {
		out[2] = op1(e, "Conv2D", n.Attrs(), g, f)
	}
	return out, nil
}

// conv2DBackpropFilterGrad: Conv2DBackpropFilter(x, sizes, d) with upstream
// g (filter-shaped) gives [Conv2DBackpropInput(shape(x), g, d), nil, Conv2D(x, g)].
func conv2DBackpropFilterGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := make([]registry.Value, 3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, d := in[0], in[2]
	if n.NeedsGrad(0) {
		out[0] = op1(e, "Conv2DBackpropInput", n.Attrs(), e.Ints(shapeOf(x)...), g, d)
	}
	if n.NeedsGrad(2) {
		out[2] = op1(e, "Conv2D", n.Attrs(), x, g)
	}
	return out, nil
}
