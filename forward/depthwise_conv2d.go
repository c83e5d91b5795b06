package forward

import (
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/dwconv"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// DepthwiseConv2dNative family: DepthwiseConv2dNative,
// DepthwiseConv2dNativeBackpropInput and DepthwiseConv2dNativeBackpropFilter
// with TensorFlow's names, argument order, attrs and validation
// (spec/depthwise_conv2d.md). Output channel c·M + m holds input channel c
// filtered by filter[:, :, c, m].
//
// Beyond TensorFlow's CPU kernels, and as the op's documentation, its shape
// function and XLA define the op, the kernels implement:
//   - dilations, in all three ops (TensorFlow's CPU/GPU forward kernels
//     refuse them and its backprop kernels ignore them; spec §6);
//   - unequal row and column strides (TensorFlow refuses them; the math is
//     the obvious one);
//   - NCHW on CPU.
//
// Computation: direct NHWC kernels, no im2col (depthwise convolution is
// memory-bound). Every kernel walks NHWC rows; the innermost loop runs over
// the contiguous channels of one pixel. An output row is built tap row by
// tap row (the first valid filter row stores, the others add), so no
// output is zeroed first. Pixels whose whole filter window lies inside the
// image ("interior") take fast loops: for multiplier 1, 3-wide filter rows
// at stride 1 or 2 compute two output pixels per step (sharing the filter
// loads and the overlapping input loads); other windows fuse up to three
// taps per pass. Border pixels go through a per-pixel loop that skips the
// taps falling into the padding.
//
// DepthwiseConv2dNativeBackpropInput is computed as a gather: each input
// row collects the output rows and filter taps that read it, so rows are
// independent and every element is written once per contributing filter
// row. At unit stride and dilation a 3-wide filter row is the forward
// kernel with the taps reversed; at stride 2 it has its own pair loop
// (even pixels get two taps, odd pixels one).
//
// DepthwiseConv2dNativeBackpropFilter sums over batch and output pixels
// without atomics: output rows are cut into chunks whose bounds depend only
// on the shapes, each chunk sums its rows into its own partial filter (per
// row in the element type, then in float64), and the partials are added in
// chunk order. Results are bit-identical for any thread count.
//
// float32 problems with multiplier 1, a 3x3 filter, unit column dilation,
// column stride 1 or 2 and at least 8 channels (any row stride, row
// dilation and padding) run AVX2/FMA kernels instead (internal/dwconv,
// when the CPU has them and the noasm build tag is not set): an output row
// is one call that keeps a channel block's nine taps in registers and
// sweeps blocks of pixels, the filter gradient keeps nine tap sums in
// registers along a row, and each call prefetches the rows the next one
// reads (the workloads are memory-bound). Their sums are fused
// multiply-adds in a fixed order, so they differ from the Go loops in the
// last bits, and are still bit-identical for any thread count.
//
// NCHW tensors are transposed to NHWC scratch and back.

// DepthwiseConv2dAttrs are the attributes of DepthwiseConv2dNative,
// DepthwiseConv2dNativeBackpropInput and DepthwiseConv2dNativeBackpropFilter
// (TensorFlow's names and defaults; unlike Conv2D there is no
// use_cudnn_on_gpu).
type DepthwiseConv2dAttrs struct {
	// Strides are the window strides, 4 values in data_format order; the
	// batch and depth entries must be 1. Required. The row and column
	// strides may differ (TensorFlow's kernels require them equal).
	Strides []int `tf:"strides"`
	// Padding is "SAME", "VALID" or "EXPLICIT". Required.
	Padding string `tf:"padding" allowed:"SAME,VALID,EXPLICIT"`
	// ExplicitPaddings are the (before, after) paddings of the 4 axes in
	// data_format order, 8 values, used only with Padding "EXPLICIT"; the
	// batch and depth pairs must be 0.
	ExplicitPaddings []int `tf:"explicit_paddings"`
	// DataFormat is "NHWC" (default) or "NCHW".
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW"`
	// Dilations are the filter dilation rates, 4 values in data_format
	// order (default [1,1,1,1]); the batch and depth entries must be 1.
	// They are applied in all three ops, as in Conv2D (TensorFlow's own
	// kernels refuse or ignore them).
	Dilations []int `tf:"dilations" default:"[1,1,1,1]"`
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: "DepthwiseConv2dNative",
		Doc: "depthwise 2-D cross-correlation of input [N,H,W,C] (or NCHW) with filter [KH,KW,C,M]; " +
			"output channel c*M+m is channel c filtered by filter[:,:,c,m]",
		Inputs:  args("input", "filter"),
		Outputs: args("output"),
		Attrs:   DepthwiseConv2dAttrs{},
		Kernels: floatKernels(dwForwardKernel[float32], dwForwardKernel[float64]),
		Samples: depthwiseConv2dSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "DepthwiseConv2dNativeBackpropInput",
		Doc: "gradient of DepthwiseConv2dNative with respect to its input: input_sizes (int32/int64, 4 values), " +
			"filter, out_backprop",
		Inputs:    args("input_sizes", "filter", "out_backprop"),
		Outputs:   args("output"),
		Attrs:     DepthwiseConv2dAttrs{},
		TypeInput: 1,
		Kernels:   floatKernels(dwBackpropInputKernel[float32], dwBackpropInputKernel[float64]),
		Samples:   depthwiseConv2dBackpropInputSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "DepthwiseConv2dNativeBackpropFilter",
		Doc: "gradient of DepthwiseConv2dNative with respect to its filter: input, filter_sizes (int32/int64, 4 values), " +
			"out_backprop",
		Inputs:  args("input", "filter_sizes", "out_backprop"),
		Outputs: args("output"),
		Attrs:   DepthwiseConv2dAttrs{},
		Kernels: floatKernels(dwBackpropFilterKernel[float32], dwBackpropFilterKernel[float64]),
		Samples: depthwiseConv2dBackpropFilterSamples,
	})
}

// dwGeom is the validated geometry of one depthwise problem, in NHWC names
// whatever the layout.
type dwGeom struct {
	layout         convLayout
	n, h, w, c     int // input
	kh, kw, m      int // filter [kh, kw, c, m]
	oh, ow         int // output spatial size
	sh, sw, dh, dw int // strides, dilations
	pt, pb, pl, pr int // paddings: top, bottom, left, right
}

// oc is the output depth c·m.
func (g *dwGeom) oc() int { return g.c * g.m }

// inShape and outShape return the input and output shapes in the
// layout's order, as arrays (a slice would cost an allocation per call).
func (g *dwGeom) inShape() [4]int  { return dwDims(g.layout, g.n, g.h, g.w, g.c) }
func (g *dwGeom) outShape() [4]int { return dwDims(g.layout, g.n, g.oh, g.ow, g.oc()) }

// dwDims returns the NHWC sizes n, h, w, c in layout l's order.
func dwDims(l convLayout, n, h, w, c int) [4]int {
	var s [4]int
	s[l.n], s[l.h], s[l.w], s[l.c] = n, h, w, c
	return s
}

// dwWindow validates the attrs of any op of the family. The batch/depth
// stride error is InvalidArgument, as in TensorFlow's depthwise kernels.
func dwWindow(op string, attrs any) (convWindow, error) {
	a, ok := attrs.(DepthwiseConv2dAttrs)
	if !ok {
		return convWindow{}, registry.Errorf(registry.ErrInvalidArgument, "%s: attrs must be forward.DepthwiseConv2dAttrs, got %T", op, attrs)
	}
	if len(a.Strides) == 4 && len(a.Dilations) != 4 {
		// TensorFlow's shape function's wording.
		return convWindow{}, registry.Errorf(registry.ErrInvalidArgument, "%s: DepthwiseConv2D requires the dilations attribute to contain 4 values, but got: %d (dilations=%v)", op, len(a.Dilations), a.Dilations)
	}
	return convParseWindow(op, a.Strides, a.Dilations, a.Padding, a.ExplicitPaddings, a.DataFormat, registry.ErrInvalidArgument)
}

// dwCheckFits rejects dimensions TensorFlow cannot index with 32-bit ints,
// with its wording ("Input rows too large", ...).
func dwCheckFits(op string, l convLayout, what string, s []int) error {
	names := [4]string{}
	names[l.n], names[l.h], names[l.w], names[l.c] = "batch", "rows", "cols", "depth"
	for i, v := range s {
		if v > convMaxDim {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: %s %s too large (%d)", op, what, names[i], v)
		}
	}
	return nil
}

// dwFilterFits checks the filter dimensions against TensorFlow's 32-bit
// limit.
func dwFilterFits(op string, fs []int) error {
	for _, v := range fs {
		if err := convCheckFits(op, "filter dimension", v); err != nil {
			return err
		}
	}
	return nil
}

// dwSpatial computes the output size and paddings of both spatial axes.
func dwSpatial(op string, win convWindow, g *dwGeom) error {
	var err error
	if g.oh, g.pt, g.pb, err = convOutputSize(op, g.h, g.kh, g.dh, g.sh, win.padding, win.pt, win.pb); err != nil {
		return err
	}
	g.ow, g.pl, g.pr, err = convOutputSize(op, g.w, g.kw, g.dw, g.sw, win.padding, win.pl, win.pr)
	return err
}

func dwNewGeom(win convWindow) dwGeom {
	return dwGeom{layout: win.layout, sh: win.sh, sw: win.sw, dh: win.dh, dw: win.dw}
}

// dwForwardGeom checks DepthwiseConv2dNative's input and filter shapes (in
// the order of TensorFlow's kernel) and computes the output geometry.
func dwForwardGeom(op string, win convWindow, xs, fs []int) (dwGeom, error) {
	g := dwNewGeom(win)
	if len(xs) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: input must be 4-dimensional, got shape %v", op, xs)
	}
	if len(fs) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: filter must be 4-dimensional: %v", op, fs)
	}
	l := win.layout
	g.n, g.h, g.w, g.c = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.kh, g.kw, g.m = fs[0], fs[1], fs[3]
	if g.c != fs[2] {
		return g, registry.Errorf(registry.ErrShape, "%s: input and filter must have the same depth: %d vs %d", op, g.c, fs[2])
	}
	if err := dwCheckFits(op, l, "Input", xs); err != nil {
		return g, err
	}
	if err := dwFilterFits(op, fs); err != nil {
		return g, err
	}
	return g, dwSpatial(op, win, &g)
}

// dwBackpropGeom reconciles the input, filter and out_backprop shapes of
// a backprop op, with the checks and messages of TensorFlow's depthwise
// backprop kernels (in their order).
func dwBackpropGeom(op string, win convWindow, xs, fs, dys []int) (dwGeom, error) {
	g := dwNewGeom(win)
	if len(xs) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: input must be 4-dimensional, got shape %v", op, slices.Clone(xs))
	}
	if len(fs) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: filter must be 4-dimensional, got shape %v", op, slices.Clone(fs))
	}
	if len(dys) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: out_backprop must be 4-dimensional, got shape %v", op, dys)
	}
	l := win.layout
	if xs[l.n] != dys[l.n] {
		return g, registry.Errorf(registry.ErrShape, "%s: input and out_backprop must have the same batch size: %d vs %d", op, xs[l.n], dys[l.n])
	}
	if err := dwCheckFits(op, l, "Input", xs); err != nil {
		return g, err
	}
	if err := dwCheckFits(op, l, "Output", dys); err != nil {
		return g, err
	}
	if err := dwFilterFits(op, fs); err != nil {
		return g, err
	}
	g.n, g.h, g.w, g.c = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.kh, g.kw, g.m = fs[0], fs[1], fs[3]
	if g.c != fs[2] {
		return g, registry.Errorf(registry.ErrShape, "%s: input and filter must have the same in_depth: %d vs %d", op, g.c, fs[2])
	}
	if g.m*g.c != dys[l.c] {
		return g, registry.Errorf(registry.ErrShape, "%s: depth_multiplier * in_depth not equal to out_depth: %d * %d != %d", op, g.m, g.c, dys[l.c])
	}
	if err := dwSpatial(op, win, &g); err != nil {
		return g, err
	}
	if dys[l.h] != g.oh {
		return g, registry.Errorf(registry.ErrShape, "%s: Number of rows of out_backprop doesn't match computed: actual = %d, computed = %d", op, dys[l.h], g.oh)
	}
	if dys[l.w] != g.ow {
		return g, registry.Errorf(registry.ErrShape, "%s: Number of cols of out_backprop doesn't match computed: actual = %d, computed = %d", op, dys[l.w], g.ow)
	}
	return g, nil
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
		return nil, registry.Errorf(registry.ErrDtype, "%s: %s must be an int32 or int64 vector, got dtype %v", op, name, t.Dtype())
	}
	for i, d := range v {
		if d < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d of %s must be >= 0, got %v", op, i, name, slices.Clone(v))
		}
	}
	return v, nil
}

// dwOutput allocates an output, reporting a shape too large to hold as an
// error naming the op.
func dwOutput(kc *registry.KernelCtx, op string, dt tensor.Dtype, shape []int) (*tensor.Dense, error) {
	if _, err := tensorx.Numel(shape); err != nil {
		return nil, registry.Errorf(registry.ErrShape, "%s: output shape %v: %v", op, slices.Clone(shape), err)
	}
	return kc.Output(dt, shape...)
}

// ---------------------------------------------------------------------
// Kernels.

func dwForwardKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "DepthwiseConv2dNative"
	win, err := dwWindow(op, attrs)
	if err != nil {
		return nil, err
	}
	x, f := in[0], in[1]
	if f.Dtype() != x.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: filter has dtype %v, expected %v like input", op, f.Dtype(), x.Dtype())
	}
	g, err := dwForwardGeom(op, win, x.Shape(), f.Shape())
	if err != nil {
		return nil, err
	}
	os := g.outShape()
	out, err := dwOutput(kc, op, x.Dtype(), os[:])
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 || tensorx.Len(f) == 0 {
		// Only padding, or an empty filter window: empty sums.
		clear(od)
		return kc.Results(out), nil
	}
	if err := dwForward(kc, &g, data[T](x), data[T](f), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

func dwBackpropInputKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "DepthwiseConv2dNativeBackpropInput"
	win, err := dwWindow(op, attrs)
	if err != nil {
		return nil, err
	}
	sizes, f, dy := in[0], in[1], in[2]
	if dy.Dtype() != f.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: out_backprop has dtype %v, expected %v like filter", op, dy.Dtype(), f.Dtype())
	}
	var buf [4]int
	xs, err := dwSizesArg(op, "input_sizes", sizes, buf[:])
	if err != nil {
		return nil, err
	}
	g, err := dwBackpropGeom(op, win, xs, f.Shape(), dy.Shape())
	if err != nil {
		return nil, err
	}
	out, err := dwOutput(kc, op, f.Dtype(), xs)
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(dy) == 0 || tensorx.Len(f) == 0 {
		clear(od)
		return kc.Results(out), nil
	}
	if err := dwBackpropInput(kc, &g, data[T](f), data[T](dy), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

func dwBackpropFilterKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "DepthwiseConv2dNativeBackpropFilter"
	win, err := dwWindow(op, attrs)
	if err != nil {
		return nil, err
	}
	x, sizes, dy := in[0], in[1], in[2]
	if dy.Dtype() != x.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: out_backprop has dtype %v, expected %v like input", op, dy.Dtype(), x.Dtype())
	}
	var buf [4]int
	fs, err := dwSizesArg(op, "filter_sizes", sizes, buf[:])
	if err != nil {
		return nil, err
	}
	g, err := dwBackpropGeom(op, win, x.Shape(), fs, dy.Shape())
	if err != nil {
		return nil, err
	}
	out, err := dwOutput(kc, op, x.Dtype(), fs)
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 || tensorx.Len(dy) == 0 {
		// Empty sums (TensorFlow leaves the buffer uninitialised here).
		clear(od)
		return kc.Results(out), nil
	}
	if err := dwBackpropFilter(kc, &g, data[T](x), data[T](dy), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// ---------------------------------------------------------------------
// Layout wrappers: NCHW problems run in NHWC scratch.

func dwForward[T tensorx.Float](kc *registry.KernelCtx, g *dwGeom, x, f, out []T) error {
	if !g.layout.nchw() {
		return dwForwardNHWC(kc, g, x, f, out)
	}
	xt, err := registry.Scratch[T](kc, len(x), false)
	if err != nil {
		return err
	}
	ot, err := registry.Scratch[T](kc, len(out), false)
	if err != nil {
		return err
	}
	convToNHWC(xt, x, g.n, g.c, g.h, g.w)
	if err := dwForwardNHWC(kc, g, xt, f, ot); err != nil {
		return err
	}
	convToNCHW(out, ot, g.n, g.oc(), g.oh, g.ow)
	return nil
}

func dwBackpropInput[T tensorx.Float](kc *registry.KernelCtx, g *dwGeom, f, dy, dx []T) error {
	if !g.layout.nchw() {
		return dwBackpropInputNHWC(kc, g, f, dy, dx)
	}
	dyt, err := registry.Scratch[T](kc, len(dy), false)
	if err != nil {
		return err
	}
	dxt, err := registry.Scratch[T](kc, len(dx), false)
	if err != nil {
		return err
	}
	convToNHWC(dyt, dy, g.n, g.oc(), g.oh, g.ow)
	if err := dwBackpropInputNHWC(kc, g, f, dyt, dxt); err != nil {
		return err
	}
	convToNCHW(dx, dxt, g.n, g.c, g.h, g.w)
	return nil
}

func dwBackpropFilter[T tensorx.Float](kc *registry.KernelCtx, g *dwGeom, x, dy, df []T) error {
	if !g.layout.nchw() {
		return dwBackpropFilterNHWC(kc, g, x, dy, df)
	}
	xt, err := registry.Scratch[T](kc, len(x), false)
	if err != nil {
		return err
	}
	dyt, err := registry.Scratch[T](kc, len(dy), false)
	if err != nil {
		return err
	}
	convToNHWC(xt, x, g.n, g.c, g.h, g.w)
	convToNHWC(dyt, dy, g.n, g.oc(), g.oh, g.ow)
	return dwBackpropFilterNHWC(kc, g, xt, dyt, df)
}

// ---------------------------------------------------------------------
// Geometry helpers.

const (
	// dwRowGrain is the work (multiply-adds) below which rows are not
	// split further across goroutines.
	dwRowGrain = 1 << 15
	// dwFilterChunkWork is the work (multiply-adds) per chunk of the
	// filter gradient; chunk bounds depend only on the shapes.
	dwFilterChunkWork = 1 << 18
	// dwMaxFilterChunks bounds the chunk count of the filter gradient.
	dwMaxFilterChunks = 64
	// dwPartialElems bounds the float64 partial filters held at once.
	dwPartialElems = 1 << 22
)

// dwRange returns the taps [lo, hi) of one axis whose position
// start + t·d lies in [0, size), for t in [0, k).
func dwRange(start, d, k, size int) (lo, hi int) {
	if start < 0 {
		lo = min(k, (-start+d-1)/d)
	}
	if last := size - 1 - start; last >= 0 {
		hi = min(k, last/d+1)
	}
	return lo, max(lo, hi)
}

// dwInterior returns the output columns [lo, hi) whose whole filter
// window (taps x = j·s − p + q·d, q < k) lies in [0, size). p ≥ 0.
func dwInterior(out, size, k, s, d, p int) (lo, hi int) {
	lo = min(out, (p+s-1)/s)
	if last := size - 1 + p - (k-1)*d; last >= 0 {
		hi = min(out, last/s+1)
	}
	return lo, max(lo, hi)
}

// dwRowGrainFor returns the rows per scheduling chunk for rows of the
// given work.
func dwRowGrainFor(rowWork int) int {
	return max(1, dwRowGrain/max(1, rowWork))
}

// ---------------------------------------------------------------------
// Channel loops. m == 1 unless stated; "set" stores, otherwise adds.

// dwDot1 computes o (=|+=) a0·g0 elementwise.
func dwDot1[T tensorx.Float](o, a0, g0 []T, set bool) {
	n := len(o)
	a0, g0 = a0[:n], g0[:n]
	if set {
		for k := range o {
			o[k] = a0[k] * g0[k]
		}
		return
	}
	for k := range o {
		o[k] += a0[k] * g0[k]
	}
}

// dwDot2 computes o (=|+=) a0·g0 + a1·g1 elementwise.
func dwDot2[T tensorx.Float](o, a0, g0, a1, g1 []T, set bool) {
	n := len(o)
	a0, g0, a1, g1 = a0[:n], g0[:n], a1[:n], g1[:n]
	if set {
		for k := range o {
			o[k] = a0[k]*g0[k] + a1[k]*g1[k]
		}
		return
	}
	for k := range o {
		o[k] += a0[k]*g0[k] + a1[k]*g1[k]
	}
}

// dwDot3 computes o (=|+=) a0·g0 + a1·g1 + a2·g2 elementwise.
func dwDot3[T tensorx.Float](o, a0, g0, a1, g1, a2, g2 []T, set bool) {
	n := len(o)
	a0, g0, a1, g1, a2, g2 = a0[:n], g0[:n], a1[:n], g1[:n], a2[:n], g2[:n]
	if set {
		for k := range o {
			o[k] = a0[k]*g0[k] + a1[k]*g1[k] + a2[k]*g2[k]
		}
		return
	}
	for k := range o {
		o[k] += a0[k]*g0[k] + a1[k]*g1[k] + a2[k]*g2[k]
	}
}

// dwTaps collects up to three taps of one pixel (input slice, filter
// slice) for a fused multiplier-1 pass.
type dwTaps[T tensorx.Float] struct {
	a, g [3][]T
	n    int
	set  bool // the next pass stores
}

// add queues a tap and flushes three of them into o.
func (t *dwTaps[T]) add(o, a, g []T) {
	t.a[t.n], t.g[t.n] = a, g
	t.n++
	if t.n == 3 {
		t.flush(o)
	}
}

// flush applies the queued taps to o.
func (t *dwTaps[T]) flush(o []T) {
	switch t.n {
	case 0:
		return
	case 1:
		dwDot1(o, t.a[0], t.g[0], t.set)
	case 2:
		dwDot2(o, t.a[0], t.g[0], t.a[1], t.g[1], t.set)
	default:
		dwDot3(o, t.a[0], t.g[0], t.a[1], t.g[1], t.a[2], t.g[2], t.set)
	}
	t.set = false
	t.n = 0
}

// finish flushes and zeroes o if no tap reached a pixel that had to be
// stored (a pass that adds leaves o as it is).
func (t *dwTaps[T]) finish(o []T) {
	t.flush(o)
	if t.set {
		clear(o)
	}
}

// dwExpand computes o[c·m+k] (=|+=) x[c]·f[c·m+k] (forward, multiplier m).
func dwExpand[T tensorx.Float](o, x, f []T, m int, set bool) {
	for c, xv := range x {
		oc := o[c*m : (c+1)*m]
		fc := f[c*m : (c+1)*m]
		fc = fc[:len(oc)]
		if set {
			for k := range oc {
				oc[k] = xv * fc[k]
			}
		} else {
			for k := range oc {
				oc[k] += xv * fc[k]
			}
		}
	}
}

// dwReduce computes o[c] (=|+=) Σ_k y[c·m+k]·f[c·m+k] (input gradient,
// multiplier m).
func dwReduce[T tensorx.Float](o, y, f []T, m int, set bool) {
	for c := range o {
		yc := y[c*m : (c+1)*m]
		fc := f[c*m : (c+1)*m]
		fc = fc[:len(yc)]
		var s T
		for k := range yc {
			s += yc[k] * fc[k]
		}
		if set {
			o[c] = s
		} else {
			o[c] += s
		}
	}
}

// dwPair3S1 computes two adjacent output pixels o = [o0 | o1] of a 3-tap
// row at stride 1: o0 = Σ_q a_q·g_q, o1 = Σ_q a_{q+1}·g_q, where a_0..a_3
// are the consecutive input pixels of x.
func dwPair3S1[T tensorx.Float](o, x, g0, g1, g2 []T, c int, set bool) {
	o0 := o[:c]
	n := len(o0)
	o1 := o[c : c+n]
	a0, a1, a2, a3 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n]
	g0, g1, g2 = g0[:n], g1[:n], g2[:n]
	if set {
		for k := range o0 {
			w0, w1, w2 := g0[k], g1[k], g2[k]
			x1, x2 := a1[k], a2[k]
			o0[k] = a0[k]*w0 + x1*w1 + x2*w2
			o1[k] = x1*w0 + x2*w1 + a3[k]*w2
		}
		return
	}
	for k := range o0 {
		w0, w1, w2 := g0[k], g1[k], g2[k]
		x1, x2 := a1[k], a2[k]
		o0[k] += a0[k]*w0 + x1*w1 + x2*w2
		o1[k] += x1*w0 + x2*w1 + a3[k]*w2
	}
}

// dwPair3S2 is dwPair3S1 at stride 2: o1 reads input pixels 2..4.
func dwPair3S2[T tensorx.Float](o, x, g0, g1, g2 []T, c int, set bool) {
	o0 := o[:c]
	n := len(o0)
	o1 := o[c : c+n]
	a0, a1, a2, a3, a4 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n], x[4*c:][:n]
	g0, g1, g2 = g0[:n], g1[:n], g2[:n]
	if set {
		for k := range o0 {
			w0, w1, w2 := g0[k], g1[k], g2[k]
			x2 := a2[k]
			o0[k] = a0[k]*w0 + a1[k]*w1 + x2*w2
			o1[k] = x2*w0 + a3[k]*w1 + a4[k]*w2
		}
		return
	}
	for k := range o0 {
		w0, w1, w2 := g0[k], g1[k], g2[k]
		x2 := a2[k]
		o0[k] += a0[k]*w0 + a1[k]*w1 + x2*w2
		o1[k] += x2*w0 + a3[k]*w1 + a4[k]*w2
	}
}

// dwRow3 computes npix consecutive output pixels of a 3-tap row with
// taps g0..g2 on consecutive input pixels, input stride s (1 or 2); x
// starts at the first pixel's window.
func dwRow3[T tensorx.Float](o, x, g0, g1, g2 []T, c, npix, s int, set bool) {
	j := 0
	if s == 1 {
		for ; j+2 <= npix; j += 2 {
			dwPair3S1(o[j*c:(j+2)*c], x[j*c:(j+4)*c], g0, g1, g2, c, set)
		}
	} else {
		for ; j+2 <= npix; j += 2 {
			dwPair3S2(o[j*c:(j+2)*c], x[2*j*c:(2*j+5)*c], g0, g1, g2, c, set)
		}
	}
	if j < npix {
		b := s * j * c
		dwDot3(o[j*c:(j+1)*c], x[b:b+c], g0, x[b+c:b+2*c], g1, x[b+2*c:b+3*c], g2, set)
	}
}

// ---------------------------------------------------------------------
// Forward, NHWC.

// dwForwardNHWC computes out [n, oh, ow, c·m] from x [n, h, w, c] and f
// [kh, kw, c, m]; every element of out is written. float32 problems the
// assembly kernels cover take dwForwardAsm.
func dwForwardNHWC[T tensorx.Float](kc *registry.KernelCtx, g *dwGeom, x, f, out []T) error {
	if x32, ok := any(x).([]float32); ok && dwAsmFits(g) {
		return dwForwardAsm(kc, g, x32, any(f).([]float32), any(out).([]float32))
	}
	dwForwardGo(kc.NumThreads(), g, x, f, out)
	return nil
}

// dwForwardGo is dwForwardNHWC in Go. Output rows are independent and
// split across goroutines.
func dwForwardGo[T tensorx.Float](threads int, g *dwGeom, x, f, out []T) {
	n, grain := g.n*g.oh, dwRowGrainFor(g.ow*g.oc()*g.kh*g.kw)
	if serial(threads, n, grain) {
		dwForwardGoRows(g, x, f, out, 0, n)
		return
	}
	gc := *g // the closure's own copy: g may point into the caller's frame
	parallel.For(threads, n, grain, func(lo, hi int) { dwForwardGoRows(&gc, x, f, out, lo, hi) })
}

// dwForwardGoRows computes dwForwardGo's output rows [lo, hi) (row r of
// image r/oh).
func dwForwardGoRows[T tensorx.Float](g *dwGeom, x, f, out []T, lo, hi int) {
	oc := g.oc()
	rowOut, rowIn := g.ow*oc, g.w*g.c
	jlo, jhi := dwInterior(g.ow, g.w, g.kw, g.sw, g.dw, g.pl)
	for r := lo; r < hi; r++ {
		b, i := r/g.oh, r%g.oh
		orow := out[r*rowOut : (r+1)*rowOut]
		y0 := i*g.sh - g.pt
		plo, phi := dwRange(y0, g.dh, g.kh, g.h)
		if plo >= phi {
			clear(orow)
			continue
		}
		for p := plo; p < phi; p++ {
			yy := b*g.h + y0 + p*g.dh
			dwForwardRow(g, orow, x[yy*rowIn:(yy+1)*rowIn], f[p*g.kw*oc:(p+1)*g.kw*oc], p == plo, jlo, jhi)
		}
	}
}

// dwForwardRow applies one filter row frow [kw, c·m] to the input row
// xrow [w, c], storing (set) or adding into the output row orow [ow, c·m].
func dwForwardRow[T tensorx.Float](g *dwGeom, orow, xrow, frow []T, set bool, jlo, jhi int) {
	c, oc := g.c, g.oc()
	for j := 0; j < jlo; j++ {
		dwForwardPixel(g, orow[j*oc:(j+1)*oc], xrow, frow, j, set)
	}
	for j := jhi; j < g.ow; j++ {
		dwForwardPixel(g, orow[j*oc:(j+1)*oc], xrow, frow, j, set)
	}
	if jlo >= jhi {
		return
	}
	if g.m == 1 && g.kw == 3 && g.dw == 1 && (g.sw == 1 || g.sw == 2) {
		x0 := jlo*g.sw - g.pl
		dwRow3(orow[jlo*c:jhi*c], xrow[x0*c:], frow[:c], frow[c:2*c], frow[2*c:3*c], c, jhi-jlo, g.sw, set)
		return
	}
	for j := jlo; j < jhi; j++ {
		dwForwardPixel(g, orow[j*oc:(j+1)*oc], xrow, frow, j, set)
	}
}

// dwForwardPixel applies the taps of one filter row that fall inside the
// image to output pixel j (o, c·m values).
func dwForwardPixel[T tensorx.Float](g *dwGeom, o, xrow, frow []T, j int, set bool) {
	c, m, oc := g.c, g.m, g.oc()
	x0 := j*g.sw - g.pl
	qlo, qhi := dwRange(x0, g.dw, g.kw, g.w)
	if m != 1 {
		if qlo >= qhi {
			if set {
				clear(o)
			}
			return
		}
		for q := qlo; q < qhi; q++ {
			xp := (x0 + q*g.dw) * c
			dwExpand(o, xrow[xp:xp+c], frow[q*oc:(q+1)*oc], m, set && q == qlo)
		}
		return
	}
	t := dwTaps[T]{set: set}
	for q := qlo; q < qhi; q++ {
		xp := (x0 + q*g.dw) * c
		t.add(o, xrow[xp:xp+c], frow[q*c:(q+1)*c])
	}
	t.finish(o)
}

// ---------------------------------------------------------------------
// Input gradient, NHWC.

// dwBackpropInputNHWC computes dx [n, h, w, c] from f and dy [n, oh, ow,
// c·m]; every element of dx is written. float32 problems the assembly
// kernels cover take dwBackpropInputAsm.
func dwBackpropInputNHWC[T tensorx.Float](kc *registry.KernelCtx, g *dwGeom, f, dy, dx []T) error {
	if f32, ok := any(f).([]float32); ok && dwAsmFits(g) {
		return dwBackpropInputAsm(kc, g, f32, any(dy).([]float32), any(dx).([]float32))
	}
	dwBackpropInputGo(kc.NumThreads(), g, f, dy, dx)
	return nil
}

// dwBackpropInputGo is dwBackpropInputNHWC in Go. Each input row gathers
// from the output rows i with i·sh − pt + p·dh = y.
func dwBackpropInputGo[T tensorx.Float](threads int, g *dwGeom, f, dy, dx []T) {
	n, grain := g.n*g.h, dwRowGrainFor(g.w*g.c*g.m*g.kh*g.kw/max(1, g.sh*g.sw))
	if serial(threads, n, grain) {
		dwBackpropInputGoRows(g, f, dy, dx, 0, n)
		return
	}
	gc := *g // the closure's own copy: g may point into the caller's frame
	parallel.For(threads, n, grain, func(lo, hi int) { dwBackpropInputGoRows(&gc, f, dy, dx, lo, hi) })
}

// dwBackpropInputGoRows computes dwBackpropInputGo's input-gradient rows
// [lo, hi) (row r of image r/h).
func dwBackpropInputGoRows[T tensorx.Float](g *dwGeom, f, dy, dx []T, lo, hi int) {
	oc := g.oc()
	rowIn, rowOut := g.w*g.c, g.ow*oc
	for r := lo; r < hi; r++ {
		b, y := r/g.h, r%g.h
		dxrow := dx[r*rowIn : (r+1)*rowIn]
		set := true
		for p := 0; p < g.kh; p++ {
			t := y + g.pt - p*g.dh
			if t < 0 || t%g.sh != 0 {
				continue
			}
			i := t / g.sh
			if i >= g.oh {
				continue
			}
			yy := b*g.oh + i
			dwBackpropInputRow(g, dxrow, dy[yy*rowOut:(yy+1)*rowOut], f[p*g.kw*oc:(p+1)*g.kw*oc], set)
			set = false
		}
		if set {
			clear(dxrow)
		}
	}
}

// dwBackpropInputRow adds (or stores) into the input-gradient row dxrow
// [w, c] the contributions of the output-gradient row dyrow [ow, c·m]
// through the filter row frow [kw, c·m]: dx[x] += Σ dy[j]·f[q] over the
// taps with j·sw − pl + q·dw = x.
func dwBackpropInputRow[T tensorx.Float](g *dwGeom, dxrow, dyrow, frow []T, set bool) {
	c := g.c
	if g.m == 1 && g.dw == 1 && g.kw == 3 {
		f0, f1, f2 := frow[:c], frow[c:2*c], frow[2*c:3*c]
		switch g.sw {
		case 1:
			// dx[x] = Σ_q dy[x + pl − q]·f[q]: the forward 3-tap row with
			// the taps reversed, on the window starting at dy pixel
			// x + pl − 2. Interior: x + pl − 2 ≥ 0 and x + pl < ow.
			lo := min(g.w, max(0, 2-g.pl))
			hi := max(lo, min(g.w, g.ow-g.pl))
			dwBackpropInputPixels(g, dxrow, dyrow, frow, 0, lo, set)
			dwBackpropInputPixels(g, dxrow, dyrow, frow, hi, g.w, set)
			if lo < hi {
				dwRow3(dxrow[lo*c:hi*c], dyrow[(lo+g.pl-2)*c:], f2, f1, f0, c, hi-lo, 1, set)
			}
			return
		case 2:
			// With t = x + pl: dx at t = 2u is dy[u]·f0 + dy[u−1]·f2, at
			// t = 2u+1 it is dy[u]·f1. Interior pairs: 1 ≤ u < ow,
			// 2u − pl ≥ 0, 2u + 1 − pl < w.
			ulo := max(1, (g.pl+1)/2)
			uhi := ulo
			if last := g.w - 2 + g.pl; last >= 0 {
				uhi = max(ulo, min(g.ow, last/2+1))
			}
			if ulo >= uhi {
				break
			}
			x0, x1 := 2*ulo-g.pl, 2*uhi-g.pl
			dwBackpropInputPixels(g, dxrow, dyrow, frow, 0, x0, set)
			dwBackpropInputPixels(g, dxrow, dyrow, frow, x1, g.w, set)
			dwBackpropInputPairsS2(dxrow[x0*c:x1*c], dyrow[(ulo-1)*c:uhi*c], f0, f1, f2, c, set)
			return
		}
	}
	dwBackpropInputPixels(g, dxrow, dyrow, frow, 0, g.w, set)
}

// dwBackpropInputPairsS2 computes pairs of input-gradient pixels
// o = [o0 | o1]... of a 3-tap row at stride 2: o0 = y_{u}·f0 + y_{u−1}·f2,
// o1 = y_u·f1, for consecutive u; y starts at pixel u−1 of the first pair.
func dwBackpropInputPairsS2[T tensorx.Float](o, y, f0, f1, f2 []T, c int, set bool) {
	for u := 0; 2*u*c < len(o); u++ {
		o0 := o[2*u*c:][:c]
		n := len(o0)
		o1 := o[(2*u+1)*c:][:n]
		y0, y1 := y[u*c:][:n], y[(u+1)*c:][:n]
		g0, g1, g2 := f0[:n], f1[:n], f2[:n]
		if set {
			for k := range o0 {
				v := y1[k]
				o0[k] = v*g0[k] + y0[k]*g2[k]
				o1[k] = v * g1[k]
			}
			continue
		}
		for k := range o0 {
			v := y1[k]
			o0[k] += v*g0[k] + y0[k]*g2[k]
			o1[k] += v * g1[k]
		}
	}
}

// dwBackpropInputPixels handles the input-gradient pixels [x0, x1) of a
// row one by one: the taps q reaching pixel x read dy pixel
// j = (x + pl − q·dw)/sw when that division is exact and j is in range.
func dwBackpropInputPixels[T tensorx.Float](g *dwGeom, dxrow, dyrow, frow []T, x0, x1 int, set bool) {
	c, m, oc := g.c, g.m, g.oc()
	for x := x0; x < x1; x++ {
		o := dxrow[x*c : (x+1)*c]
		t0 := x + g.pl
		if m != 1 {
			s := set
			for q := 0; q < g.kw; q++ {
				t := t0 - q*g.dw
				if t < 0 {
					break
				}
				j := t / g.sw
				if t%g.sw != 0 || j >= g.ow {
					continue
				}
				dwReduce(o, dyrow[j*oc:(j+1)*oc], frow[q*oc:(q+1)*oc], m, s)
				s = false
			}
			if s {
				clear(o)
			}
			continue
		}
		tp := dwTaps[T]{set: set}
		for q := 0; q < g.kw; q++ {
			t := t0 - q*g.dw
			if t < 0 {
				break
			}
			j := t / g.sw
			if t%g.sw != 0 || j >= g.ow {
				continue
			}
			tp.add(o, dyrow[j*c:(j+1)*c], frow[q*c:(q+1)*c])
		}
		tp.finish(o)
	}
}

// ---------------------------------------------------------------------
// Filter gradient, NHWC.

// dwBackpropFilterNHWC computes df [kh, kw, c, m] = Σ over batch and
// output pixels of dy ⊗ the input pixel each tap read; every element of
// df is written. Output rows are cut into fixed chunks, each summed into
// its own float64 partial filter (row sums in T first); the partials are
// added in chunk order. float32 problems the assembly kernels cover take
// dwBackpropFilterAsm.
func dwBackpropFilterNHWC[T tensorx.Float](kc *registry.KernelCtx, g *dwGeom, x, dy, df []T) error {
	if x32, ok := any(x).([]float32); ok && dwAsmFits(g) {
		return dwBackpropFilterAsm(kc, g, x32, any(dy).([]float32), any(df).([]float32))
	}
	oc := g.oc()
	rowOut := g.ow * oc
	fsz, racc := g.kh*g.kw*oc, g.kw*oc
	rows := g.n * g.oh
	rpc := max(1, dwFilterChunkWork/max(1, rowOut*g.kh*g.kw))
	maxChunks := min(dwMaxFilterChunks, max(1, dwPartialElems/max(1, fsz)))
	if parallel.Chunks(rows, rpc) > maxChunks {
		rpc = (rows + maxChunks - 1) / maxChunks
	}
	nch := parallel.Chunks(rows, rpc)
	parts, err := registry.Scratch[float64](kc, nch*fsz, true)
	if err != nil {
		return err
	}
	accs, err := registry.Scratch[T](kc, nch*racc, false)
	if err != nil {
		return err
	}
	if threads := kc.NumThreads(); serial(threads, nch, 1) {
		for ci := range nch {
			dwFilterChunk(g, x, dy, parts[ci*fsz:(ci+1)*fsz], accs[ci*racc:(ci+1)*racc], ci*rpc, min((ci+1)*rpc, rows))
		}
	} else {
		gc := *g // the closure's own copy: g may point into the caller's frame
		parallel.ForChunks(threads, rows, rpc, func(ci, lo, hi int) {
			dwFilterChunk(&gc, x, dy, parts[ci*fsz:(ci+1)*fsz], accs[ci*racc:(ci+1)*racc], lo, hi)
		})
	}
	sum := parts[:fsz]
	for ci := 1; ci < nch; ci++ {
		part := parts[ci*fsz : (ci+1)*fsz]
		part = part[:len(sum)]
		for k, v := range part {
			sum[k] += v
		}
	}
	df = df[:len(sum)]
	for k, v := range sum {
		df[k] = T(v)
	}
	return nil
}

// dwFilterChunk sums the filter-gradient contributions of the output rows
// [lo, hi) into the float64 partial filter part, row by row through the
// accumulator acc [kw, c·m] (sums in T).
func dwFilterChunk[T tensorx.Float](g *dwGeom, x, dy []T, part []float64, acc []T, lo, hi int) {
	oc := g.oc()
	rowIn, rowOut := g.w*g.c, g.ow*oc
	racc := g.kw * oc
	jlo, jhi := dwInterior(g.ow, g.w, g.kw, g.sw, g.dw, g.pl)
	for r := lo; r < hi; r++ {
		b, i := r/g.oh, r%g.oh
		dyrow := dy[r*rowOut : (r+1)*rowOut]
		y0 := i*g.sh - g.pt
		plo, phi := dwRange(y0, g.dh, g.kh, g.h)
		for p := plo; p < phi; p++ {
			yy := b*g.h + y0 + p*g.dh
			clear(acc)
			dwFilterRow(g, acc, x[yy*rowIn:(yy+1)*rowIn], dyrow, jlo, jhi)
			pp := part[p*racc : (p+1)*racc]
			pp = pp[:len(acc)]
			for k, v := range acc {
				pp[k] += float64(v)
			}
		}
	}
}

// dwFilterRow adds into acc [kw, c·m] the products of the output-gradient
// row dyrow [ow, c·m] with the input row xrow [w, c] for each tap of one
// filter row.
func dwFilterRow[T tensorx.Float](g *dwGeom, acc, xrow, dyrow []T, jlo, jhi int) {
	c := g.c
	for j := 0; j < jlo; j++ {
		dwFilterPixel(g, acc, xrow, dyrow, j)
	}
	for j := jhi; j < g.ow; j++ {
		dwFilterPixel(g, acc, xrow, dyrow, j)
	}
	if jlo >= jhi {
		return
	}
	if g.m == 1 && g.kw == 3 && g.dw == 1 && (g.sw == 1 || g.sw == 2) {
		a0, a1, a2 := acc[:c], acc[c:2*c], acc[2*c:3*c]
		j := jlo
		if g.sw == 1 {
			for ; j+2 <= jhi; j += 2 {
				x0 := (j - g.pl) * c
				dwFilterPair3S1(a0, a1, a2, dyrow[j*c:(j+2)*c], xrow[x0:x0+4*c], c)
			}
		} else {
			for ; j+2 <= jhi; j += 2 {
				x0 := (2*j - g.pl) * c
				dwFilterPair3S2(a0, a1, a2, dyrow[j*c:(j+2)*c], xrow[x0:x0+5*c], c)
			}
		}
		if j < jhi {
			dwFilterPixel(g, acc, xrow, dyrow, j)
		}
		return
	}
	for j := jlo; j < jhi; j++ {
		dwFilterPixel(g, acc, xrow, dyrow, j)
	}
}

// dwFilterPixel adds the contributions of output pixel j to acc.
func dwFilterPixel[T tensorx.Float](g *dwGeom, acc, xrow, dyrow []T, j int) {
	c, m, oc := g.c, g.m, g.oc()
	x0 := j*g.sw - g.pl
	qlo, qhi := dwRange(x0, g.dw, g.kw, g.w)
	d := dyrow[j*oc : (j+1)*oc]
	for q := qlo; q < qhi; q++ {
		xp := (x0 + q*g.dw) * c
		a := acc[q*oc : (q+1)*oc]
		xs := xrow[xp : xp+c]
		if m == 1 {
			dwDot1(a, d, xs, false)
			continue
		}
		for ch, xv := range xs {
			ac := a[ch*m : (ch+1)*m]
			dc := d[ch*m : (ch+1)*m]
			dc = dc[:len(ac)]
			for k := range ac {
				ac[k] += dc[k] * xv
			}
		}
	}
}

// dwFilterPair3S1 adds two adjacent output pixels' contributions to the
// three tap accumulators a0..a2 (multiplier 1, stride 1): d holds the two
// pixels' gradients, x the four input pixels their windows cover.
func dwFilterPair3S1[T tensorx.Float](a0, a1, a2, d, x []T, c int) {
	n := len(a0)
	a1, a2 = a1[:n], a2[:n]
	d0, d1 := d[:n], d[c:][:n]
	x0, x1, x2, x3 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n]
	for k := range a0 {
		e0, e1 := d0[k], d1[k]
		v1, v2 := x1[k], x2[k]
		a0[k] += e0*x0[k] + e1*v1
		a1[k] += e0*v1 + e1*v2
		a2[k] += e0*v2 + e1*x3[k]
	}
}

// dwFilterPair3S2 is dwFilterPair3S1 at stride 2 (five input pixels).
func dwFilterPair3S2[T tensorx.Float](a0, a1, a2, d, x []T, c int) {
	n := len(a0)
	a1, a2 = a1[:n], a2[:n]
	d0, d1 := d[:n], d[c:][:n]
	x0, x1, x2, x3, x4 := x[:n], x[c:][:n], x[2*c:][:n], x[3*c:][:n], x[4*c:][:n]
	for k := range a0 {
		e0, e1 := d0[k], d1[k]
		v2 := x2[k]
		a0[k] += e0*x0[k] + e1*v2
		a1[k] += e0*x1[k] + e1*x3[k]
		a2[k] += e0*v2 + e1*x4[k]
	}
}

// ---------------------------------------------------------------------
// float32 assembly paths (internal/dwconv): multiplier 1, 3x3 filters,
// unit column dilation, column stride 1 or 2, at least 8 channels; any
// row stride, row dilation and padding.
//
// The kernels take three input rows and a [3][3][c] filter. A filter row
// whose input row falls into the padding reads a zeroed row with zeroed
// taps instead (0·0 adds nothing, whatever the filter holds), so every
// output row of the interior columns is one kernel call; the filters
// with zeroed rows are prepared once per call, one per pattern of valid
// rows. Border columns take only their valid taps (DotTaps, AxpyTaps).
// Channels past the last block of 8 are covered by a second call on
// slices shifted by c−8 (see package dwconv).

// dwUseAsm switches the assembly paths on (tests compare both paths).
var dwUseAsm = dwconv.Enabled

// dwAsmFits reports whether the assembly kernels cover problem g.
func dwAsmFits(g *dwGeom) bool {
	return dwUseAsm && g.m == 1 && g.kh == 3 && g.kw == 3 && g.dw == 1 &&
		(g.sw == 1 || g.sw == 2) && g.c >= dwconv.Block
}

// dwRowMask returns as bits the filter rows p < 3 whose input row
// start + p·d lies in [0, size).
func dwRowMask(start, d, size int) int {
	lo, hi := dwRange(start, d, 3, size)
	return (1<<hi - 1) &^ (1<<lo - 1)
}

// dwAsmTaps returns, for each row mask in need, the filter f [3][3][c]
// with the rows outside the mask zeroed and, with flip, each row's
// columns reversed (mask 7 without flip is f itself), and a zeroed row of
// rowLen elements if some mask leaves a row out.
func dwAsmTaps(kc *registry.KernelCtx, f []float32, c int, flip bool, need *[8]bool, rowLen int) (taps [8][]float32, zero []float32, err error) {
	fsz := 9 * c
	copies, partial := 0, false
	for mask, ok := range need {
		if !ok || mask == 0 {
			continue
		}
		if mask != 7 || flip {
			copies++
		}
		partial = partial || mask != 7
	}
	var buf []float32
	if copies > 0 {
		if buf, err = registry.Scratch[float32](kc, copies*fsz, false); err != nil {
			return taps, nil, err
		}
	}
	if partial {
		if zero, err = registry.Scratch[float32](kc, rowLen, true); err != nil {
			return taps, nil, err
		}
	}
	for mask, ok := range need {
		if !ok || mask == 0 {
			continue
		}
		if mask == 7 && !flip {
			taps[mask] = f[:fsz]
			continue
		}
		t := buf[:fsz]
		buf = buf[fsz:]
		for p := range 3 {
			for q := range 3 {
				dst := t[(3*p+q)*c : (3*p+q+1)*c]
				switch {
				case mask>>p&1 == 0:
					clear(dst)
				case flip:
					copy(dst, f[(3*p+2-q)*c:(3*p+3-q)*c])
				default:
					copy(dst, f[(3*p+q)*c:(3*p+q+1)*c])
				}
			}
		}
		taps[mask] = t
	}
	return taps, zero, nil
}

// dwAsmBlock returns the rows per block of the assembly paths' loops,
// which goroutines pull in order from a shared counter (parallel.Blocks:
// a goroutine that starts late, waking an idle CPU took ~70 µs on the
// project's VM, a fifth of a W6 op, or runs on a busy CPU takes fewer
// blocks): about 16 blocks per thread (small enough to balance a late
// start, large enough that few rows miss their prefetch at a block's
// start), at least grain.
func dwAsmBlock(rows, threads, grain int) int {
	return max(grain, rows/(16*max(1, threads)))
}

// dwAsmAhead is how many rows ahead the assembly paths prefetch (one row
// of W5 or W6 takes 1–5 µs, far more than a memory latency; 2 and 3
// measured no better).
const dwAsmAhead = 1

// dwAsmNewRows returns the input rows [lo, hi) (within [0, h)) that the
// output row after the one whose window starts at row y0 reads and that
// one does not (rows y0+s .. y0+s+2d past y0+2d).
func dwAsmNewRows(y0, s, d, h int) (lo, hi int) {
	return max(y0+2*d+1, y0+s, 0), min(h, y0+s+2*d+1)
}

// dwAsmRows fills rows with the input rows of the filter rows in mask
// (row p is src[base(p)·rowLen:], at most rowLen long) and zero for the
// others.
func dwAsmRows(rows *[3][]float32, mask int, src, zero []float32, rowLen int, base func(p int) int) {
	for p := range 3 {
		if mask>>p&1 == 0 {
			rows[p] = zero
			continue
		}
		y := base(p)
		rows[p] = src[y*rowLen : (y+1)*rowLen]
	}
}

// dwAsmShift returns rows each shifted by off elements.
func dwAsmShift(rows *[3][]float32, off int) *[3][]float32 {
	return &[3][]float32{rows[0][off:], rows[1][off:], rows[2][off:]}
}

// dwAsmHalves runs kern over the interior pixels (or pixel pairs) [0, n)
// of a row in two halves, the first prefetching pf[0], the second pf[1];
// rows too short for two blocks of the kernel run in one call, after
// prefetching both regions at once.
func dwAsmHalves(n, block int, pf *[2][]float32, kern func(j0, j1 int, pf []float32)) {
	if n <= 0 {
		return
	}
	if n < 2*block {
		dwconv.Prefetch(pf[0])
		dwconv.Prefetch(pf[1])
		kern(0, n, nil)
		return
	}
	kern(0, n/2, pf[0])
	kern(n/2, n, pf[1])
}

// dwAsmDot computes pixel o (c channels) as the sum of n products
// xs[i]·ts[i]; no taps stores zeros.
func dwAsmDot(o []float32, xs, ts *[9][]float32, n, c int) {
	if n == 0 {
		clear(o[:c])
		return
	}
	dwconv.DotTaps(o, xs[:n], ts[:n], c/dwconv.Block)
	if c%dwconv.Block != 0 {
		off := c - dwconv.Block
		for i := range n {
			xs[i], ts[i] = xs[i][off:], ts[i][off:]
		}
		dwconv.DotTaps(o[off:], xs[:n], ts[:n], 1)
	}
}

// dwForwardAsm is dwForwardNHWC for the problems of dwAsmFits.
func dwForwardAsm(kc *registry.KernelCtx, g *dwGeom, x, f, out []float32) error {
	var need [8]bool
	for i := range g.oh {
		need[dwRowMask(i*g.sh-g.pt, g.dh, g.h)] = true
	}
	a := dwAsmJob{g: *g, x: x, f: f, out: out}
	var err error
	if a.taps, a.zero, err = dwAsmTaps(kc, f, g.c, false, &need, g.w*g.c); err != nil {
		return err
	}
	a.jlo, a.jhi = dwInterior(g.ow, g.w, 3, g.sw, 1, g.pl)
	threads, n := kc.NumThreads(), g.n*g.oh
	grain := dwAsmBlock(n, threads, dwRowGrainFor(g.ow*g.c*9))
	if serial(threads, n, grain) {
		a.forwardRows(0, n)
	} else {
		parallel.Blocks(threads, n, grain, a.heap().forwardRows)
	}
	return nil
}

// dwAsmJob is the state the assembly paths share across their rows: the
// geometry, the operands (x the input, or out_backprop for the input
// gradient; f the filter; out the output, or the input gradient; dy
// out_backprop for the filter gradient), the
// filters with zeroed rows per row mask and the zeroed row (dwAsmTaps),
// the interior columns [jlo, jhi) and, for the input gradient at stride
// 2, the first interior pair ulo.
type dwAsmJob struct {
	g        dwGeom
	x, f     []float32
	out      []float32
	taps     [8][]float32
	zero     []float32
	jlo, jhi int
	ulo      int
	// The filter gradient: out_backprop, the chunks' float64 partial
	// filters and float32 accumulators (pk elements each), rpc output
	// rows per chunk, nseg interior segments per row.
	dy            []float32
	parts         []float64
	accs          []float32
	pk, rpc, nseg int
}

// heap returns a copy of a on the heap, for the loops that run on
// several goroutines (a itself stays in its caller's frame).
func (a *dwAsmJob) heap() *dwAsmJob {
	h := new(dwAsmJob)
	*h = *a
	return h
}

// forwardRows computes dwForwardAsm's output rows [lo, hi) (row r of image
// r/oh).
func (a *dwAsmJob) forwardRows(lo, hi int) {
	g, x, f, out, zero := &a.g, a.x, a.f, a.out, a.zero
	taps, jlo, jhi := &a.taps, a.jlo, a.jhi
	c := g.c
	rowIn, rowOut := g.w*c, g.ow*c
	nb, off := c/dwconv.Block, c-dwconv.Block
	tail := c%dwconv.Block != 0
	var rows [3][]float32
	var xs, ts [9][]float32
	for r := lo; r < hi; r++ {
		b, i := r/g.oh, r%g.oh
		orow := out[r*rowOut : (r+1)*rowOut]
		y0 := i*g.sh - g.pt
		mask := dwRowMask(y0, g.dh, g.h)
		if mask == 0 {
			clear(orow)
			continue
		}
		dwAsmRows(&rows, mask, x, zero, rowIn, func(p int) int { return b*g.h + y0 + p*g.dh })
		// The new input rows and the output row of the row dwAsmAhead
		// rows on, prefetched while this row runs.
		var pf [2][]float32
		if d := dwAsmAhead; r+d < hi {
			if i+d < g.oh {
				ylo, yhi := dwAsmNewRows(y0+(d-1)*g.sh, g.sh, g.dh, g.h)
				if ylo < yhi {
					pf[0] = x[(b*g.h+ylo)*rowIn : (b*g.h+yhi)*rowIn]
				}
			}
			pf[1] = out[(r+d)*rowOut : (r+d+1)*rowOut]
		}
		dwAsmHalves(jhi-jlo, 6/g.sw, &pf, func(j0, j1 int, pf []float32) {
			win := dwAsmShift(&rows, ((jlo+j0)*g.sw-g.pl)*c)
			o := orow[(jlo+j0)*c:]
			dwconv.Fwd3x3(o, win, taps[mask], j1-j0, nb, c, g.sw, pf)
			if tail {
				dwconv.Fwd3x3(o[off:], dwAsmShift(win, off), taps[mask][off:], j1-j0, 1, c, g.sw, nil)
			}
		})
		for j := 0; j < g.ow; j++ {
			if j == jlo && jlo < jhi {
				if j = jhi; j >= g.ow {
					break
				}
			}
			x0 := j*g.sw - g.pl
			qlo, qhi := dwRange(x0, 1, 3, g.w)
			n := 0
			for p := range 3 {
				if mask>>p&1 == 0 {
					continue
				}
				for q := qlo; q < qhi; q++ {
					xs[n], ts[n] = rows[p][(x0+q)*c:], f[(3*p+q)*c:]
					n++
				}
			}
			dwAsmDot(orow[j*c:], &xs, &ts, n, c)
		}
	}
}

// dwBackpropInputAsm is dwBackpropInputNHWC for the problems of
// dwAsmFits. Input-gradient row y gathers the out_backprop rows
// i = (y + pt − p·dh)/sh of the filter rows p where that division is
// exact and i is in range. Along a row, stride 1 is the forward kernel
// with each filter row reversed; stride 2 computes pixel pairs
// (BwdInput3x3S2).
func dwBackpropInputAsm(kc *registry.KernelCtx, g *dwGeom, f, dy, dx []float32) error {
	var need [8]bool
	for y := range g.h {
		need[dwInputRowMask(g, y)] = true
	}
	a := dwAsmJob{g: *g, x: dy, f: f, out: dx}
	var err error
	if a.taps, a.zero, err = dwAsmTaps(kc, f, g.c, g.sw == 1, &need, g.ow*g.c); err != nil {
		return err
	}
	// Interior input pixels [xlo, xhi): every tap's out_backprop pixel
	// exists. Stride 1: x + pl − 2 ≥ 0 and x + pl < ow. Stride 2: pairs
	// t = x + pl = 2u, 2u+1 with 1 ≤ u < ow, 2u − pl ≥ 0, 2u + 1 − pl < w.
	if g.sw == 1 {
		a.jlo = min(g.w, max(0, 2-g.pl))
		a.jhi = max(a.jlo, min(g.w, g.ow-g.pl))
	} else {
		a.ulo = max(1, (g.pl+1)/2)
		uhi := a.ulo
		if last := g.w - 2 + g.pl; last >= 0 {
			uhi = max(a.ulo, min(g.ow, last/2+1))
		}
		a.jlo, a.jhi = 2*a.ulo-g.pl, 2*uhi-g.pl
		if a.ulo >= uhi {
			a.jlo, a.jhi = 0, 0
		}
	}
	threads, n := kc.NumThreads(), g.n*g.h
	grain := dwAsmBlock(n, threads, dwRowGrainFor(g.w*g.c*9/g.sh/g.sw))
	if serial(threads, n, grain) {
		a.inputRows(0, n)
	} else {
		parallel.Blocks(threads, n, grain, a.heap().inputRows)
	}
	return nil
}

// dwInputRowMask returns as bits the filter rows p < 3 whose out_backprop
// row (y + pt − p·dh)/sh exists for input-gradient row y.
func dwInputRowMask(g *dwGeom, y int) int {
	mask := 0
	for p := range 3 {
		t := y + g.pt - p*g.dh
		if t >= 0 && t%g.sh == 0 && t/g.sh < g.oh {
			mask |= 1 << p
		}
	}
	return mask
}

// inputRows computes dwBackpropInputAsm's input-gradient rows [lo, hi)
// (row r of image r/h); a.x is out_backprop, a.out the input gradient and
// [a.jlo, a.jhi) the interior input pixels.
func (a *dwAsmJob) inputRows(lo, hi int) {
	g, dy, f, dx, zero := &a.g, a.x, a.f, a.out, a.zero
	taps, xlo, xhi, ulo := &a.taps, a.jlo, a.jhi, a.ulo
	c := g.c
	rowIn, rowOut := g.w*c, g.ow*c
	nb, off := c/dwconv.Block, c-dwconv.Block
	tail := c%dwconv.Block != 0
	var rows [3][]float32
	var xs, ts [9][]float32
	for r := lo; r < hi; r++ {
		b, y := r/g.h, r%g.h
		dxrow := dx[r*rowIn : (r+1)*rowIn]
		mask := dwInputRowMask(g, y)
		if mask == 0 {
			clear(dxrow)
			continue
		}
		dwAsmRows(&rows, mask, dy, zero, rowOut, func(p int) int { return b*g.oh + (y+g.pt-p*g.dh)/g.sh })
		// The new out_backprop row (filter row 0) and the input-gradient
		// row of the row dwAsmAhead rows on, prefetched while this row
		// runs.
		var pf [2][]float32
		if d := dwAsmAhead; r+d < hi {
			if t := y + d + g.pt; y+d < g.h && t%g.sh == 0 && t/g.sh < g.oh {
				i := b*g.oh + t/g.sh
				pf[0] = dy[i*rowOut : (i+1)*rowOut]
			}
			pf[1] = dx[(r+d)*rowIn : (r+d+1)*rowIn]
		}
		if g.sw == 1 {
			dwAsmHalves(xhi-xlo, 6, &pf, func(j0, j1 int, pf []float32) {
				win := dwAsmShift(&rows, (xlo+j0+g.pl-2)*c)
				o := dxrow[(xlo+j0)*c:]
				dwconv.Fwd3x3(o, win, taps[mask], j1-j0, nb, c, 1, pf)
				if tail {
					dwconv.Fwd3x3(o[off:], dwAsmShift(win, off), taps[mask][off:], j1-j0, 1, c, 1, nil)
				}
			})
		} else {
			dwAsmHalves((xhi-xlo)/2, 4, &pf, func(m0, m1 int, pf []float32) {
				win := dwAsmShift(&rows, (ulo-1+m0)*c)
				o := dxrow[(xlo+2*m0)*c:]
				dwconv.BwdInput3x3S2(o, win, taps[mask], m1-m0, nb, c, pf)
				if tail {
					dwconv.BwdInput3x3S2(o[off:], dwAsmShift(win, off), taps[mask][off:], m1-m0, 1, c, nil)
				}
			})
		}
		for xc := 0; xc < g.w; xc++ {
			if xc == xlo && xlo < xhi {
				if xc = xhi; xc >= g.w {
					break
				}
			}
			n := 0
			for p := range 3 {
				if mask>>p&1 == 0 {
					continue
				}
				for q := range 3 {
					t := xc + g.pl - q
					if t < 0 || t%g.sw != 0 || t/g.sw >= g.ow {
						continue
					}
					xs[n], ts[n] = rows[p][t/g.sw*c:], f[(3*p+q)*c:]
					n++
				}
			}
			dwAsmDot(dxrow[xc*c:], &xs, &ts, n, c)
		}
	}
}

// dwAsmFilterSpan bounds the input and out_backprop bytes one Filter3x3
// call spans: its channel blocks sweep them in turn, so they should stay
// in the L1 cache (the prefetches go to L2). On W5, 8–16 KiB (segments of
// 4–8 pixels) ran ~1.5× faster than 32–96 KiB; W6 (4 channel blocks) is
// less sensitive.
const dwAsmFilterSpan = 16 << 10

// dwBackpropFilterAsm is dwBackpropFilterNHWC for the problems of
// dwAsmFits, with the same fixed chunks of output rows. A chunk sums each
// row (all filter rows at once) in float32 into packed accumulators
// [block][9][8] (one block more for a channel tail), adds them to its
// float64 partial, and the partials are added in chunk order, so results
// do not depend on the thread count.
func dwBackpropFilterAsm(kc *registry.KernelCtx, g *dwGeom, x, dy, df []float32) error {
	c := g.c
	rowIn, rowOut := g.w*c, g.ow*c
	nbt := (c + dwconv.Block - 1) / dwconv.Block
	pk := 72 * nbt
	rows := g.n * g.oh
	rpc := max(1, dwFilterChunkWork/max(1, rowOut*9))
	maxChunks := min(dwMaxFilterChunks, max(1, dwPartialElems/pk))
	if parallel.Chunks(rows, rpc) > maxChunks {
		rpc = (rows + maxChunks - 1) / maxChunks
	}
	nch := parallel.Chunks(rows, rpc)
	parts, err := registry.Scratch[float64](kc, nch*pk, true)
	if err != nil {
		return err
	}
	accs, err := registry.Scratch[float32](kc, nch*pk, false)
	if err != nil {
		return err
	}
	var need [8]bool
	for i := range g.oh {
		need[dwRowMask(i*g.sh-g.pt, g.dh, g.h)] = true
	}
	var zero []float32
	for mask, ok := range need {
		if ok && mask != 0 && mask != 7 && zero == nil {
			if zero, err = registry.Scratch[float32](kc, rowIn, true); err != nil {
				return err
			}
		}
	}
	a := dwAsmJob{g: *g, x: x, dy: dy, zero: zero, parts: parts, accs: accs, pk: pk, rpc: rpc}
	a.jlo, a.jhi = dwInterior(g.ow, g.w, 3, g.sw, 1, g.pl)
	// Interior segments: at least two (half of them prefetch one of the
	// next row's two new regions, half the other), balanced.
	if n := a.jhi - a.jlo; n > 0 {
		seg := max(2, dwAsmFilterSpan/(4*c*(3*g.sw+1)))
		a.nseg = max(min(2, n/2), (n+seg-1)/seg)
	}
	if threads := kc.NumThreads(); serial(threads, nch, 1) {
		a.filterChunks(0, nch)
	} else {
		parallel.Blocks(threads, nch, 1, a.heap().filterChunks)
	}
	sum := parts[:pk]
	for ci := 1; ci < nch; ci++ {
		part := parts[ci*pk : (ci+1)*pk]
		for k, v := range part {
			sum[k] += v
		}
	}
	nb, off := c/dwconv.Block, c-dwconv.Block
	for k := range 9 {
		dk := df[k*c : (k+1)*c]
		for blk := range nb {
			for l := range dwconv.Block {
				dk[blk*dwconv.Block+l] = float32(sum[72*blk+8*k+l])
			}
		}
		for ch := nb * dwconv.Block; ch < c; ch++ {
			dk[ch] = float32(sum[72*nb+8*k+ch-off])
		}
	}
	return nil
}

// filterChunks sums dwBackpropFilterAsm's chunks [c0, c1) of output rows
// into their partial filters.
func (a *dwAsmJob) filterChunks(c0, c1 int) {
	rows := a.g.n * a.g.oh
	for ci := c0; ci < c1; ci++ {
		a.filterChunk(ci, ci*a.rpc, min((ci+1)*a.rpc, rows))
	}
}

// filterChunk sums the output rows [lo, hi) of chunk ci into its partial
// filter parts[ci·pk:(ci+1)·pk], row by row through its packed float32
// accumulator accs[ci·pk:(ci+1)·pk]; a.x is the input, a.dy out_backprop.
func (a *dwAsmJob) filterChunk(ci, lo, hi int) {
	g, x, dy, zero := &a.g, a.x, a.dy, a.zero
	pk, nseg, jlo, jhi := a.pk, a.nseg, a.jlo, a.jhi
	parts, accs := a.parts, a.accs
	c := g.c
	rowIn, rowOut := g.w*c, g.ow*c
	nb, off := c/dwconv.Block, c-dwconv.Block
	tail := c%dwconv.Block != 0
	nbt := nb
	if tail {
		nbt++
	}
	rows := g.n * g.oh
	part := parts[ci*pk : (ci+1)*pk]
	acc := accs[ci*pk : (ci+1)*pk]
	var xr [3][]float32
	var ks [9]int
	var xs [9][]float32
	for r := lo; r < hi; r++ {
		b, i := r/g.oh, r%g.oh
		dyrow := dy[r*rowOut : (r+1)*rowOut]
		y0 := i*g.sh - g.pt
		mask := dwRowMask(y0, g.dh, g.h)
		if mask == 0 {
			continue
		}
		dwAsmRows(&xr, mask, x, zero, rowIn, func(p int) int { return b*g.h + y0 + p*g.dh })
		// The out_backprop and the new input rows of the row dwAsmAhead
		// rows on, prefetched while this row runs (across chunks too:
		// chunks run in order on each goroutine).
		var pf [2][]float32
		if d := dwAsmAhead; r+d < rows {
			pf[0] = dy[(r+d)*rowOut : (r+d+1)*rowOut]
			if i+d < g.oh {
				ylo, yhi := dwAsmNewRows(y0+(d-1)*g.sh, g.sh, g.dh, g.h)
				if ylo < yhi {
					pf[1] = x[(b*g.h+ylo)*rowIn : (b*g.h+yhi)*rowIn]
				}
			}
		}
		if nseg < 2 {
			dwconv.Prefetch(pf[0])
			dwconv.Prefetch(pf[1])
		}
		clear(acc)
		for k := range nseg {
			j0, j1 := jlo+k*(jhi-jlo)/nseg, jlo+(k+1)*(jhi-jlo)/nseg
			// Segments [0, nseg/2) share the first region, the others the
			// second (measured: better than an even split of both on W6).
			var p []float32
			if h0 := nseg / 2; h0 > 0 {
				reg, piece, pieces := pf[0], k, h0
				if k >= h0 {
					reg, piece, pieces = pf[1], k-h0, nseg-h0
				}
				p = reg[piece*len(reg)/pieces : (piece+1)*len(reg)/pieces]
			}
			win := dwAsmShift(&xr, (j0*g.sw-g.pl)*c)
			d := dyrow[j0*c:]
			dwconv.Filter3x3(acc, d, win, j1-j0, nb, c, g.sw, p)
			if tail {
				dwconv.Filter3x3(acc[72*nb:], d[off:], dwAsmShift(win, off), j1-j0, 1, c, g.sw, nil)
			}
		}
		for j := 0; j < g.ow; j++ {
			if j == jlo && jlo < jhi {
				if j = jhi; j >= g.ow {
					break
				}
			}
			x0 := j*g.sw - g.pl
			qlo, qhi := dwRange(x0, 1, 3, g.w)
			n := 0
			for p := range 3 {
				if mask>>p&1 == 0 {
					continue
				}
				for q := qlo; q < qhi; q++ {
					ks[n], xs[n] = 3*p+q, xr[p][(x0+q)*c:]
					n++
				}
			}
			if n == 0 {
				continue
			}
			d := dyrow[j*c:]
			dwconv.AxpyTaps(acc, ks[:n], xs[:n], d, nb)
			if tail {
				for k := range n {
					xs[k] = xs[k][off:]
				}
				dwconv.AxpyTaps(acc[72*nb:], ks[:n], xs[:n], d[off:], 1)
			}
		}
		if mask != 7 {
			// The zeroed rows' sums are not part of the gradient.
			for blk := range nbt {
				for p := range 3 {
					if mask>>p&1 == 0 {
						clear(acc[72*blk+24*p : 72*blk+24*p+24])
					}
				}
			}
		}
		dwconv.AddF64(part, acc)
	}
}
