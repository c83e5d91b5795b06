package forward

import (
	"slices"
	"sync"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/gemm"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Conv2D family: Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter with
// TensorFlow's names, argument order, attrs and validation
// (spec/conv2d.md). The kernels implement the device-independent semantics
// (what TensorFlow's GPU kernels accept): both data formats, dilations and
// grouped convolution (input depth a multiple of the filter's in_channels)
// in all three ops, and SAME/VALID/EXPLICIT padding. TensorFlow's CPU-only
// refusals (NCHW, dilated or grouped backprops) are not reproduced.
//
// Computation: NHWC im2col + GEMM (internal/gemm). An im2col row holds the
// receptive field of one output position in filter order [kh, kw, cf], so
// the filter [KH, KW, Cf, O] is the GEMM's right-hand matrix as stored;
// group g uses input channels g·Cf.. and filter/output columns g·Og.. .
// The im2col matrix is never materialised: it is a gemm.Rows whose rows
// are gathered from the input, one segment of Cf channels per filter tap
// (conv2DRows), which the GEMM reads in place (forward) or gathers
// straight into its packed panels (filter gradient).
// 1x1 stride-1 unpadded convolutions and "filter covers the whole input"
// convolutions multiply the input directly.
// Conv2DBackpropInput with unit strides is a forward convolution of dy with
// the flipped, transposed filter; with larger strides it computes
// dy·filterᵀ into im2col rows and scatters them back (col2im).
// Conv2DBackpropFilter computes dfᵀ = dyᵀ·im2col(x) (both big operands
// then packed without transposition). NCHW tensors are transposed to NHWC
// scratch and back. Empty tensors follow TensorFlow's kernels: an empty
// output is returned as is, and an output that only padding (or an empty
// out_backprop / input) reaches is all zeros.
//
// The forward GEMMs split their rows over the threads (internal/gemm).
// The input gradient with strides and the filter gradient process output
// positions in chunks whose bounds depend only on the shapes, which the
// goroutines take one at a time; the filter gradient sums per-chunk
// partials (up to convFilterRows positions each, dyᵀ read in place by the
// GEMM's kernels) in chunk order in float64. Results are bit-identical
// for any thread count.
//
// Steady-state calls allocate nothing on one thread (with the tape's
// recycling allocator): shape arguments are read into stack arrays,
// results go through kc.Results, the im2col offset maps come from a free
// list, and the closures handed to internal/parallel are built only on
// the multi-threaded paths (conv2d_alloc_test.go).

// Conv2DAttrs are the attributes of Conv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter (TensorFlow's names and defaults).
type Conv2DAttrs struct {
	// Strides are the window strides, 4 values in data_format order; the
	// batch and depth entries must be 1. Required.
	Strides []int `tf:"strides"`
	// UseCudnnOnGPU is accepted for compatibility and has no effect
	// (default true).
	UseCudnnOnGPU *bool `tf:"use_cudnn_on_gpu" default:"true"`
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
	Dilations []int `tf:"dilations" default:"[1,1,1,1]"`
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name: "Conv2D",
		Doc: "2-D cross-correlation of input [N,H,W,C] (or NCHW) with filter [KH,KW,Cf,O]; " +
			"grouped when C is a multiple of Cf",
		Inputs:  args("input", "filter"),
		Outputs: args("output"),
		Attrs:   Conv2DAttrs{},
		Kernels: floatKernels(conv2DKernel[float32], conv2DKernel[float64]),
		Samples: conv2DSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "Conv2DBackpropInput",
		Doc: "gradient of Conv2D with respect to its input: input_sizes (int32/int64, 4 values or [H, W]), " +
			"filter, out_backprop",
		Inputs:    args("input_sizes", "filter", "out_backprop"),
		Outputs:   args("output"),
		Attrs:     Conv2DAttrs{},
		TypeInput: 1,
		Kernels:   floatKernels(conv2DBackpropInputKernel[float32], conv2DBackpropInputKernel[float64]),
		Samples:   conv2DBackpropInputSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "Conv2DBackpropFilter",
		Doc: "gradient of Conv2D with respect to its filter: input, filter_sizes (int32/int64, 4 values), " +
			"out_backprop",
		Inputs:  args("input", "filter_sizes", "out_backprop"),
		Outputs: args("output"),
		Attrs:   Conv2DAttrs{},
		Kernels: floatKernels(conv2DBackpropFilterKernel[float32], conv2DBackpropFilterKernel[float64]),
		Samples: conv2DBackpropFilterSamples,
	})
}

// convGemm is the matrix multiply behind the conv kernels (row-major,
// C = alpha*op(A)*op(B) + beta*C); see internal/gemm.
func convGemm[T tensorx.Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int, threads int) {
	gemm.Gemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads)
}

// conv2DGeom is the validated geometry of one Conv2D problem, in NHWC
// names whatever the layout.
type conv2DGeom struct {
	n, h, w, c     int // input
	kh, kw, cf, o  int // filter
	g, og          int // groups (c / cf) and output channels per group
	oh, ow         int // output spatial size
	sh, sw, dh, dw int // strides, dilations
	pt, pb, pl, pr int // paddings: top, bottom, left, right
	layout         convLayout
}

// kcol is the length of an im2col row (and the filter's rows as a matrix).
func (g *conv2DGeom) kcol() int { return g.kh * g.kw * g.cf }

func (g *conv2DGeom) inShape() [4]int  { return g.layout.dims(g.n, g.h, g.w, g.c) }
func (g *conv2DGeom) outShape() [4]int { return g.layout.dims(g.n, g.oh, g.ow, g.o) }

// direct reports whether the input can serve as the im2col matrix as it
// is, and its row stride: 1x1 filters with stride 1 and no padding (one row
// per pixel), or, without groups, a filter covering the whole unpadded
// input with a 1x1 output (one row per image).
func (g *conv2DGeom) direct() (lda int, ok bool) {
	if g.pt != 0 || g.pb != 0 || g.pl != 0 || g.pr != 0 {
		return 0, false
	}
	if g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 {
		return g.c, true
	}
	if g.g == 1 && g.kh == g.h && g.kw == g.w && g.dh == 1 && g.dw == 1 && g.oh == 1 && g.ow == 1 {
		return g.h * g.w * g.c, true
	}
	return 0, false
}

// conv2DWindow validates the attrs of any op of the family.
func conv2DWindow(op string, attrs any, batchDepthKind error) (convWindow, error) {
	a, ok := attrs.(Conv2DAttrs)
	if !ok {
		return convWindow{}, registry.Errorf(registry.ErrInvalidArgument, "%s: attrs must be forward.Conv2DAttrs, got %T", op, attrs)
	}
	return convParseWindow(op, a.Strides, a.Dilations, a.Padding, a.ExplicitPaddings, a.DataFormat, batchDepthKind)
}

// conv2DCheckDims rejects dimensions TensorFlow cannot index with 32-bit
// ints.
func conv2DCheckDims(op string, l convLayout, what string, s []int) error {
	for i, v := range s {
		if v > convMaxDim {
			names := [4]string{}
			names[l.n], names[l.h], names[l.w], names[l.c] = "batch", "rows", "cols", "depth"
			return convCheckFits(op, what+" "+names[i], v)
		}
	}
	return nil
}

// conv2DForwardGeom checks Conv2D's input and filter shapes against the
// window and computes the output geometry (TensorFlow's
// ComputeConv2DDimension, plus the group check of its shape inference).
func conv2DForwardGeom(op string, win convWindow, xs, fs []int) (conv2DGeom, error) {
	g := conv2DGeom{layout: win.layout, sh: win.sh, sw: win.sw, dh: win.dh, dw: win.dw}
	if len(xs) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: convolution input must be 4-dimensional: %v", op, xs)
	}
	if len(fs) != 4 {
		return g, registry.Errorf(registry.ErrShape, "%s: convolution filter must be 4-dimensional: %v", op, fs)
	}
	l := win.layout
	for i := 0; i < 4; i++ {
		if err := convCheckFits(op, "filter", fs[i]); err != nil {
			return g, err
		}
	}
	if err := conv2DCheckDims(op, l, "Input", xs); err != nil {
		return g, err
	}
	g.n, g.h, g.w, g.c = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.kh, g.kw, g.cf, g.o = fs[0], fs[1], fs[2], fs[3]
	if g.cf <= 0 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: filter depth must be stricly positive, got %d", op, g.cf)
	}
	if g.c%g.cf != 0 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: input depth must be evenly divisible by filter depth: %d vs %d", op, g.c, g.cf)
	}
	if err := conv2DGroups(op, &g); err != nil {
		return g, err
	}
	return g, conv2DSpatial(op, win, &g)
}

// conv2DGroups sets the group count and checks that the output depth
// divides into the groups.
func conv2DGroups(op string, g *conv2DGeom) error {
	g.g = g.c / g.cf
	if g.g > 0 {
		if g.o%g.g != 0 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: output depth must be evenly divisible by number of groups: %d vs %d", op, g.o, g.g)
		}
		g.og = g.o / g.g
	}
	return nil
}

// conv2DSpatial computes the output size and paddings of both spatial axes.
func conv2DSpatial(op string, win convWindow, g *conv2DGeom) error {
	var err error
	if g.oh, g.pt, g.pb, err = convOutputSize(op, g.h, g.kh, g.dh, g.sh, win.padding, win.pt, win.pb); err != nil {
		return err
	}
	g.ow, g.pl, g.pr, err = convOutputSize(op, g.w, g.kw, g.dw, g.sw, win.padding, win.pl, win.pr)
	return err
}

// conv2DBackpropGeom reconciles the input, filter and out_backprop shapes
// of a backprop op (TensorFlow's ConvBackpropComputeDimensionsV2, with the
// op name as the message label).
func conv2DBackpropGeom(op string, win convWindow, xs, fs, dys []int) (conv2DGeom, error) {
	g := conv2DGeom{layout: win.layout, sh: win.sh, sw: win.sw, dh: win.dh, dw: win.dw}
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
	for i := range 4 {
		if err := convCheckFits(op, "input", xs[i]); err != nil {
			return g, err
		}
	}
	for i := range 4 {
		if err := convCheckFits(op, "filter", fs[i]); err != nil {
			return g, err
		}
	}
	for i := range 4 {
		if err := convCheckFits(op, "out_backprop", dys[i]); err != nil {
			return g, err
		}
	}
	g.n, g.h, g.w, g.c = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.kh, g.kw, g.cf, g.o = fs[0], fs[1], fs[2], fs[3]
	if g.n != dys[l.n] {
		return g, registry.Errorf(registry.ErrShape, "%s: input and out_backprop must have the same batch size. Input batch: %d, outbackprop batch: %d", op, g.n, dys[l.n])
	}
	if g.cf <= 0 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: filter depth must be strictly greated than zero, got %d", op, g.cf)
	}
	if g.c%g.cf != 0 {
		return g, registry.Errorf(registry.ErrShape, "%s: input depth must be evenly divisible by filter depth: %d vs %d", op, g.c, g.cf)
	}
	if g.o != dys[l.c] {
		return g, registry.Errorf(registry.ErrShape, "%s: filter and out_backprop must have the same out_depth: %d vs %d", op, g.o, dys[l.c])
	}
	if err := conv2DGroups(op, &g); err != nil {
		return g, err
	}
	if err := conv2DSpatial(op, win, &g); err != nil {
		return g, err
	}
	for _, d := range [...]struct {
		axis             int
		got, want, in, k int
		s, dil           int
	}{{l.h, dys[l.h], g.oh, g.h, g.kh, g.sh, g.dh}, {l.w, dys[l.w], g.ow, g.w, g.kw, g.sw, g.dw}} {
		if d.got != d.want {
			return g, registry.Errorf(registry.ErrShape, "%s: Size of out_backprop doesn't match computed: actual = %d, computed = %d spatial_dim: %d input: %d filter: %d output: %d stride: %d dilation: %d",
				op, d.got, d.want, d.axis, d.in, d.k, d.got, d.s, d.dil)
		}
	}
	return g, nil
}

// ---------------------------------------------------------------------
// Kernels.

func conv2DKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "Conv2D"
	win, err := conv2DWindow(op, attrs, registry.ErrUnimplemented)
	if err != nil {
		return nil, err
	}
	x, f := in[0], in[1]
	if f.Dtype() != x.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: filter has dtype %v, expected %v like input", op, f.Dtype(), x.Dtype())
	}
	g, err := conv2DForwardGeom(op, win, x.Shape(), f.Shape())
	if err != nil {
		return nil, err
	}
	osz := g.outShape()
	out, err := conv2DOutput(kc, op, x.Dtype(), osz[:])
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 {
		// Non-empty output from an empty input: padding only.
		clear(od)
		return kc.Results(out), nil
	}
	if tensorx.Len(f) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: filter must not have zero elements (i.e. all dimensions must be non-zero), got filter shape %v", op, f.Shape())
	}
	if err := conv2DForward(kc, &g, data[T](x), data[T](f), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

func conv2DBackpropInputKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "Conv2DBackpropInput"
	win, err := conv2DWindow(op, attrs, registry.ErrUnimplemented)
	if err != nil {
		return nil, err
	}
	sizes, f, dy := in[0], in[1], in[2]
	if dy.Dtype() != f.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: out_backprop has dtype %v, expected %v like filter", op, dy.Dtype(), f.Dtype())
	}
	if len(dy.Shape()) != 4 {
		// TensorFlow's message names the wrong input (sic).
		return nil, registry.Errorf(registry.ErrShape, "%s: input_sizes must be 4-dimensional, got: %d (out_backprop has shape %v and must be 4-D)", op, len(dy.Shape()), dy.Shape())
	}
	if len(f.Shape()) != 4 {
		return nil, registry.Errorf(registry.ErrShape, "%s: filter must be 4-dimensional, got shape %v", op, f.Shape())
	}
	var vbuf, xbuf [4]int
	vals, err := convAppendShapeArg(vbuf[:0], op, "input_sizes", sizes)
	if err != nil {
		return nil, err
	}
	l := win.layout
	var xs []int
	switch len(vals) {
	case 4:
		for _, v := range vals {
			if v < 0 {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d must be >= 0 (input_sizes=%v)", op, v, slices.Clone(vals))
			}
		}
		xs = vals
	case 2:
		if vals[0] < 0 || vals[1] < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: elements of input_sizes must be >= 0, not %dx%d", op, vals[0], vals[1])
		}
		xbuf = l.dims(dy.Shape()[l.n], vals[0], vals[1], f.Shape()[2])
		xs = xbuf[:]
	default:
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s requires input_sizes to contain 4 values or 2 values, but got: %d", op, len(vals))
	}
	if err := conv2DCheckDims(op, l, "Input", xs); err != nil {
		return nil, err
	}
	out, err := conv2DOutput(kc, op, f.Dtype(), xs)
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(dy) == 0 {
		clear(od)
		return kc.Results(out), nil
	}
	g, err := conv2DBackpropGeom(op, win, xs, f.Shape(), dy.Shape())
	if err != nil {
		return nil, err
	}
	if err := conv2DBackpropInput(kc, &g, data[T](f), data[T](dy), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

func conv2DBackpropFilterKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "Conv2DBackpropFilter"
	win, err := conv2DWindow(op, attrs, registry.ErrInvalidArgument)
	if err != nil {
		return nil, err
	}
	x, sizes, dy := in[0], in[1], in[2]
	if dy.Dtype() != x.Dtype() {
		return nil, registry.Errorf(registry.ErrDtype, "%s: out_backprop has dtype %v, expected %v like input", op, dy.Dtype(), x.Dtype())
	}
	if len(x.Shape()) != 4 {
		return nil, registry.Errorf(registry.ErrShape, "%s: input must be 4-dimensional, got shape %v", op, x.Shape())
	}
	if len(dy.Shape()) != 4 {
		return nil, registry.Errorf(registry.ErrShape, "%s: out_backprop must be 4-dimensional, got shape %v", op, dy.Shape())
	}
	var fbuf [4]int
	fs, err := convAppendShapeArg(fbuf[:0], op, "filter_sizes", sizes)
	if err != nil {
		return nil, err
	}
	for _, v := range fs {
		if v < 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: Dimension %d must be >= 0 (filter_sizes=%v)", op, v, slices.Clone(fs))
		}
	}
	if len(fs) != 4 {
		return nil, registry.Errorf(registry.ErrShape, "%s: filter must be 4-dimensional, but filter_sizes has %d values (%v)", op, len(fs), slices.Clone(fs))
	}
	for _, v := range fs {
		if err := convCheckFits(op, "filter", v); err != nil {
			return nil, err
		}
	}
	out, err := conv2DOutput(kc, op, x.Dtype(), fs)
	if err != nil {
		return nil, err
	}
	od := data[T](out)
	if len(od) == 0 {
		return kc.Results(out), nil
	}
	if tensorx.Len(x) == 0 {
		clear(od)
		return kc.Results(out), nil
	}
	g, err := conv2DBackpropGeom(op, win, x.Shape(), fs, dy.Shape())
	if err != nil {
		return nil, err
	}
	if err := conv2DBackpropFilter(kc, &g, data[T](x), data[T](dy), od); err != nil {
		return nil, err
	}
	return kc.Results(out), nil
}

// conv2DOutput allocates an output, reporting a shape too large to hold as
// an error naming the op.
func conv2DOutput(kc *registry.KernelCtx, op string, dt tensor.Dtype, shape []int) (*tensor.Dense, error) {
	if _, err := convNumel(op, shape); err != nil {
		return nil, err
	}
	return kc.Output(dt, shape...)
}

// ---------------------------------------------------------------------
// Layout wrappers: NCHW problems run in NHWC scratch.

func conv2DForward[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, x, f, out []T) error {
	if !g.layout.nchw() {
		return conv2DForwardNHWC(kc, g, x, f, out)
	}
	return viaNHWC(kc, g.n, x, [3]int{g.c, g.h, g.w}, out, [3]int{g.o, g.oh, g.ow}, func(xt, ot []T) error {
		return conv2DForwardNHWC(kc, g, xt, f, ot)
	})
}

func conv2DBackpropInput[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, f, dy, dx []T) error {
	if !g.layout.nchw() {
		return conv2DBackpropInputNHWC(kc, g, f, dy, dx)
	}
	return viaNHWC(kc, g.n, dy, [3]int{g.o, g.oh, g.ow}, dx, [3]int{g.c, g.h, g.w}, func(dyt, dxt []T) error {
		return conv2DBackpropInputNHWC(kc, g, f, dyt, dxt)
	})
}

// viaNHWC runs an NHWC computation for an NCHW problem: in (NCHW, [n,
// inCHW...]) is transposed into scratch, run fills an NHWC scratch output,
// which is transposed back into out (NCHW, [n, outCHW...]).
func viaNHWC[T tensorx.Float](kc *registry.KernelCtx, n int, in []T, inCHW [3]int, out []T, outCHW [3]int, run func(in, out []T) error) error {
	it, err := registry.Scratch[T](kc, len(in), false)
	if err != nil {
		return err
	}
	ot, err := registry.Scratch[T](kc, len(out), false)
	if err != nil {
		return err
	}
	convToNHWC(it, in, n, inCHW[0], inCHW[1], inCHW[2])
	if err := run(it, ot); err != nil {
		return err
	}
	convToNCHW(out, ot, n, outCHW[0], outCHW[1], outCHW[2])
	return nil
}

func conv2DBackpropFilter[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, x, dy, df []T) error {
	if !g.layout.nchw() {
		return conv2DBackpropFilterNHWC(kc, g, x, dy, df)
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
	convToNHWC(dyt, dy, g.n, g.o, g.oh, g.ow)
	return conv2DBackpropFilterNHWC(kc, g, xt, dyt, df)
}

// ---------------------------------------------------------------------
// Chunking and workers.

const (
	// convChunkElems bounds one im2col buffer of the strided input
	// gradient (elements): 1 MiB of float32, 2 MiB of float64.
	convChunkElems = 1 << 18
	// convMaxWorkers bounds the goroutines (and so the im2col buffers) of
	// one kernel call.
	convMaxWorkers = 8
	// convMaxPartials bounds the chunks reduced per round (each round is
	// one parallel loop over its chunks and one over the sum).
	convMaxPartials = 64
	// convSumGrain is the least number of filter-gradient elements per
	// goroutine when the partials are added.
	convSumGrain = 1 << 14
	// convFilterSplit: several filter-gradient chunks are made a multiple
	// of this many, so that they divide evenly among 1, 2 or 4 threads.
	convFilterSplit = 4
)

// Filter-gradient chunking; variables rather than constants so that tests
// can shrink them.
var (
	// convFilterRows is the most output positions of one filter-gradient
	// chunk: its GEMM sums them in the element type (in the GEMM's k
	// blocks, each gathered once from the input), and the chunks' partial
	// gradients are then added in float64.
	convFilterRows = 4096
	// convPartialElems bounds the per-chunk partial filter gradients kept
	// at once by Conv2DBackpropFilter (chunks beyond it are reduced in
	// further rounds).
	convPartialElems = 1 << 20
)

// convChunks cuts the output positions [0, n·p) of n images of p
// positions each into chunks of at most rows positions. A chunk holds
// either whole images or part of one image, so the chunks of one image
// can be visited in order by one worker (col2im accumulates into the
// image).
type convChunks struct {
	p, total int
	rows     int  // positions per chunk
	whole    bool // chunks of whole images
	perImg   int  // chunks per image when !whole
	count    int
}

// convPlanChunks plans the chunks for im2col rows of kcol elements; it
// depends only on the shapes. p must be positive.
func convPlanChunks(n, p, kcol int) convChunks {
	rows := max(1, convChunkElems/max(1, kcol))
	c := convChunks{p: p, total: n * p}
	if rows >= p {
		imgs := max(1, min(n, rows/p))
		c.whole, c.rows, c.count = true, imgs*p, (n+imgs-1)/imgs
	} else {
		c.rows, c.perImg = rows, (p+rows-1)/rows
		c.count = n * c.perImg
	}
	return c
}

// bounds returns the position range of chunk i.
func (c *convChunks) bounds(i int) (r0, r1 int) {
	if c.whole {
		r0 = i * c.rows
		return r0, min(r0+c.rows, c.total)
	}
	b, k := i/c.perImg, i%c.perImg
	r0 = b*c.p + k*c.rows
	return r0, min(r0+c.rows, (b+1)*c.p)
}

// convFilterChunks returns how many chunks of near-equal size the total
// output positions of a filter gradient are cut into (chunk c covers
// [total·c/count, total·(c+1)/count)); it depends only on the shapes.
func convFilterChunks(total int) int {
	count := (total + convFilterRows - 1) / convFilterRows
	if count > 1 {
		count = min(total, (count+convFilterSplit-1)/convFilterSplit*convFilterSplit)
	}
	return count
}

// convWorkers returns how many workers to use for items, and how many
// threads each worker's GEMMs get.
func convWorkers(threads, items int) (nw, gemmThreads int) {
	nw = max(1, min(threads, items, convMaxWorkers))
	return nw, max(1, threads/nw)
}

// convRange returns the filter taps [lo, hi) of one axis whose input
// position start + t·d lies in [0, size).
func convRange(start, d, k, size int) (lo, hi int) {
	if start < 0 {
		lo = min(k, (-start+d-1)/d)
	}
	if last := size - 1 - start; last >= 0 {
		hi = min(k, last/d+1)
	}
	return lo, max(lo, hi)
}

// ---------------------------------------------------------------------
// im2col / col2im.

// conv2DRows describes the im2col matrix of group grp, from output
// position r0 on, as GEMM rows gathered from x through m (getConvRowsMap
// of g): row r is the receptive field of position r0+r in filter order
// [kh, kw, cf], one segment of cf channels per filter tap, zero where the
// tap falls in the padding. The segments are read from x[grp·cf:], so one
// map serves every group and row range.
func conv2DRows[T tensorx.Float](g *conv2DGeom, x []T, grp, r0 int, m *convRowsMap) gemm.Rows[T] {
	return gemm.Rows[T]{Data: x[grp*g.cf:], Seg: g.cf, First: r0, Map: m}
}

// convRowsMap computes the segment offsets of im2col rows (conv2DRows):
// it is the gemm.Offsetter of their gemm.Rows. Maps are pooled
// (getConvRowsMap), so that a call hands the GEMM an Offsetter without
// allocating one.
type convRowsMap struct {
	h, kh, kw, dh      int
	sh, sw, pt, oh, ow int
	img, rowLen, c     int   // image and input row strides; depth
	xoff               []int // per kw tap: input offset of output column 0's pixel (may be outside)
	jlo, jhi           []int // per kw tap: output columns whose pixel lies within the input's width
}

// convMaps is the free list of convRowsMap.
var convMaps struct {
	sync.Mutex
	free []*convRowsMap
}

// getConvRowsMap returns a map for g's im2col rows, from the free list
// when it has one; putConvRowsMap gives it back.
func getConvRowsMap(g *conv2DGeom) *convRowsMap {
	convMaps.Lock()
	var m *convRowsMap
	if n := len(convMaps.free); n > 0 {
		m = convMaps.free[n-1]
		convMaps.free[n-1] = nil
		convMaps.free = convMaps.free[:n-1]
	}
	convMaps.Unlock()
	if m == nil {
		m = new(convRowsMap)
	}
	*m = convRowsMap{
		h: g.h, kh: g.kh, kw: g.kw, dh: g.dh,
		sh: g.sh, sw: g.sw, pt: g.pt, oh: g.oh, ow: g.ow,
		img: g.h * g.w * g.c, rowLen: g.w * g.c, c: g.c,
		xoff: resizeInts(m.xoff, g.kw), jlo: resizeInts(m.jlo, g.kw), jhi: resizeInts(m.jhi, g.kw),
	}
	for q := range g.kw {
		// Column j reads input column x = j·sw + x0 with x0 = q·dw - pl;
		// 0 <= x < w for j in [jlo, jhi).
		x0 := q*g.dw - g.pl
		m.xoff[q] = x0 * g.c
		lo, hi := convRange(x0, g.sw, g.ow, g.w)
		m.jlo[q], m.jhi[q] = lo, hi
	}
	return m
}

// putConvRowsMap returns m to the free list (which keeps a few maps).
func putConvRowsMap(m *convRowsMap) {
	convMaps.Lock()
	if len(convMaps.free) < 2*convMaxWorkers {
		convMaps.free = append(convMaps.free, m)
	}
	convMaps.Unlock()
}

// convFillInts sets every element of s to v.
func convFillInts(s []int, v int) {
	for i := range s {
		s[i] = v
	}
}

// resizeInts returns s with length n, reusing its storage when it can.
func resizeInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// Offsets writes the offsets of positions [pos, pos+n) to dst[s*ld+r], one
// tap and one output row at a time: -1 for the columns whose pixel falls
// in the padding, an arithmetic sequence for the others.
func (m *convRowsMap) Offsets(pos, n int, dst []int, ld int) {
	p := m.oh * m.ow
	b, rem := pos/p, pos%p
	i, j := rem/m.ow, rem%m.ow
	step := m.sw * m.c
	for r := 0; r < n; {
		l := min(m.ow-j, n-r) // positions left in this output row
		for a := 0; a < m.kh; a++ {
			y := i*m.sh - m.pt + a*m.dh
			for q := 0; q < m.kw; q++ {
				row := dst[(a*m.kw+q)*ld+r : (a*m.kw+q)*ld+r+l]
				if y < 0 || y >= m.h {
					convFillInts(row, -1)
					continue
				}
				lo := min(max(j, m.jlo[q]), j+l) - j
				hi := max(min(j+l, m.jhi[q])-j, lo)
				convFillInts(row[:lo], -1)
				v := b*m.img + y*m.rowLen + m.xoff[q] + (j+lo)*step
				mid := row[lo:hi]
				for t := range mid {
					mid[t] = v + t*step
				}
				convFillInts(row[hi:], -1)
			}
		}
		r += l
		j += l
		if j == m.ow {
			j = 0
			if i++; i == m.oh {
				i = 0
				b++
			}
		}
	}
}

// conv2DCol2im adds the im2col rows of positions [r0, r1) for group grp
// back into dx (the adjoint of conv2DIm2col).
func conv2DCol2im[T tensorx.Float](g *conv2DGeom, col []T, grp, r0, r1 int, dx []T) {
	kcol, p := g.kcol(), g.oh*g.ow
	img, rowLen, seg := g.h*g.w*g.c, g.w*g.c, g.kw*g.cf
	whole := g.dw == 1 && g.cf == g.c
	b, rem := r0/p, r0%p
	i, j := rem/g.ow, rem%g.ow
	for r := r0; r < r1; r++ {
		row := col[(r-r0)*kcol : (r-r0+1)*kcol]
		xb := dx[b*img : (b+1)*img]
		y0, x0 := i*g.sh-g.pt, j*g.sw-g.pl
		qlo, qhi := convRange(x0, g.dw, g.kw, g.w)
		for kh := 0; kh < g.kh; kh++ {
			yy := y0 + kh*g.dh
			if yy < 0 || yy >= g.h {
				continue
			}
			src := row[kh*seg : (kh+1)*seg]
			base := yy*rowLen + grp*g.cf
			if whole {
				if qhi > qlo {
					s := src[qlo*g.c : qhi*g.c]
					d := xb[base+(x0+qlo)*g.c:]
					d = d[:len(s)]
					for t, v := range s {
						d[t] += v
					}
				}
				continue
			}
			for q := qlo; q < qhi; q++ {
				s := src[q*g.cf : (q+1)*g.cf]
				o := base + (x0+q*g.dw)*g.c
				d := xb[o : o+g.cf]
				for t, v := range s {
					d[t] += v
				}
			}
		}
		if j++; j == g.ow {
			j = 0
			if i++; i == g.oh {
				i = 0
				b++
			}
		}
	}
}

// ---------------------------------------------------------------------
// NHWC compute. Callers guarantee non-empty input, filter and output.

// conv2DForwardNHWC computes out = conv(x, f); every element of out is
// written. The im2col matrix is never materialised: the GEMM reads its
// rows from x through conv2DRows.
func conv2DForwardNHWC[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, x, f, out []T) error {
	kcol, threads := g.kcol(), kc.NumThreads()
	rows := g.n * g.oh * g.ow
	if lda, ok := g.direct(); ok {
		for grp := 0; grp < g.g; grp++ {
			convGemm(false, false, rows, g.og, kcol, 1, x[grp*g.cf:], lda, f[grp*g.og:], g.o, 0, out[grp*g.og:], g.o, threads)
		}
		return nil
	}
	m := getConvRowsMap(g)
	defer putConvRowsMap(m)
	for grp := 0; grp < g.g; grp++ {
		gemm.GemmRowsA(rows, g.og, kcol, conv2DRows(g, x, grp, 0, m), false, f[grp*g.og:], g.o, 0, out[grp*g.og:], g.o, threads)
	}
	return nil
}

// conv2DBackpropInputNHWC computes dx from the filter and dy; every
// element of dx is written.
func conv2DBackpropInputNHWC[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, f, dy, dx []T) error {
	kcol, threads := g.kcol(), kc.NumThreads()
	if lda, ok := g.direct(); ok {
		// Every input element receives exactly one product row.
		m := g.n * g.oh * g.ow
		for grp := 0; grp < g.g; grp++ {
			convGemm(false, true, m, kcol, g.og, 1, dy[grp*g.og:], g.o, f[grp*g.og:], g.o, 0, dx[grp*g.cf:], lda, threads)
		}
		return nil
	}
	if kcol == 0 {
		clear(dx)
		return nil
	}
	if g.sh == 1 && g.sw == 1 {
		return conv2DBackpropInputStride1(kc, g, f, dy, dx)
	}
	clear(dx)
	ch := convPlanChunks(g.n, g.oh*g.ow, kcol)
	// Work items: whole-image chunks, or whole images of several chunks,
	// so that each image is accumulated by one worker in chunk order.
	items, per := ch.count, 1
	if !ch.whole {
		items, per = g.n, ch.perImg
	}
	nw, gt := convWorkers(threads, items)
	buf, err := registry.Scratch[T](kc, nw*ch.rows*kcol, false)
	if err != nil {
		return err
	}
	job := convCol2imJob[T]{g: *g, f: f, dy: dy, dx: dx, buf: buf, ch: ch, per: per, gt: gt}
	if nw <= 1 {
		for i := range items {
			job.item(0, i)
		}
		return nil
	}
	j := job // only this copy moves to the heap, with the closure
	parallel.Each(nw, items, func(w, i int) { j.item(w, i) })
	return nil
}

// convCol2imJob is the strided input gradient's work: per item, the
// im2col rows dy·filterᵀ of its chunks, scattered back into dx.
type convCol2imJob[T tensorx.Float] struct {
	g         conv2DGeom // a copy: a pointer would move the caller's to the heap
	f, dy, dx []T
	buf       []T // one im2col buffer per worker
	ch        convChunks
	per, gt   int
}

// item processes item i's chunks with worker w's buffer.
func (j *convCol2imJob[T]) item(w, i int) {
	g, kcol := &j.g, j.g.kcol()
	col := j.buf[w*j.ch.rows*kcol : (w+1)*j.ch.rows*kcol]
	for c := i * j.per; c < (i+1)*j.per; c++ {
		r0, r1 := j.ch.bounds(c)
		for grp := 0; grp < g.g; grp++ {
			convGemm(false, true, r1-r0, kcol, g.og, 1, j.dy[r0*g.o+grp*g.og:], g.o, j.f[grp*g.og:], g.o, 0, col, kcol, j.gt)
			conv2DCol2im(g, col, grp, r0, r1, j.dx)
		}
	}
}

// conv2DBackpropInputStride1 computes dx for unit strides as a forward
// convolution of dy with the flipped filter f'[p, q, o, k] =
// f[KH-1-p, KW-1-q, k, o] (per group: Og input and Cf output channels),
// the same dilations, and paddings E-1-P on each side (negative when the
// forward padding exceeds the effective filter: a crop, which im2col
// handles like padding). Its GEMM runs over KH·KW·Og instead of Og and no
// col2im scatter is needed; every element of dx is written.
func conv2DBackpropInputStride1[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, f, dy, dx []T) error {
	eh, ew := (g.kh-1)*g.dh+1, (g.kw-1)*g.dw+1
	t := conv2DGeom{
		n: g.n, h: g.oh, w: g.ow, c: g.o,
		kh: g.kh, kw: g.kw, cf: g.og, o: g.c,
		g: g.g, og: g.cf,
		oh: g.h, ow: g.w,
		sh: 1, sw: 1, dh: g.dh, dw: g.dw,
		pt: eh - 1 - g.pt, pb: eh - 1 - g.pb, pl: ew - 1 - g.pl, pr: ew - 1 - g.pr,
		layout: convNHWC,
	}
	ft, err := registry.Scratch[T](kc, len(f), false)
	if err != nil {
		return err
	}
	for p := 0; p < g.kh; p++ {
		for q := 0; q < g.kw; q++ {
			src := f[((g.kh-1-p)*g.kw+(g.kw-1-q))*g.cf*g.o:][:g.cf*g.o]
			dst := ft[(p*g.kw+q)*g.og*g.c:][:g.og*g.c]
			for grp := 0; grp < g.g; grp++ {
				for k := 0; k < g.cf; k++ {
					s := src[k*g.o+grp*g.og:][:g.og]
					c := grp*g.cf + k
					for o, v := range s {
						// Row o: group grp's input channel o of the transposed
						// problem; column c: its output channel.
						dst[o*g.c+c] = v
					}
				}
			}
		}
	}
	return conv2DForwardNHWC(kc, &t, dy, ft, dx)
}

// conv2DBackpropFilterNHWC computes df = Σ im2col(x)ᵀ·dy; every element
// of df is written. The output positions are cut into chunks that depend
// only on the shapes (convFilterChunks); each chunk gives a partial
// dfᵀ = dyᵀ·im2col(x) (the im2col rows gathered from x straight into the
// GEMM's packed panels, dyᵀ packed once per k block), and the partials
// are added in chunk order in float64, so the result does not depend on
// the thread count.
func conv2DBackpropFilterNHWC[T tensorx.Float](kc *registry.KernelCtx, g *conv2DGeom, x, dy, df []T) error {
	kcol, threads := g.kcol(), kc.NumThreads()
	fsz := kcol * g.o
	total := g.n * g.oh * g.ow
	if total == 0 {
		clear(df)
		return nil
	}
	count := convFilterChunks(total)
	round := max(1, min(convMaxPartials, convPartialElems/max(1, fsz), count))
	acc, err := registry.Scratch[float64](kc, fsz, true)
	if err != nil {
		return err
	}
	parts, err := registry.Scratch[T](kc, round*fsz, false)
	if err != nil {
		return err
	}
	job := convFilterJob[T]{g: *g, x: x, dy: dy, parts: parts, total: total, count: count}
	if lda, ok := g.direct(); ok {
		job.lda = lda
	} else {
		job.m = getConvRowsMap(g)
		defer putConvRowsMap(job.m)
	}
	for s := 0; s < count; s += round {
		e := min(s+round, count)
		nw, gt := convWorkers(threads, e-s)
		job.first, job.gt = s, gt
		if nw <= 1 {
			for c := s; c < e; c++ {
				job.chunk(0, c-s)
			}
		} else {
			j := job // only this copy moves to the heap, with the closure
			parallel.Each(nw, e-s, func(w, i int) { j.chunk(w, i) })
		}
		// acc holds dfᵀ (row o: output channel o's kcol taps), like the
		// partials; each element adds its partials in chunk order.
		if n := e - s; serial(threads, fsz, convSumGrain) {
			convAddPartials(acc, parts, fsz, n, 0, fsz)
		} else {
			parallel.For(threads, fsz, convSumGrain, func(lo, hi int) {
				convAddPartials(acc, parts, fsz, n, lo, hi)
			})
		}
	}
	for o := 0; o < g.o; o++ {
		for k, v := range acc[o*kcol : (o+1)*kcol] {
			df[k*g.o+o] = T(v)
		}
	}
	return nil
}

// convFilterJob is the filter gradient's work: the partial dfᵀ of each
// chunk of output positions.
type convFilterJob[T tensorx.Float] struct {
	g            conv2DGeom // a copy: a pointer would move the caller's to the heap
	x, dy, parts []T
	total, count int
	m            *convRowsMap // im2col rows, or nil for a direct input
	lda          int          // the direct input's row stride
	first, gt    int          // the round's first chunk; threads per GEMM
}

// chunk computes chunk first+i's partial into parts[i].
func (j *convFilterJob[T]) chunk(_, i int) {
	g := &j.g
	kcol := g.kcol()
	fsz := kcol * g.o
	c := j.first + i
	r0, r1 := j.total*c/j.count, j.total*(c+1)/j.count
	// The partial holds dfᵀ: the groups' og×kcol blocks in order.
	part := j.parts[i*fsz : (i+1)*fsz]
	for grp := 0; grp < g.g; grp++ {
		pg := part[grp*g.og*kcol : (grp+1)*g.og*kcol]
		dyg := j.dy[r0*g.o+grp*g.og:]
		if j.m == nil {
			convGemm(true, false, g.og, kcol, r1-r0, 1, dyg, g.o, j.x[r0*j.lda+grp*g.cf:], j.lda, 0, pg, kcol, j.gt)
			continue
		}
		gemm.GemmRowsB(true, g.og, kcol, r1-r0, dyg, g.o, conv2DRows(g, j.x, grp, r0, j.m), 0, pg, kcol, j.gt)
	}
}

// convAddPartials adds elements [lo, hi) of n partials of fsz elements,
// in order, to acc.
func convAddPartials[T tensorx.Float](acc []float64, parts []T, fsz, n, lo, hi int) {
	a := acc[lo:hi]
	for c := range n {
		for i, v := range parts[c*fsz+lo : c*fsz+hi] {
			a[i] += float64(v)
		}
	}
}
