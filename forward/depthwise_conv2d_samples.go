package forward

import (
	"fmt"
	"math/rand"

	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the DepthwiseConv2dNative family for gradient
// sweeps. The three ops are bilinear, so any inputs give valid finite
// differences. The configurations cover multipliers 1–3, both layouts, the
// three paddings, equal and unequal strides, dilations, odd and non-square
// sizes, and the fast 3-wide stride-1/2 paths (interior and borders).

// dwSampleCfg is one depthwise configuration, sizes in NHWC names.
type dwSampleCfg struct {
	format         string
	n, h, w, c, m  int
	kh, kw         int
	sh, sw, dh, dw int
	padding        string
	pads           [4]int // top, bottom, left, right for EXPLICIT
}

var dwSampleCfgs = []dwSampleCfg{
	{format: "NHWC", n: 2, h: 5, w: 6, c: 2, m: 1, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
	{format: "NHWC", n: 1, h: 7, w: 7, c: 3, m: 1, kh: 3, kw: 3, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
	{format: "NCHW", n: 1, h: 5, w: 6, c: 2, m: 2, kh: 2, kw: 3, sh: 1, sw: 2, dh: 2, dw: 1, padding: "EXPLICIT", pads: [4]int{1, 0, 2, 1}},
	{format: "NHWC", n: 2, h: 6, w: 5, c: 2, m: 3, kh: 3, kw: 2, sh: 2, sw: 1, dh: 1, dw: 2, padding: "VALID"},
	{format: "NCHW", n: 1, h: 6, w: 7, c: 3, m: 1, kh: 3, kw: 3, sh: 1, sw: 1, dh: 2, dw: 2, padding: "SAME"},
	{format: "NHWC", n: 1, h: 4, w: 9, c: 2, m: 2, kh: 1, kw: 3, sh: 1, sw: 3, dh: 1, dw: 1, padding: "EXPLICIT", pads: [4]int{0, 1, 3, 2}},
	{format: "NCHW", n: 2, h: 5, w: 5, c: 1, m: 3, kh: 2, kw: 2, sh: 2, sw: 2, dh: 1, dw: 1, padding: "VALID"},
	{format: "NHWC", n: 1, h: 8, w: 8, c: 4, m: 1, kh: 3, kw: 3, sh: 2, sw: 2, dh: 1, dw: 1, padding: "VALID"},
	{format: "NHWC", n: 1, h: 5, w: 7, c: 3, m: 1, kh: 4, kw: 3, sh: 1, sw: 2, dh: 1, dw: 1, padding: "EXPLICIT", pads: [4]int{2, 1, 1, 2}},
}

func (c *dwSampleCfg) name() string {
	return fmt.Sprintf("%s-%s-s%d%d-d%d%d-k%dx%d-m%d", c.format, c.padding, c.sh, c.sw, c.dh, c.dw, c.kh, c.kw, c.m)
}

func (c *dwSampleCfg) attrs() DepthwiseConv2dAttrs {
	s, d, p := convSampleWindow(c.format, c.padding, c.sh, c.sw, c.dh, c.dw, c.pads)
	return DepthwiseConv2dAttrs{Strides: s, Padding: c.padding, DataFormat: c.format, Dilations: d, ExplicitPaddings: p}
}

func (c *dwSampleCfg) opAttrs() any { return c.attrs() }

// shapes returns the input, filter and output shapes of the configuration.
func (c *dwSampleCfg) shapes() (x, f, y []int) {
	oh, ow := convSampleOutput("depthwise sample "+c.name(), c.h, c.w, c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.padding, c.pads)
	l := convLayoutOf(c.format)
	return l.shape(c.n, c.h, c.w, c.c), []int{c.kh, c.kw, c.c, c.m}, l.shape(c.n, oh, ow, c.c*c.m)
}

func depthwiseConv2dSamples(r *rand.Rand) []registry.Sample {
	return convSamples(r, dwSampleCfgs, convSampleForward, nil)
}

// DepthwiseConv2dBackpropSamples returns the samples of
// DepthwiseConv2dNativeBackpropInput (filter false) or
// DepthwiseConv2dNativeBackpropFilter (filter true) over the
// configurations of DepthwiseConv2dNative's samples, for their
// registrations in package backward.
func DepthwiseConv2dBackpropSamples(r *rand.Rand, filter bool) []registry.Sample {
	if filter {
		return convSamples(r, dwSampleCfgs, convSampleBackpropFilter, nil)
	}
	return convSamples(r, dwSampleCfgs, convSampleBackpropInput, nil)
}
