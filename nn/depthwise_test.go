package nn

import (
	"fmt"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// naiveDepthwise is a float64 reference of DepthwiseConv2dNative (NHWC,
// filter [kh, kw, c, m], leading paddings padT, padL) plus bias.
func naiveDepthwise(x []float64, n, h, w, c int, f []float64, kh, kw, m int, bias []float64,
	sh, sw, dh, dw, padT, padL, oh, ow int) []float64 {
	o := c * m
	out := make([]float64, n*oh*ow*o)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for ic := 0; ic < c; ic++ {
					for q := 0; q < m; q++ {
						s := 0.0
						if bias != nil {
							s = bias[ic*m+q]
						}
						for a := 0; a < kh; a++ {
							for e := 0; e < kw; e++ {
								y, xx := i*sh+a*dh-padT, j*sw+e*dw-padL
								if y >= 0 && y < h && xx >= 0 && xx < w {
									s += x[((b*h+y)*w+xx)*c+ic] * f[((a*kw+e)*c+ic)*m+q]
								}
							}
						}
						out[((b*oh+i)*ow+j)*o+ic*m+q] = s
					}
				}
			}
		}
	}
	return out
}

// outGeom returns the output size and leading padding of one spatial axis.
func outGeom(o ConvOpts, axis, in, k, s, d int) (out, before int) {
	switch o.Padding {
	case "SAME":
		return samePads(in, k, s, d)
	case "EXPLICIT":
		p := o.ExplicitPaddings[2*axis : 2*axis+2]
		return (in+p[0]+p[1]-(k-1)*d-1)/s + 1, p[0]
	}
	return (in-(k-1)*d-1)/s + 1, 0
}

type dwCase struct {
	name    string
	in, k   int
	opts    ConvOpts
	n, h, w int
	out     int // SeparableConv2D output channels
}

var dwCases = []dwCase{
	{name: "valid", in: 2, k: 2, n: 2, h: 3, w: 3, out: 3},
	{name: "same-m2-s2", in: 2, k: 3, opts: ConvOpts{Padding: "SAME", DepthMultiplier: 2, Strides: []int{2}}, n: 1, h: 4, w: 5, out: 2},
	{name: "explicit-dil-nchw", in: 3, opts: ConvOpts{KernelSize: [2]int{2, 3}, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 1, 0, 2}, Dilations: []int{1, 2}, DataFormat: "NCHW"}, n: 1, h: 3, w: 4, out: 2},
	{name: "no-bias", in: 1, k: 1, opts: ConvOpts{NoBias: true, DepthMultiplier: 3}, n: 1, h: 2, w: 2, out: 1},
}

func (c dwCase) input(t *testing.T) (*tensor.Dense, []float64) {
	nchw := c.opts.DataFormat == "NCHW"
	var x *tensor.Dense
	if nchw {
		x = randT(rnd(int64(c.h*31+c.w)), false, c.n, c.in, c.h, c.w)
	} else {
		x = randT(rnd(int64(c.h*31+c.w)), false, c.n, c.h, c.w, c.in)
	}
	xs := f64(t, x)
	if nchw {
		xs = nchwToNHWC(xs, c.n, c.in, c.h, c.w)
	}
	return x, xs
}

func TestDepthwiseConv2D(t *testing.T) {
	r := rnd(11)
	for _, c := range dwCases {
		o := c.opts
		o.Rand, o.Dtype, o.BiasInit = r, tensor.Float64, HeNormal
		d := NewDepthwiseConv2D(c.in, c.k, o)
		if err := d.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ws := d.Weight.Data.Shape()
		kh, kw, m := ws[0], ws[1], ws[3]
		if ws[2] != c.in || m != max(1, c.opts.DepthMultiplier) {
			t.Fatalf("%s: filter shape %v", c.name, ws)
		}
		sh, sw, _ := pair("", "", c.opts.Strides)
		dh, dw, _ := pair("", "", c.opts.Dilations)
		oh, pt := outGeom(c.opts, 0, c.h, kh, sh, dh)
		ow, pl := outGeom(c.opts, 1, c.w, kw, sw, dw)
		x, xs := c.input(t)
		var bias []float64
		if d.Bias != nil {
			bias = f64(t, d.Bias.Data)
		}
		want := naiveDepthwise(xs, c.n, c.h, c.w, c.in, f64(t, d.Weight.Data), kh, kw, m, bias, sh, sw, dh, dw, pt, pl, oh, ow)
		if c.opts.DataFormat == "NCHW" {
			want = nhwcToNCHW(want, c.n, oh, ow, c.in*m)
		}
		got, _ := run(t, d, x, true)
		assertClose(t, "DepthwiseConv2D "+c.name, got, want, 1e-12)
		checkModule(t, "DepthwiseConv2D "+c.name, d, x, true, c.name == "valid")

		// SeparableConv2D: the same depthwise stage, then a 1x1 Conv2D.
		s := NewSeparableConv2D(c.in, c.out, c.k, o)
		if err := s.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		mid := naiveDepthwise(xs, c.n, c.h, c.w, c.in, f64(t, s.Depthwise.Data), kh, kw, m, nil, sh, sw, dh, dw, pt, pl, oh, ow)
		if s.Bias != nil {
			bias = f64(t, s.Bias.Data)
		}
		want = naiveConv(mid, c.n, oh, ow, c.in*m, f64(t, s.Pointwise.Data), 1, 1, c.in*m, c.out, bias, 1, 1, 1, 1, 0, 0, oh, ow)
		if c.opts.DataFormat == "NCHW" {
			want = nhwcToNCHW(want, c.n, oh, ow, c.out)
		}
		got, _ = run(t, s, x, true)
		assertClose(t, "SeparableConv2D "+c.name, got, want, 1e-12)
		checkModule(t, "SeparableConv2D "+c.name, s, x, true, false)
		names := ""
		for _, p := range s.Params() {
			names += p.Name + fmt.Sprint(p.Data.Shape()) + " "
		}
		if c.name == "valid" && names != "depthwise_weight(2, 2, 2, 1) pointwise_weight(1, 1, 2, 3) bias(3) " {
			t.Fatalf("SeparableConv2D params: %s", names)
		}
	}
}

func TestDepthwiseErrors(t *testing.T) {
	r := rnd(1)
	for _, c := range []struct {
		name string
		err  error
		frag string
	}{
		{"channels", NewDepthwiseConv2D(0, 1, ConvOpts{Rand: r}).Err(), "channel count"},
		{"groups", NewDepthwiseConv2D(2, 1, ConvOpts{Rand: r, Groups: 2}).Err(), "Groups"},
		{"multiplier", NewDepthwiseConv2D(2, 1, ConvOpts{Rand: r, DepthMultiplier: -1}).Err(), "DepthMultiplier"},
		{"padding", NewDepthwiseConv2D(2, 1, ConvOpts{Rand: r, Padding: "same"}).Err(), "padding"},
		{"sep channels", NewSeparableConv2D(2, 0, 1, ConvOpts{Rand: r}).Err(), "channel counts"},
		{"sep kernel", NewSeparableConv2D(2, 2, -1, ConvOpts{Rand: r}).Err(), "kernel size"},
		{"sep rand", NewSeparableConv2D(2, 2, 1, ConvOpts{}).Err(), "Rand"},
	} {
		assertErr(t, c.name, c.err, autodiff.ErrInvalidArgument, c.frag)
	}
	// Channel mismatch at Forward: the op's error.
	d := NewDepthwiseConv2D(3, 1, ConvOpts{Rand: r})
	tp := autodiff.NewTape()
	y := d.Forward(tp, tp.Full(tensor.Float32, []int{1, 2, 2, 2}, 1))
	assertErr(t, "forward channels", y.Err(), nil, "DepthwiseConv2dNative")
}
