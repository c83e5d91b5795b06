package forward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the Conv2D family for gradient sweeps. All three ops
// are bilinear, so any inputs give valid finite differences; the
// configurations cover both layouts, the three paddings, strides,
// dilations, groups, odd and non-square sizes, and the direct (no im2col)
// paths.

// convSampleCfg is one convolution configuration, sizes in NHWC names.
type convSampleCfg struct {
	format         string
	n, h, w, c     int
	kh, kw, cf, o  int
	sh, sw, dh, dw int
	padding        string
	pads           [4]int // top, bottom, left, right for EXPLICIT
}

var convSampleCfgs = []convSampleCfg{
	{format: "NHWC", n: 2, h: 5, w: 5, c: 2, kh: 3, kw: 3, cf: 2, o: 3, sh: 1, sw: 1, dh: 1, dw: 1, padding: "VALID"},
	{format: "NHWC", n: 1, h: 5, w: 7, c: 3, kh: 2, kw: 3, cf: 3, o: 2, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
	{format: "NCHW", n: 1, h: 6, w: 5, c: 2, kh: 2, kw: 2, cf: 2, o: 2, sh: 1, sw: 2, dh: 2, dw: 1, padding: "EXPLICIT", pads: [4]int{1, 0, 2, 1}},
	{format: "NHWC", n: 1, h: 4, w: 5, c: 4, kh: 3, kw: 1, cf: 2, o: 4, sh: 1, sw: 1, dh: 1, dw: 2, padding: "SAME"},
	{format: "NCHW", n: 2, h: 3, w: 3, c: 3, kh: 1, kw: 1, cf: 3, o: 2, sh: 1, sw: 1, dh: 1, dw: 1, padding: "VALID"},
	{format: "NHWC", n: 1, h: 7, w: 6, c: 1, kh: 3, kw: 2, cf: 1, o: 2, sh: 3, sw: 2, dh: 2, dw: 2, padding: "SAME"},
	{format: "NCHW", n: 1, h: 5, w: 4, c: 3, kh: 2, kw: 2, cf: 1, o: 3, sh: 2, sw: 1, dh: 1, dw: 1, padding: "EXPLICIT", pads: [4]int{0, 1, 1, 0}},
	{format: "NHWC", n: 2, h: 3, w: 2, c: 2, kh: 3, kw: 2, cf: 2, o: 3, sh: 1, sw: 1, dh: 1, dw: 1, padding: "VALID"},
}

func (c *convSampleCfg) name() string {
	s := fmt.Sprintf("%s-%s-s%d%d-d%d%d-k%dx%d", c.format, c.padding, c.sh, c.sw, c.dh, c.dw, c.kh, c.kw)
	if g := c.c / c.cf; g > 1 {
		s += fmt.Sprintf("-g%d", g)
	}
	return s
}

func (c *convSampleCfg) attrs() Conv2DAttrs {
	s, d, p := convSampleWindow(c.format, c.padding, c.sh, c.sw, c.dh, c.dw, c.pads)
	return Conv2DAttrs{Strides: s, Padding: c.padding, DataFormat: c.format, Dilations: d, ExplicitPaddings: p}
}

func (c *convSampleCfg) opAttrs() any { return c.attrs() }

// shapes returns the input, filter and output shapes of the configuration.
func (c *convSampleCfg) shapes() (x, f, y []int) {
	oh, ow := convSampleOutput("conv sample "+c.name(), c.h, c.w, c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.padding, c.pads)
	l := convLayoutOf(c.format)
	return l.shape(c.n, c.h, c.w, c.c), []int{c.kh, c.kw, c.cf, c.o}, l.shape(c.n, oh, ow, c.o)
}

func conv2DSamples(r *rand.Rand) []registry.Sample {
	return convSamples(r, convSampleCfgs, convSampleForward, nil)
}

// Conv2DBackpropInputSamples returns the gradient-sweep samples of
// Conv2DBackpropInput (registered in package backward) over the Conv2D
// family's configurations, plus the 2-value [H, W] form of input_sizes.
func Conv2DBackpropInputSamples(r *rand.Rand) []registry.Sample {
	return convSamples(r, convSampleCfgs, convSampleBackpropInput, func(i int, c *convSampleCfg) []registry.Sample {
		if c.c != c.cf || i != 1 {
			return nil
		}
		// The 2-value [H, W] form of input_sizes.
		_, fs, ys := c.shapes()
		return []registry.Sample{{Name: c.name() + "-hw", Attrs: c.attrs(),
			Inputs: []*tensor.Dense{sampleInt32s(c.h, c.w), SampleNormal(r, fs...), SampleNormal(r, ys...)}}}
	})
}

// Conv2DBackpropFilterSamples returns the gradient-sweep samples of
// Conv2DBackpropFilter (registered in package backward) over the Conv2D
// family's configurations.
func Conv2DBackpropFilterSamples(r *rand.Rand) []registry.Sample {
	return convSamples(r, convSampleCfgs, convSampleBackpropFilter, nil)
}
