package nn

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// ConvOpts configure the convolution layers (Conv2D, DepthwiseConv2D,
// SeparableConv2D). The zero value is Keras's default (stride 1, "VALID"
// padding, NHWC, no dilation, one group, Glorot-uniform kernel, zero bias,
// float32), except that Rand must be set.
type ConvOpts struct {
	// KernelSize [KH, KW], if non-zero, replaces the square kernel size
	// given to the constructor.
	KernelSize [2]int
	// Strides are [row, col] strides, or one value for both (default 1).
	Strides []int
	// Padding is "VALID" (default), "SAME" or "EXPLICIT".
	Padding string
	// ExplicitPaddings are [top, bottom, left, right], used with Padding
	// "EXPLICIT".
	ExplicitPaddings []int
	// Dilations are [row, col] dilation rates, or one value for both
	// (default 1).
	Dilations []int
	// DataFormat is "NHWC" (default) or "NCHW".
	DataFormat string
	// Groups splits Conv2D's input and output channels into groups
	// convolved separately (default 1); both channel counts must be
	// multiples of it. Not used by the depthwise layers.
	Groups int
	// DepthMultiplier is the number of depthwise output channels per input
	// channel of DepthwiseConv2D and SeparableConv2D (default 1).
	DepthMultiplier int
	// NoBias drops the bias.
	NoBias bool
	// KernelInit initialises the kernels (default GlorotUniform), BiasInit
	// the bias (default Zeros).
	KernelInit, BiasInit Initializer
	// Rand is the random source of the initializers. Required.
	Rand *rand.Rand
	// Dtype is the parameters' dtype, float32 (default) or float64.
	Dtype tensor.Dtype
}

// convGeom is the validated geometry of ConvOpts, in the op attrs' form.
type convGeom struct {
	kh, kw    int
	strides   []int // 4 values, data-format order
	dilations []int // 4 values, data-format order
	padding   string
	pads      []int // 8 values, data-format order, for EXPLICIT
	format    string
	dtype     tensor.Dtype
}

// geometry validates the options shared by the convolution layers.
func (o ConvOpts) geometry(layer string, kernel int) (convGeom, error) {
	g := convGeom{kh: kernel, kw: kernel}
	if o.KernelSize != [2]int{} {
		g.kh, g.kw = o.KernelSize[0], o.KernelSize[1]
	}
	if g.kh <= 0 || g.kw <= 0 {
		return g, configError("%s: kernel size must be positive, got %dx%d", layer, g.kh, g.kw)
	}
	g.format = o.DataFormat
	if g.format == "" {
		g.format = "NHWC"
	}
	if g.format != "NHWC" && g.format != "NCHW" {
		return g, configError("%s: data format must be NHWC or NCHW, got %q", layer, o.DataFormat)
	}
	sh, sw, err := pair(layer, "strides", o.Strides)
	if err != nil {
		return g, err
	}
	dh, dw, err := pair(layer, "dilations", o.Dilations)
	if err != nil {
		return g, err
	}
	g.strides, g.dilations = g.spatial(sh, sw), g.spatial(dh, dw)
	g.padding = o.Padding
	switch g.padding {
	case "":
		g.padding = "VALID"
	case "VALID", "SAME":
	case "EXPLICIT":
		p := o.ExplicitPaddings
		if len(p) != 4 {
			return g, configError("%s: EXPLICIT padding needs 4 ExplicitPaddings [top, bottom, left, right], got %v", layer, p)
		}
		for _, v := range p {
			if v < 0 {
				return g, configError("%s: explicit paddings must be non-negative, got %v", layer, p)
			}
		}
		if g.format == "NHWC" {
			g.pads = []int{0, 0, p[0], p[1], p[2], p[3], 0, 0}
		} else {
			g.pads = []int{0, 0, 0, 0, p[0], p[1], p[2], p[3]}
		}
	default:
		return g, configError("%s: padding must be VALID, SAME or EXPLICIT, got %q", layer, o.Padding)
	}
	if g.padding != "EXPLICIT" && len(o.ExplicitPaddings) != 0 {
		return g, configError("%s: ExplicitPaddings need Padding \"EXPLICIT\", got %q", layer, g.padding)
	}
	if g.dtype, err = paramDtype(layer, o.Dtype); err != nil {
		return g, err
	}
	if o.Rand == nil {
		return g, configError("%s: ConvOpts.Rand is nil (initializers take an explicit *rand.Rand)", layer)
	}
	return g, nil
}

// spatial returns the 4-value attr for the row and column values a, b.
func (g convGeom) spatial(a, b int) []int {
	if g.format == "NCHW" {
		return []int{1, 1, a, b}
	}
	return []int{1, a, b, 1}
}

// pair reads a [row, col] option: empty means 1, one value both.
func pair(layer, what string, v []int) (int, int, error) {
	a, b := 1, 1
	switch len(v) {
	case 0:
	case 1:
		a, b = v[0], v[0]
	case 2:
		a, b = v[0], v[1]
	default:
		return 0, 0, configError("%s: %s must have 1 or 2 values, got %v", layer, what, v)
	}
	if a <= 0 || b <= 0 {
		return 0, 0, configError("%s: %s must be positive, got %v", layer, what, v)
	}
	return a, b, nil
}

// conv2DAttrs returns the Conv2D attrs of the geometry.
func (g convGeom) conv2DAttrs() forward.Conv2DAttrs {
	return forward.Conv2DAttrs{Strides: g.strides, Padding: g.padding, ExplicitPaddings: g.pads,
		DataFormat: g.format, Dilations: g.dilations}
}

// Conv2D is a 2-D convolution layer (TensorFlow's Conv2D, a
// cross-correlation, and BiasAdd): x [N, H, W, in] (or NCHW) with a filter
// [KH, KW, in/groups, out] and a bias [out].
type Conv2D struct {
	// Weight is the filter, [KH, KW, in/groups, out] (HWIO), named "weight".
	Weight *autodiff.Param
	// Bias is the bias, [out], named "bias"; nil with NoBias.
	Bias *autodiff.Param
	// op and biasAdd are Conv2D and BiasAdd with the layer's attrs.
	conv registry.Attrs[forward.Conv2DAttrs]
	bias registry.Attrs[forward.BiasAddAttrs]
	err  error
}

// NewConv2D returns a convolution from in to out channels with a square
// kernel of the given size (see ConvOpts.KernelSize for other shapes).
func NewConv2D(in, out, kernel int, opts ConvOpts) *Conv2D {
	c := &Conv2D{}
	if c.err = c.init(in, out, kernel, opts); c.err != nil {
		c.Weight, c.Bias = nil, nil
	}
	return c
}

func (c *Conv2D) init(in, out, kernel int, o ConvOpts) error {
	const layer = "nn.NewConv2D"
	if in <= 0 || out <= 0 {
		return configError("%s: channel counts must be positive, got in %d, out %d", layer, in, out)
	}
	groups := o.Groups
	if groups == 0 {
		groups = 1
	}
	if groups < 0 || in%groups != 0 || out%groups != 0 {
		return configError("%s: groups %d must be positive and divide in %d and out %d", layer, o.Groups, in, out)
	}
	if o.DepthMultiplier != 0 {
		return configError("%s: DepthMultiplier is for the depthwise layers", layer)
	}
	g, err := o.geometry(layer, kernel)
	if err != nil {
		return err
	}
	c.conv = registry.NewAttrs(g.conv2DAttrs())
	c.bias = registry.NewAttrs(forward.BiasAddAttrs{DataFormat: g.format})
	if c.Weight, err = newParam("weight", g.dtype, []int{g.kh, g.kw, in / groups, out}, orInit(o.KernelInit, GlorotUniform), o.Rand); err != nil {
		return wrapf(err, layer)
	}
	if !o.NoBias {
		if c.Bias, err = newParam("bias", g.dtype, []int{out}, orInit(o.BiasInit, Zeros), o.Rand); err != nil {
			return wrapf(err, layer)
		}
	}
	return nil
}

// Err returns the layer's configuration error, or nil.
func (c *Conv2D) Err() error { return c.err }

// Forward returns Conv2D(x, Weight) + Bias.
func (c *Conv2D) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return c.forward(t, x, nil)
}

func (c *Conv2D) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if c.err != nil {
		return fail(t, c.err)
	}
	return c.forwardKernel(t, x, bind(t, b, c.Weight), b)
}

func (c *Conv2D) forwardKernel(t *autodiff.Tape, x, w autodiff.Value, b binder) autodiff.Value {
	y := apply2(t, forward.Conv2D, c.conv, x, w)
	if c.Bias != nil {
		y = apply2(t, forward.BiasAdd, c.bias, y, bind(t, b, c.Bias))
	}
	return y
}

func (c *Conv2D) kernel() *autodiff.Param { return c.Weight }

// quantShape: one quantisation channel per output channel (the filter's
// last axis).
func (c *Conv2D) quantShape() []int { return nil }

// Params returns Weight and Bias (if any).
func (c *Conv2D) Params() []*autodiff.Param { return params(c.Weight, c.Bias) }

// Buffers returns nil: Conv2D has no buffers.
func (c *Conv2D) Buffers() []*Buffer { return nil }
