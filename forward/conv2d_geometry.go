package forward

import (
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/registry"
)

// Validation shared by the three ops of the Conv2D family: Conv2D here,
// Conv2DBackpropInput and Conv2DBackpropFilter in package backward. It
// reproduces TensorFlow's checks and messages, with the op name as the
// message label; the loops are in internal/conv.

// Conv2DGeometry is the validated geometry of one Conv2D-family problem:
// the NHWC problem internal/conv computes, whatever the layout of the
// op's tensors, and that layout.
type Conv2DGeometry struct {
	conv.Geom
	layout convLayout
}

// NCHW reports whether the op's tensors are NCHW (data_format "NCHW");
// the kernels in internal/conv then run on NHWC copies.
func (g *Conv2DGeometry) NCHW() bool { return g.layout.nchw() }

func (g *Conv2DGeometry) outShape() [4]int { return g.layout.dims(g.N, g.OH, g.OW, g.O) }

// Conv2DWindow holds the validated window attrs of a Conv2D-family op
// (ParseConv2DWindow): data_format, strides, dilations and padding.
type Conv2DWindow struct{ win convWindow }

// ParseConv2DWindow validates the attrs (Conv2DAttrs) of the Conv2D
// family's op op, with TensorFlow's checks and messages;
// batchDepthKind is the error kind of a stride or dilation other than 1
// in the batch or depth dimension (ErrUnimplemented for Conv2D and
// Conv2DBackpropInput, ErrInvalidArgument for Conv2DBackpropFilter).
func ParseConv2DWindow(op string, attrs any, batchDepthKind error) (Conv2DWindow, error) {
	a, ok := attrs.(Conv2DAttrs)
	if !ok {
		return Conv2DWindow{}, registry.Errorf(registry.ErrInvalidArgument, "%s: attrs must be forward.Conv2DAttrs, got %T", op, attrs)
	}
	w, err := convParseWindow(op, a.Strides, a.Dilations, a.Padding, a.ExplicitPaddings, a.DataFormat, batchDepthKind)
	return Conv2DWindow{w}, err
}

// Axes returns the positions of the batch, height, width and depth axes
// of a 4-D image tensor in the window's data format.
func (w Conv2DWindow) Axes() (n, h, wd, c int) {
	l := w.win.layout
	return l.n, l.h, l.w, l.c
}

// CheckDims rejects the dimensions of a 4-D image shape s (in the
// window's data format) that TensorFlow cannot index with 32-bit ints;
// what names the tensor ("Input rows too large").
func (w Conv2DWindow) CheckDims(op, what string, s []int) error {
	l := w.win.layout
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
func conv2DForwardGeom(op string, w Conv2DWindow, xs, fs []int) (Conv2DGeometry, error) {
	win := w.win
	g := Conv2DGeometry{layout: win.layout}
	g.SH, g.SW, g.DH, g.DW = win.sh, win.sw, win.dh, win.dw
	if len(xs) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "input", "%s: convolution input must be 4-dimensional: %v", op, xs)
	}
	if len(fs) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: convolution filter must be 4-dimensional: %v", op, fs)
	}
	l := win.layout
	for i := 0; i < 4; i++ {
		if err := convCheckFits(op, "filter", fs[i]); err != nil {
			return g, err
		}
	}
	if err := w.CheckDims(op, "Input", xs); err != nil {
		return g, err
	}
	g.N, g.H, g.W, g.C = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.KH, g.KW, g.CF, g.O = fs[0], fs[1], fs[2], fs[3]
	if g.CF <= 0 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: filter depth must be stricly positive, got %d", op, g.CF)
	}
	if g.C%g.CF != 0 {
		return g, registry.NamedInputErrorf(registry.ErrInvalidArgument, op, "filter", "%s: input depth must be evenly divisible by filter depth: %d vs %d", op, g.C, g.CF)
	}
	if err := conv2DGroups(op, &g); err != nil {
		return g, err
	}
	return g, conv2DSpatial(op, win, &g)
}

// conv2DGroups sets the group count and checks that the output depth
// divides into the groups.
func conv2DGroups(op string, g *Conv2DGeometry) error {
	g.G = g.C / g.CF
	if g.G > 0 {
		if g.O%g.G != 0 {
			return registry.Errorf(registry.ErrInvalidArgument, "%s: output depth must be evenly divisible by number of groups: %d vs %d", op, g.O, g.G)
		}
		g.OG = g.O / g.G
	}
	return nil
}

// conv2DSpatial computes the output size and paddings of both spatial axes.
func conv2DSpatial(op string, win convWindow, g *Conv2DGeometry) error {
	var err error
	if g.OH, g.PT, g.PB, err = convOutputSize(op, g.H, g.KH, g.DH, g.SH, win.padding, win.pt, win.pb); err != nil {
		return err
	}
	g.OW, g.PL, g.PR, err = convOutputSize(op, g.W, g.KW, g.DW, g.SW, win.padding, win.pl, win.pr)
	return err
}

// BackpropGeometry reconciles the input, filter and out_backprop shapes
// xs, fs and dys (in the window's data format) of a backprop op of the
// Conv2D family and computes its geometry (TensorFlow's
// ConvBackpropComputeDimensionsV2, with the op name as the message label).
func (w Conv2DWindow) BackpropGeometry(op string, xs, fs, dys []int) (Conv2DGeometry, error) {
	win := w.win
	g := Conv2DGeometry{layout: win.layout}
	g.SH, g.SW, g.DH, g.DW = win.sh, win.sw, win.dh, win.dw
	if len(xs) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "input", "%s: input must be 4-dimensional, got shape %v", op, slices.Clone(xs))
	}
	if len(fs) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: filter must be 4-dimensional, got shape %v", op, slices.Clone(fs))
	}
	if len(dys) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: out_backprop must be 4-dimensional, got shape %v", op, dys)
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
	g.N, g.H, g.W, g.C = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.KH, g.KW, g.CF, g.O = fs[0], fs[1], fs[2], fs[3]
	if g.N != dys[l.n] {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: input and out_backprop must have the same batch size. Input batch: %d, outbackprop batch: %d", op, g.N, dys[l.n])
	}
	if g.CF <= 0 {
		return g, registry.Errorf(registry.ErrInvalidArgument, "%s: filter depth must be strictly greated than zero, got %d", op, g.CF)
	}
	if g.C%g.CF != 0 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: input depth must be evenly divisible by filter depth: %d vs %d", op, g.C, g.CF)
	}
	if g.O != dys[l.c] {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: filter and out_backprop must have the same out_depth: %d vs %d", op, g.O, dys[l.c])
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
	}{{l.h, dys[l.h], g.OH, g.H, g.KH, g.SH, g.DH}, {l.w, dys[l.w], g.OW, g.W, g.KW, g.SW, g.DW}} {
		if d.got != d.want {
			return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: Size of out_backprop doesn't match computed: actual = %d, computed = %d spatial_dim: %d input: %d filter: %d output: %d stride: %d dilation: %d",
				op, d.got, d.want, d.axis, d.in, d.k, d.got, d.s, d.dil)
		}
	}
	return g, nil
}

// Conv2DShapeArg reads a 1-D int32/int64 shape argument of a Conv2D-family
// op (input_sizes, filter_sizes), appending its values to dst, with
// TensorFlow's messages for a non-vector or another dtype. With a dst of
// enough capacity (a stack array) it does not allocate.
func Conv2DShapeArg(dst []int, op, name string, t *tensor.Dense) ([]int, error) {
	return convAppendShapeArg(dst, op, name, t)
}

// Conv2DCheckFits rejects a dimension v that TensorFlow cannot index with
// a 32-bit int ("filter too large").
func Conv2DCheckFits(op, what string, v int) error { return convCheckFits(op, what, v) }

// Conv2DOutput allocates an uninitialised output of a Conv2D-family op,
// reporting a shape too large to hold as an error naming the op.
func Conv2DOutput(kc *registry.KernelCtx, op string, dt tensor.Dtype, shape []int) (*tensor.Dense, error) {
	if _, err := convNumel(op, shape); err != nil {
		return nil, err
	}
	return kc.Output(dt, shape...)
}
