package backward

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
	convFamily{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}.register()
}
