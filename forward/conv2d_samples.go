package forward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
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
	l := convLayoutOf(c.format)
	a := Conv2DAttrs{
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
func (c *convSampleCfg) shapes() (x, f, y []int) {
	l := convLayoutOf(c.format)
	oh, _, _, err1 := convOutputSize("sample", c.h, c.kh, c.dh, c.sh, c.padding, c.pads[0], c.pads[1])
	ow, _, _, err2 := convOutputSize("sample", c.w, c.kw, c.dw, c.sw, c.padding, c.pads[2], c.pads[3])
	if err1 != nil || err2 != nil {
		panic(fmt.Sprintf("forward: bad conv sample %s", c.name()))
	}
	return l.shape(c.n, c.h, c.w, c.c), []int{c.kh, c.kw, c.cf, c.o}, l.shape(c.n, oh, ow, c.o)
}

// convNormal returns a float64 tensor of N(0, 1) values.
func convNormal(r *rand.Rand, shape []int) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return convMust(tensorx.New(shape, v))
}

// convInts returns an int32 vector tensor.
func convInts(v ...int) *tensor.Dense {
	s := make([]int32, len(v))
	for i, x := range v {
		s[i] = int32(x)
	}
	return convMust(tensorx.New([]int{len(v)}, s))
}

func convMust(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic("forward: conv sample: " + err.Error())
	}
	return d
}

func conv2DSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(convSampleCfgs))
	for i := range convSampleCfgs {
		c := &convSampleCfgs[i]
		xs, fs, _ := c.shapes()
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.attrs(),
			Inputs: []*tensor.Dense{convNormal(r, xs), convNormal(r, fs)}})
	}
	return out
}

func conv2DBackpropInputSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(convSampleCfgs)+1)
	for i := range convSampleCfgs {
		c := &convSampleCfgs[i]
		xs, fs, ys := c.shapes()
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.attrs(),
			Inputs: []*tensor.Dense{convInts(xs...), convNormal(r, fs), convNormal(r, ys)}})
		if c.c == c.cf && i == 1 {
			// The 2-value [H, W] form of input_sizes.
			out = append(out, registry.Sample{Name: c.name() + "-hw", Attrs: c.attrs(),
				Inputs: []*tensor.Dense{convInts(c.h, c.w), convNormal(r, fs), convNormal(r, ys)}})
		}
	}
	return out
}

func conv2DBackpropFilterSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(convSampleCfgs))
	for i := range convSampleCfgs {
		c := &convSampleCfgs[i]
		xs, fs, ys := c.shapes()
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.attrs(),
			Inputs: []*tensor.Dense{convNormal(r, xs), convInts(fs...), convNormal(r, ys)}})
	}
	return out
}
