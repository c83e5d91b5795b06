package backward

import (
	"math/rand"
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/dwconv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// The DepthwiseConv2dNative family's gradient ops,
// DepthwiseConv2dNativeBackpropInput and
// DepthwiseConv2dNativeBackpropFilter, with TensorFlow's names, argument
// order, attrs (forward.DepthwiseConv2dAttrs) and validation
// (spec/depthwise_conv2d.md), and the gradients of the three ops. Like the
// forward op (forward/depthwise_conv2d.go) they honour dilations, unequal
// strides and NCHW; their loops are in internal/dwconv.
//
// Gradients, as TensorFlow registers them (tensorflow/python/ops/nn_grad.py;
// spec/depthwise_conv2d.md §4): every call forwards the op's own attrs
// (strides, padding, explicit_paddings, dilations, data_format). The three
// ops are bilinear and each one's gradient is built from the other two, so
// gradients of any order work. The integer size inputs get no gradient;
// sizes passed on are int32 constants of the known shapes.
//
// All three follow TensorFlow's registrations: each backprop op is linear
// in each of its float inputs, and its adjoint with respect to one is
// another op of the family (as for Conv2D's backprops). Unlike TensorFlow's
// own kernels, the ops honour dilations and unequal strides, and the
// gradients forward those attrs unchanged, so they stay exact adjoints.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: OpDepthwiseConv2dNativeBackpropInput,
		Doc: "gradient of DepthwiseConv2dNative with respect to its input: input_sizes (int32/int64, 4 values), " +
			"filter, out_backprop",
		Inputs:    []registry.Arg{{Name: "input_sizes"}, {Name: "filter"}, {Name: "out_backprop"}},
		Outputs:   []registry.Arg{{Name: "output"}},
		Attrs:     forward.DepthwiseConv2dAttrs{},
		TypeInput: 1,
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: dwBackpropInputKernel[float32], tensor.Float64: dwBackpropInputKernel[float64]},
		Samples: func(r *rand.Rand) []registry.Sample { return forward.DepthwiseConv2dBackpropSamples(r, false) },
	})
	registry.MustRegister(&registry.OpDef{
		Name: OpDepthwiseConv2dNativeBackpropFilter,
		Doc: "gradient of DepthwiseConv2dNative with respect to its filter: input, filter_sizes (int32/int64, 4 values), " +
			"out_backprop",
		Inputs:  []registry.Arg{{Name: "input"}, {Name: "filter_sizes"}, {Name: "out_backprop"}},
		Outputs: []registry.Arg{{Name: "output"}},
		Attrs:   forward.DepthwiseConv2dAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: dwBackpropFilterKernel[float32], tensor.Float64: dwBackpropFilterKernel[float64]},
		Samples: func(r *rand.Rand) []registry.Sample { return forward.DepthwiseConv2dBackpropSamples(r, true) },
	})
	convFamily[forward.DepthwiseConv2dAttrs]{
		fwdOp:    forward.OpDepthwiseConv2dNative,
		inputOp:  OpDepthwiseConv2dNativeBackpropInput,
		filterOp: OpDepthwiseConv2dNativeBackpropFilter,
		fwd:      forward.DepthwiseConv2dNative,
		input:    DepthwiseConv2dNativeBackpropInput,
		filter:   DepthwiseConv2dNativeBackpropFilter,
	}.register()
}

func dwBackpropInputKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = OpDepthwiseConv2dNativeBackpropInput
	win, err := forward.ParseDepthwiseConv2dWindow(op, attrs)
	if err != nil {
		return nil, err
	}
	sizes, f, dy := in[0], in[1], in[2]
	if dy.Dtype() != f.Dtype() {
		return nil, registry.NamedInputErrorf(registry.ErrDtype, op, "out_backprop", "%s: out_backprop has dtype %v, expected %v like filter", op, dy.Dtype(), f.Dtype())
	}
	var buf [4]int
	xs, err := dwSizesArg(op, "input_sizes", sizes, buf[:])
	if err != nil {
		return nil, err
	}
	g, err := win.BackpropGeometry(op, xs, f.Shape(), dy.Shape())
	if err != nil {
		return nil, err
	}
	out, err := forward.DepthwiseConv2dOutput(kc, op, f.Dtype(), xs)
	if err != nil {
		return nil, err
	}
	od := tensorx.MustSlice[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(dy) == 0 || tensorx.Len(f) == 0 {
		clear(od)
		return kc.Results(out), nil
	}
	w, err := forward.DepthwiseConv2dWork[T](kc, dwconv.BackpropInputWork[T](&g))
	if err != nil {
		return nil, err
	}
	dwconv.BackpropInput(od, tensorx.MustSlice[T](f), tensorx.MustSlice[T](dy), &g, kc.NumThreads(), &w)
	return kc.Results(out), nil
}

func dwBackpropFilterKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = OpDepthwiseConv2dNativeBackpropFilter
	win, err := forward.ParseDepthwiseConv2dWindow(op, attrs)
	if err != nil {
		return nil, err
	}
	x, sizes, dy := in[0], in[1], in[2]
	if dy.Dtype() != x.Dtype() {
		return nil, registry.NamedInputErrorf(registry.ErrDtype, op, "out_backprop", "%s: out_backprop has dtype %v, expected %v like input", op, dy.Dtype(), x.Dtype())
	}
	var buf [4]int
	fs, err := dwSizesArg(op, "filter_sizes", sizes, buf[:])
	if err != nil {
		return nil, err
	}
	g, err := win.BackpropGeometry(op, x.Shape(), fs, dy.Shape())
	if err != nil {
		return nil, err
	}
	out, err := forward.DepthwiseConv2dOutput(kc, op, x.Dtype(), fs)
	if err != nil {
		return nil, err
	}
	od := tensorx.MustSlice[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 || tensorx.Len(dy) == 0 {
		// Empty sums (TensorFlow leaves the buffer uninitialised here).
		clear(od)
		return kc.Results(out), nil
	}
	w, err := forward.DepthwiseConv2dWork[T](kc, dwconv.BackpropFilterWork[T](&g))
	if err != nil {
		return nil, err
	}
	dwconv.BackpropFilter(od, tensorx.MustSlice[T](x), tensorx.MustSlice[T](dy), &g, kc.NumThreads(), &w)
	return kc.Results(out), nil
}

// dwSizesArg reads input_sizes / filter_sizes: a 1-D int32/int64 vector of
// non-negative values (TensorFlow reuses Conv2D's wording for the rank),
// appended to buf[:0] (a caller's array, so that a valid 4-vector costs no
// allocation).
func dwSizesArg(op, name string, t *tensor.Dense, buf []int) ([]int, error) {
	if len(t.Shape()) != 1 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: %s input must be 1-dim, not %d", op, name, len(t.Shape()))
	}
	v, err := tensorx.AppendInts(buf[:0], t)
	if err != nil {
		return nil, registry.NamedInputErrorf(registry.ErrDtype, op, name, "%s: %s must be an int32 or int64 vector, got dtype %v", op, name, t.Dtype())
	}
	for i, d := range v {
		if d < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d of %s must be >= 0, got %v", op, i, name, slices.Clone(v))
		}
	}
	return v, nil
}
