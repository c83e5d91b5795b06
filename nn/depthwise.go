package nn

import (
	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// depthwiseAttrs returns the DepthwiseConv2dNative attrs of the geometry.
func (g convGeom) depthwiseAttrs() forward.DepthwiseConv2dAttrs {
	return forward.DepthwiseConv2dAttrs{Strides: g.strides, Padding: g.padding, ExplicitPaddings: g.pads,
		DataFormat: g.format, Dilations: g.dilations}
}

// depthGeometry validates the options of the depthwise layers and returns
// the geometry and the depth multiplier.
func (o ConvOpts) depthGeometry(layer string, kernel int) (convGeom, int, error) {
	if o.Groups != 0 && o.Groups != 1 {
		return convGeom{}, 0, configError("%s: Groups is for Conv2D (got %d)", layer, o.Groups)
	}
	m := o.DepthMultiplier
	if m == 0 {
		m = 1
	}
	if m < 0 {
		return convGeom{}, 0, configError("%s: DepthMultiplier must be positive, got %d", layer, o.DepthMultiplier)
	}
	g, err := o.geometry(layer, kernel)
	return g, m, err
}

// DepthwiseConv2D is a depthwise 2-D convolution layer (TensorFlow's
// DepthwiseConv2dNative and BiasAdd): each input channel c of x [N, H, W,
// in] (or NCHW) is convolved with its own DepthMultiplier filters, output
// channel c·M + m holding channel c filtered by Weight[:, :, c, m].
type DepthwiseConv2D struct {
	// Weight is the filter, [KH, KW, in, M], named "weight".
	Weight *autodiff.Param
	// Bias is the bias, [in·M], named "bias"; nil with NoBias.
	Bias *autodiff.Param
	// op and biasAdd are DepthwiseConv2dNative and BiasAdd with the
	// layer's attrs.
	conv registry.Attrs[forward.DepthwiseConv2dAttrs]
	bias registry.Attrs[forward.BiasAddAttrs]
	err  error
}

// NewDepthwiseConv2D returns a depthwise convolution of in channels with a
// square kernel of the given size and opts.DepthMultiplier (default 1)
// filters per channel.
func NewDepthwiseConv2D(in, kernel int, opts ConvOpts) *DepthwiseConv2D {
	d := &DepthwiseConv2D{}
	if d.err = d.init(in, kernel, opts); d.err != nil {
		d.Weight, d.Bias = nil, nil
	}
	return d
}

func (d *DepthwiseConv2D) init(in, kernel int, o ConvOpts) error {
	const layer = "nn.NewDepthwiseConv2D"
	if in <= 0 {
		return configError("%s: the channel count must be positive, got %d", layer, in)
	}
	g, m, err := o.depthGeometry(layer, kernel)
	if err != nil {
		return err
	}
	d.conv = registry.NewAttrs(g.depthwiseAttrs())
	d.bias = registry.NewAttrs(forward.BiasAddAttrs{DataFormat: g.format})
	if d.Weight, err = newParam("weight", g.dtype, []int{g.kh, g.kw, in, m}, orInit(o.KernelInit, GlorotUniform), o.Rand); err != nil {
		return wrapf(err, layer)
	}
	if !o.NoBias {
		if d.Bias, err = newParam("bias", g.dtype, []int{in * m}, orInit(o.BiasInit, Zeros), o.Rand); err != nil {
			return wrapf(err, layer)
		}
	}
	return nil
}

// Err returns the layer's configuration error, or nil.
func (d *DepthwiseConv2D) Err() error { return d.err }

// Forward returns DepthwiseConv2dNative(x, Weight) + Bias.
func (d *DepthwiseConv2D) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return d.forward(t, x, nil)
}

func (d *DepthwiseConv2D) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if d.err != nil {
		return fail(t, d.err)
	}
	return d.forwardKernel(t, x, bind(t, b, d.Weight), b)
}

func (d *DepthwiseConv2D) forwardKernel(t *autodiff.Tape, x, w autodiff.Value, b binder) autodiff.Value {
	y := apply2(t, forward.DepthwiseConv2dNative, d.conv, x, w)
	if d.Bias != nil {
		y = apply2(t, forward.BiasAdd, d.bias, y, bind(t, b, d.Bias))
	}
	return y
}

func (d *DepthwiseConv2D) kernel() *autodiff.Param { return d.Weight }

// quantShape: one quantisation channel per output channel c·M + m, the
// filter viewed as [KH, KW, in·M].
func (d *DepthwiseConv2D) quantShape() []int {
	s := d.Weight.Data.Shape()
	return []int{s[0], s[1], s[2] * s[3]}
}

// Params returns Weight and Bias (if any).
func (d *DepthwiseConv2D) Params() []*autodiff.Param { return params(d.Weight, d.Bias) }

// Buffers returns nil: DepthwiseConv2D has no buffers.
func (d *DepthwiseConv2D) Buffers() []*Buffer { return nil }

// SeparableConv2D is a depthwise-separable convolution (Keras's
// SeparableConv2D): a depthwise convolution of the in channels (strides,
// padding, dilations and DepthMultiplier M of the options; no bias), then a
// pointwise 1x1 Conv2D from in·M to out channels, plus a bias [out].
type SeparableConv2D struct {
	// Depthwise is the depthwise filter, [KH, KW, in, M], named
	// "depthwise_weight".
	Depthwise *autodiff.Param
	// Pointwise is the pointwise filter, [1, 1, in·M, out], named
	// "pointwise_weight".
	Pointwise *autodiff.Param
	// Bias is the bias, [out], named "bias"; nil with NoBias.
	Bias *autodiff.Param
	// dwOp, pwOp and biasAdd are the layer's ops with their attrs.
	dw   registry.Attrs[forward.DepthwiseConv2dAttrs]
	pw   registry.Attrs[forward.Conv2DAttrs]
	bias registry.Attrs[forward.BiasAddAttrs]
	err  error
}

// NewSeparableConv2D returns a separable convolution from in to out
// channels with a square depthwise kernel of the given size. KernelInit
// initialises both filters.
func NewSeparableConv2D(in, out, kernel int, opts ConvOpts) *SeparableConv2D {
	s := &SeparableConv2D{}
	if s.err = s.init(in, out, kernel, opts); s.err != nil {
		s.Depthwise, s.Pointwise, s.Bias = nil, nil, nil
	}
	return s
}

func (s *SeparableConv2D) init(in, out, kernel int, o ConvOpts) error {
	const layer = "nn.NewSeparableConv2D"
	if in <= 0 || out <= 0 {
		return configError("%s: channel counts must be positive, got in %d, out %d", layer, in, out)
	}
	g, m, err := o.depthGeometry(layer, kernel)
	if err != nil {
		return err
	}
	one := g.spatial(1, 1)
	s.dw = registry.NewAttrs(g.depthwiseAttrs())
	s.pw = registry.NewAttrs(forward.Conv2DAttrs{Strides: one, Padding: "VALID", DataFormat: g.format, Dilations: one})
	s.bias = registry.NewAttrs(forward.BiasAddAttrs{DataFormat: g.format})
	init := orInit(o.KernelInit, GlorotUniform)
	if s.Depthwise, err = newParam("depthwise_weight", g.dtype, []int{g.kh, g.kw, in, m}, init, o.Rand); err != nil {
		return wrapf(err, layer)
	}
	if s.Pointwise, err = newParam("pointwise_weight", g.dtype, []int{1, 1, in * m, out}, init, o.Rand); err != nil {
		return wrapf(err, layer)
	}
	if !o.NoBias {
		if s.Bias, err = newParam("bias", g.dtype, []int{out}, orInit(o.BiasInit, Zeros), o.Rand); err != nil {
			return wrapf(err, layer)
		}
	}
	return nil
}

// Err returns the layer's configuration error, or nil.
func (s *SeparableConv2D) Err() error { return s.err }

// Forward returns Conv2D(DepthwiseConv2dNative(x, Depthwise), Pointwise) +
// Bias.
func (s *SeparableConv2D) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return s.forward(t, x, nil)
}

func (s *SeparableConv2D) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if s.err != nil {
		return fail(t, s.err)
	}
	y := apply2(t, forward.DepthwiseConv2dNative, s.dw, x, bind(t, b, s.Depthwise))
	y = apply2(t, forward.Conv2D, s.pw, y, bind(t, b, s.Pointwise))
	if s.Bias != nil {
		y = apply2(t, forward.BiasAdd, s.bias, y, bind(t, b, s.Bias))
	}
	return y
}

// Params returns Depthwise, Pointwise and Bias (if any).
func (s *SeparableConv2D) Params() []*autodiff.Param { return params(s.Depthwise, s.Pointwise, s.Bias) }

// Buffers returns nil: SeparableConv2D has no buffers.
func (s *SeparableConv2D) Buffers() []*Buffer { return nil }
