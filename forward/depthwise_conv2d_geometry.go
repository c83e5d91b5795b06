package forward

import (
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/dwconv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Geometry of the DepthwiseConv2dNative family, shared by the forward op
// (this package) and its two backprops (package backward): the window
// attrs, the shape checks with TensorFlow's messages, and the problem's
// dwconv.Geom.

// DepthwiseConv2dWindow is the validated window of an op of the
// DepthwiseConv2dNative family: its layout, strides, dilations and
// padding.
type DepthwiseConv2dWindow struct{ win convWindow }

// ParseDepthwiseConv2dWindow validates the window attrs of op, an op of
// the DepthwiseConv2dNative family whose attrs are DepthwiseConv2dAttrs,
// with TensorFlow's checks and messages.
func ParseDepthwiseConv2dWindow(op string, attrs any) (DepthwiseConv2dWindow, error) {
	win, err := dwWindow(op, attrs)
	return DepthwiseConv2dWindow{win}, err
}

// BackpropGeometry reconciles the input, filter and out_backprop shapes
// (in the window's layout; the filter [KH, KW, C, M]) of op,
// DepthwiseConv2dNativeBackpropInput or
// DepthwiseConv2dNativeBackpropFilter, with the checks and messages of
// TensorFlow's depthwise backprop kernels (in their order), and returns
// the problem's geometry.
func (w DepthwiseConv2dWindow) BackpropGeometry(op string, xs, fs, dys []int) (dwconv.Geom, error) {
	return dwBackpropGeom(op, w.win, xs, fs, dys)
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
func dwSpatial(op string, win convWindow, g *dwconv.Geom) error {
	var err error
	if g.OH, g.PT, g.PB, err = convOutputSize(op, g.H, g.KH, g.DH, g.SH, win.padding, win.pt, win.pb); err != nil {
		return err
	}
	g.OW, g.PL, g.PR, err = convOutputSize(op, g.W, g.KW, g.DW, g.SW, win.padding, win.pl, win.pr)
	return err
}

// dwNewGeom starts the geometry of a problem with window win.
func dwNewGeom(win convWindow) dwconv.Geom {
	return dwconv.Geom{NCHW: win.layout.nchw(), SH: win.sh, SW: win.sw, DH: win.dh, DW: win.dw}
}

// dwForwardGeom checks DepthwiseConv2dNative's input and filter shapes (in
// the order of TensorFlow's kernel) and computes the output geometry.
func dwForwardGeom(op string, win convWindow, xs, fs []int) (dwconv.Geom, error) {
	g := dwNewGeom(win)
	if len(xs) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "input", "%s: input must be 4-dimensional, got shape %v", op, xs)
	}
	if len(fs) != 4 {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: filter must be 4-dimensional: %v", op, fs)
	}
	l := win.layout
	g.N, g.H, g.W, g.C = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.KH, g.KW, g.M = fs[0], fs[1], fs[3]
	if g.C != fs[2] {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: input and filter must have the same depth: %d vs %d", op, g.C, fs[2])
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
func dwBackpropGeom(op string, win convWindow, xs, fs, dys []int) (dwconv.Geom, error) {
	g := dwNewGeom(win)
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
	if xs[l.n] != dys[l.n] {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: input and out_backprop must have the same batch size: %d vs %d", op, xs[l.n], dys[l.n])
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
	g.N, g.H, g.W, g.C = xs[l.n], xs[l.h], xs[l.w], xs[l.c]
	g.KH, g.KW, g.M = fs[0], fs[1], fs[3]
	if g.C != fs[2] {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "filter", "%s: input and filter must have the same in_depth: %d vs %d", op, g.C, fs[2])
	}
	if g.M*g.C != dys[l.c] {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: depth_multiplier * in_depth not equal to out_depth: %d * %d != %d", op, g.M, g.C, dys[l.c])
	}
	if err := dwSpatial(op, win, &g); err != nil {
		return g, err
	}
	if dys[l.h] != g.OH {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: Number of rows of out_backprop doesn't match computed: actual = %d, computed = %d", op, dys[l.h], g.OH)
	}
	if dys[l.w] != g.OW {
		return g, registry.NamedInputErrorf(registry.ErrShape, op, "out_backprop", "%s: Number of cols of out_backprop doesn't match computed: actual = %d, computed = %d", op, dys[l.w], g.OW)
	}
	return g, nil
}

// DepthwiseConv2dOutput allocates an uninitialised output of a
// DepthwiseConv2dNative-family op, reporting a shape too large to hold as an
// error naming the op.
func DepthwiseConv2dOutput(kc *registry.KernelCtx, op string, dt tensor.Dtype, shape []int) (*tensor.Dense, error) {
	if _, err := tensorx.Numel(shape); err != nil {
		return nil, registry.Errorf(registry.ErrShape, "%s: output shape %v: %v", op, slices.Clone(shape), err)
	}
	return kc.Output(dt, shape...)
}

// DepthwiseConv2dWork allocates the scratch memory ws of an internal/dwconv
// call of the DepthwiseConv2dNative family's kernels from kc: the
// layout copies, the partial filters (zeroed), the accumulators, the
// filter copies and the zeroed row, in that order.
func DepthwiseConv2dWork[T tensorx.Float](kc *registry.KernelCtx, ws dwconv.WorkSize) (dwconv.Work[T], error) {
	var w dwconv.Work[T]
	var err error
	for i, n := range ws.Layout {
		if n > 0 {
			if w.Layout[i], err = registry.Scratch[T](kc, n, false); err != nil {
				return w, err
			}
		}
	}
	if ws.Parts > 0 {
		if w.Parts, err = registry.Scratch[float64](kc, ws.Parts, true); err != nil {
			return w, err
		}
	}
	if ws.Accs > 0 {
		if w.Accs, err = registry.Scratch[T](kc, ws.Accs, false); err != nil {
			return w, err
		}
	}
	if ws.Taps > 0 {
		if w.Taps, err = registry.Scratch[T](kc, ws.Taps, false); err != nil {
			return w, err
		}
	}
	if ws.Zero > 0 {
		if w.Zero, err = registry.Scratch[T](kc, ws.Zero, true); err != nil {
			return w, err
		}
	}
	return w, nil
}
