package backward

import (
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// The Conv2D family's gradient ops, Conv2DBackpropInput and
// Conv2DBackpropFilter, with TensorFlow's names, argument order, attrs
// (forward.Conv2DAttrs) and validation (spec/conv2d.md), and the
// gradients of all three ops.
//
// The kernels check their inputs here and the shapes shared with Conv2D
// in forward (forward.ParseConv2DWindow, BackpropGeometry); the loops are
// internal/conv's. Conv2DBackpropInput with unit strides is a forward
// convolution of dy with the flipped, transposed filter; with larger
// strides it computes dy·filterᵀ into im2col rows and scatters them back
// (col2im). Conv2DBackpropFilter computes dfᵀ = dyᵀ·im2col(x) in chunks of
// output positions whose partials are added in float64 in chunk order.
// Both are bit-identical for any thread count. NCHW tensors are
// transposed to NHWC scratch and back. Empty tensors follow TensorFlow's
// kernels: an empty output is returned as is, and an output that only
// padding (or an empty out_backprop / input) reaches is all zeros.
// Steady-state calls allocate nothing on one thread with the tape's
// recycling allocator (conv2d_alloc_test.go).
//
// Gradients, as TensorFlow registers them
// (tensorflow/python/ops/nn_grad.py; spec/conv2d.md §4): every call
// forwards the op's own attrs (strides, padding, explicit_paddings,
// dilations, data_format, use_cudnn_on_gpu). The three ops are bilinear and
// each one's gradient is built from the other two, so gradients of any
// order work. The integer size inputs get no gradient; sizes passed on
// are int32 constants of the known shapes.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: OpConv2DBackpropInput,
		Doc: "gradient of Conv2D with respect to its input: input_sizes (int32/int64, 4 values or [H, W]), " +
			"filter, out_backprop",
		Inputs:    []registry.Arg{{Name: "input_sizes"}, {Name: "filter"}, {Name: "out_backprop"}},
		Outputs:   []registry.Arg{{Name: "output"}},
		Attrs:     forward.Conv2DAttrs{},
		TypeInput: 1,
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: conv2DBackpropInputKernel[float32],
			tensor.Float64: conv2DBackpropInputKernel[float64],
			tensor.Int32:   conv2DBackpropInputInt32Kernel, // conv2d_int32.go
		},
		Samples: forward.Conv2DBackpropInputSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: OpConv2DBackpropFilter,
		Doc: "gradient of Conv2D with respect to its filter: input, filter_sizes (int32/int64, 4 values), " +
			"out_backprop",
		Inputs:  []registry.Arg{{Name: "input"}, {Name: "filter_sizes"}, {Name: "out_backprop"}},
		Outputs: []registry.Arg{{Name: "output"}},
		Attrs:   forward.Conv2DAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: conv2DBackpropFilterKernel[float32],
			tensor.Float64: conv2DBackpropFilterKernel[float64],
		},
		Samples: forward.Conv2DBackpropFilterSamples,
	})
	conv2DFamily.register()
}

func conv2DBackpropInputKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = OpConv2DBackpropInput
	win, err := forward.ParseConv2DWindow(op, attrs, registry.ErrUnimplemented)
	if err != nil {
		return nil, err
	}
	out, od, g, done, err := conv2DBackpropInputPrep[T](kc, op, win, in, false)
	if err != nil {
		return nil, err
	}
	if done {
		return kc.Results(out), nil
	}
	if err := conv2DBackpropInput(kc, &g, tensorx.MustSlice[T](in[1]), tensorx.MustSlice[T](in[2]), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// conv2DBackpropInputPrep checks Conv2DBackpropInput's inputs against the
// window, allocates its output out (data od) and computes the geometry
// g, unless the output is already complete (done): empty, or all zeros
// for an empty out_backprop. With geomFirst the geometry is computed (and
// checked) before those early returns, as TensorFlow's CPU kernel does.
func conv2DBackpropInputPrep[T tensorx.Elem](kc *registry.KernelCtx, op string, win forward.Conv2DWindow, in []*tensor.Dense, geomFirst bool) (out *tensor.Dense, od []T, g forward.Conv2DGeometry, done bool, err error) {
	sizes, f, dy := in[0], in[1], in[2]
	if dy.Dtype() != f.Dtype() {
		return nil, nil, g, false, registry.NamedInputErrorf(registry.ErrDtype, op, "out_backprop", "%s: out_backprop has dtype %v, expected %v like filter", op, dy.Dtype(), f.Dtype())
	}
	if len(dy.Shape()) != 4 {
		// TensorFlow's message names the wrong input (sic).
		return nil, nil, g, false, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: input_sizes must be 4-dimensional, got: %d (out_backprop has shape %v and must be 4-D)", op, len(dy.Shape()), dy.Shape())
	}
	if len(f.Shape()) != 4 {
		return nil, nil, g, false, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: filter must be 4-dimensional, got shape %v", op, f.Shape())
	}
	var vbuf, xbuf [4]int
	vals, err := forward.Conv2DShapeArg(vbuf[:0], op, "input_sizes", sizes)
	if err != nil {
		return nil, nil, g, false, err
	}
	var xs []int
	switch len(vals) {
	case 4:
		for _, v := range vals {
			if v < 0 {
				return nil, nil, g, false, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d must be >= 0 (input_sizes=%v)", op, v, slices.Clone(vals))
			}
		}
		xs = vals
	case 2:
		if vals[0] < 0 || vals[1] < 0 {
			return nil, nil, g, false, registry.Errorf(registry.ErrInvalidArgument, "%s: elements of input_sizes must be >= 0, not %dx%d", op, vals[0], vals[1])
		}
		an, ah, aw, ac := win.Axes()
		xbuf[an], xbuf[ah], xbuf[aw], xbuf[ac] = dy.Shape()[an], vals[0], vals[1], f.Shape()[2]
		xs = xbuf[:]
	default:
		return nil, nil, g, false, registry.Errorf(registry.ErrInvalidArgument, "%s requires input_sizes to contain 4 values or 2 values, but got: %d", op, len(vals))
	}
	if err := win.CheckDims(op, "Input", xs); err != nil {
		return nil, nil, g, false, err
	}
	if geomFirst {
		if g, err = win.BackpropGeometry(op, xs, f.Shape(), dy.Shape()); err != nil {
			return nil, nil, g, false, err
		}
	}
	if out, err = forward.Conv2DOutput(kc, op, f.Dtype(), xs); err != nil {
		return nil, nil, g, false, err
	}
	od = tensorx.MustSlice[T](out)
	if len(od) == 0 {
		return out, od, g, true, nil
	}
	if tensorx.Len(dy) == 0 {
		clear(od)
		return out, od, g, true, nil
	}
	if !geomFirst {
		if g, err = win.BackpropGeometry(op, xs, f.Shape(), dy.Shape()); err != nil {
			return nil, nil, g, false, err
		}
	}
	return out, od, g, false, nil
}

func conv2DBackpropFilterKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = OpConv2DBackpropFilter
	win, err := forward.ParseConv2DWindow(op, attrs, registry.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	x, sizes, dy := in[0], in[1], in[2]
	if dy.Dtype() != x.Dtype() {
		return nil, registry.NamedInputErrorf(registry.ErrDtype, op, "out_backprop", "%s: out_backprop has dtype %v, expected %v like input", op, dy.Dtype(), x.Dtype())
	}
	if len(x.Shape()) != 4 {
		return nil, registry.NamedInputErrorf(registry.ErrShape, op, "input", "%s: input must be 4-dimensional, got shape %v", op, x.Shape())
	}
	if len(dy.Shape()) != 4 {
		return nil, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: out_backprop must be 4-dimensional, got shape %v", op, dy.Shape())
	}
	var fbuf [4]int
	fs, err := forward.Conv2DShapeArg(fbuf[:0], op, "filter_sizes", sizes)
	if err != nil {
		return nil, err
	}
	for _, v := range fs {
		if v < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d must be >= 0 (filter_sizes=%v)", op, v, slices.Clone(fs))
		}
	}
	if len(fs) != 4 {
		return nil, registry.NamedInputErrorf(registry.ErrShape, op, "filter_sizes", "%s: filter must be 4-dimensional, but filter_sizes has %d values (%v)", op, len(fs), slices.Clone(fs))
	}
	for _, v := range fs {
		if err := forward.Conv2DCheckFits(op, "filter", v); err != nil {
			return nil, err
		}
	}
	out, err := forward.Conv2DOutput(kc, op, x.Dtype(), fs)
	if err != nil {
		return nil, err
	}
	od := tensorx.MustSlice[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 {
		clear(od)
		return kc.Results(out), nil
	}
	g, err := win.BackpropGeometry(op, x.Shape(), fs, dy.Shape())
	if err != nil {
		return nil, err
	}
	if err := conv2DBackpropFilter(kc, &g, tensorx.MustSlice[T](x), tensorx.MustSlice[T](dy), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// conv2DBackpropInput computes dx from the filter and dy with scratch
// from kc; NCHW problems run in NHWC scratch.
func conv2DBackpropInput[T tensorx.Float](kc *registry.KernelCtx, g *forward.Conv2DGeometry, f, dy, dx []T) error {
	threads := kc.NumThreads()
	out := dx // the NHWC result: dx itself, or scratch for NCHW
	if g.NCHW() {
		dyt, err := registry.Scratch[T](kc, len(dy), false)
		if err != nil {
			return err
		}
		if out, err = registry.Scratch[T](kc, len(dx), false); err != nil {
			return err
		}
		conv.ToNHWC(dyt, dy, g.N, g.O, g.OH, g.OW)
		dy = dyt
	}
	var scratch []T
	if n := conv.BackpropInputScratch(&g.Geom, threads); n > 0 {
		var err error
		if scratch, err = registry.Scratch[T](kc, n, false); err != nil {
			return err
		}
	}
	conv.BackpropInput(out, f, dy, &g.Geom, threads, scratch)
	if g.NCHW() {
		conv.ToNCHW(dx, out, g.N, g.C, g.H, g.W)
	}
	return nil
}

// conv2DBackpropFilter computes df from x and dy with scratch from kc;
// NCHW problems run on NHWC copies of x and dy.
func conv2DBackpropFilter[T tensorx.Float](kc *registry.KernelCtx, g *forward.Conv2DGeometry, x, dy, df []T) error {
	if g.NCHW() {
		xt, err := registry.Scratch[T](kc, len(x), false)
		if err != nil {
			return err
		}
		dyt, err := registry.Scratch[T](kc, len(dy), false)
		if err != nil {
			return err
		}
		conv.ToNHWC(xt, x, g.N, g.C, g.H, g.W)
		conv.ToNHWC(dyt, dy, g.N, g.O, g.OH, g.OW)
		x, dy = xt, dyt
	}
	var acc []float64
	var parts []T
	if na, np := conv.BackpropFilterScratch(&g.Geom); na > 0 {
		var err error
		if acc, err = registry.Scratch[float64](kc, na, true); err != nil {
			return err
		}
		if parts, err = registry.Scratch[T](kc, np, false); err != nil {
			return err
		}
	}
	conv.BackpropFilter(df, x, dy, &g.Geom, kc.NumThreads(), acc, parts)
	return nil
}

// convFamily holds the three ops of a convolution family with attrs A:
// the forward op and its two backprops, by name (to set their gradients)
// and by typed builder (to apply them). Conv2D and DepthwiseConv2dNative
// register the same gradient structure (backward/depthwise_conv2d.go uses
// it too).
type convFamily[A any] struct {
	fwdOp, inputOp, filterOp string

	fwd    func(e registry.Emitter, attrs registry.Attrs[A], input, filter registry.Value) registry.Value
	input  func(e registry.Emitter, attrs registry.Attrs[A], inputSizes, filter, outBackprop registry.Value) registry.Value
	filter func(e registry.Emitter, attrs registry.Attrs[A], input, filterSizes, outBackprop registry.Value) registry.Value
}

var conv2DFamily = convFamily[forward.Conv2DAttrs]{
	fwdOp:    forward.OpConv2D,
	inputOp:  OpConv2DBackpropInput,
	filterOp: OpConv2DBackpropFilter,
	fwd:      forward.Conv2D,
	input:    Conv2DBackpropInput,
	filter:   Conv2DBackpropFilter,
}

func (c convFamily[A]) register() {
	registry.MustSetGradient(c.fwdOp, c.fwdGrad)
	registry.MustSetGradient(c.inputOp, c.inputGrad)
	registry.MustSetGradient(c.filterOp, c.filterGrad)
}

// fwdGrad: F(x, f) with upstream g gives
// dx = Input(shape(x), f, g), df = Filter(x, shape(f), g).
func (c convFamily[A]) fwdGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(2)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, f := in[0], in[1]
	if n.NeedsGrad(0) {
		out[0] = c.input(e, registry.NodeAttrs[A](n), e.Ints(x.Shape()...), f, g)
	}
	if n.NeedsGrad(1) {
		out[1] = c.filter(e, registry.NodeAttrs[A](n), x, e.Ints(f.Shape()...), g)
	}
	return out, nil
}

// inputGrad: Input(sizes, f, d) with upstream g (input-shaped) gives
// [nil, Filter(g, shape(f), d), F(g, f)].
func (c convFamily[A]) inputGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	f, d := in[1], in[2]
	if n.NeedsGrad(1) {
		out[1] = c.filter(e, registry.NodeAttrs[A](n), g, e.Ints(f.Shape()...), d)
	}
	if n.NeedsGrad(2) {
		out[2] = c.fwd(e, registry.NodeAttrs[A](n), g, f)
	}
	return out, nil
}

// filterGrad: Filter(x, sizes, d) with upstream g (filter-shaped) gives
// [Input(shape(x), g, d), nil, F(x, g)].
func (c convFamily[A]) filterGrad(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
	out := e.Values(3)
	g := dy[0]
	if g == nil {
		return out, nil
	}
	in := n.Inputs()
	x, d := in[0], in[2]
	if n.NeedsGrad(0) {
		out[0] = c.input(e, registry.NodeAttrs[A](n), e.Ints(x.Shape()...), g, d)
	}
	if n.NeedsGrad(2) {
		out[2] = c.fwd(e, registry.NodeAttrs[A](n), x, g)
	}
	return out, nil
}
