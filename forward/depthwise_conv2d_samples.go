package forward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
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
	l := convLayoutOf(c.format)
	a := DepthwiseConv2dAttrs{
		Strides:    l.shape(1, c.sh, c.sw, 1),
		Padding:    c.padding,
		DataFormat: c.format,
		Dilations:  l.shape(1, c.dh, c.dw, 1),
	}
	if c.padding == "EXPLICIT" {
		p := make([]int, 8)
		p[2*l.h], p[2*l.h+1], p[2*l.w], p[2*l.w+1] = c.pads[0], c.pads[1], c.pads[2], c.pads[3]
		a.ExplicitPaddings = p
	}
	return a
}

// shapes returns the input, filter and output shapes of the configuration.
func (c *dwSampleCfg) shapes() (x, f, y []int) {
	l := convLayoutOf(c.format)
	oh, _, _, err1 := convOutputSize("sample", c.h, c.kh, c.dh, c.sh, c.padding, c.pads[0], c.pads[1])
	ow, _, _, err2 := convOutputSize("sample", c.w, c.kw, c.dw, c.sw, c.padding, c.pads[2], c.pads[3])
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("forward: bad depthwise sample %s", c.name()))
	}
	return l.shape(c.n, c.h, c.w, c.c), []int{c.kh, c.kw, c.c, c.m}, l.shape(c.n, oh, ow, c.c*c.m)
}

// dwNormal returns a float64 tensor of N(0, 1) values.
func dwNormal(r *rand.Rand, shape []int) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return dwMust(tensorx.New(shape, v))
}

// dwInts returns an int32 vector tensor.
func dwInts(v ...int) *tensor.Dense {
	s := make([]int32, len(v))
	for i, x := range v {
		s[i] = int32(x)
	}
	return dwMust(tensorx.New([]int{len(v)}, s))
}

func dwMust(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic("forward: depthwise sample: " + err.Error())
	}
	return d
}

func depthwiseConv2dSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(dwSampleCfgs))
	for i := range dwSampleCfgs {
		c := &dwSampleCfgs[i]
		xs, fs, _ := c.shapes()
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.attrs(),
			Inputs: []*tensor.Dense{dwNormal(r, xs), dwNormal(r, fs)}})
	}
	return out
}

func depthwiseConv2dBackpropInputSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(dwSampleCfgs))
	for i := range dwSampleCfgs {
		c := &dwSampleCfgs[i]
		xs, fs, ys := c.shapes()
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.attrs(),
			Inputs: []*tensor.Dense{dwInts(xs...), dwNormal(r, fs), dwNormal(r, ys)}})
	}
	return out
}

func depthwiseConv2dBackpropFilterSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(dwSampleCfgs))
	for i := range dwSampleCfgs {
		c := &dwSampleCfgs[i]
		xs, fs, ys := c.shapes()
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.attrs(),
			Inputs: []*tensor.Dense{dwNormal(r, xs), dwInts(fs...), dwNormal(r, ys)}})
	}
	return out
}
