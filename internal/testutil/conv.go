package testutil

import "math/rand"

// NaiveConv is a float64 reference for the Conv2D family, written
// directly from spec/conv2d.md §2–§3 and the padding table of
// docs/spec/README.md, with its own output-size and padding computation (it
// shares no code with the kernels): the geometry of one convolution in
// NHWC names, in either layout (NCHW).
type NaiveConv struct {
	NCHW           bool
	N, H, W, C     int // input
	KH, KW, CF, O  int // filter
	SH, SW, DH, DW int // strides, dilations
	PT, PB, PL, PR int // paddings: top, bottom, left, right
	OH, OW         int // output spatial size
}

// NaiveAxis returns the output length and the padding before/after of one
// convolution axis (input length in, filter length k, stride s, dilation
// d; p0, p1 the paddings of EXPLICIT) from the padding table of
// docs/spec/README.md; ok is false when the output length is negative.
func NaiveAxis(in, k, s, d int, padding string, p0, p1 int) (out, before, after int, ok bool) {
	e := (k-1)*d + 1
	switch padding {
	case "VALID":
		out = (in - e + s) / s
	case "SAME":
		out = (in + s - 1) / s
		t := (out-1)*s + e - in
		if t < 0 {
			t = 0
		}
		before, after = t/2, t-t/2
	case "EXPLICIT":
		out = (in + p0 + p1 - e + s) / s
		before, after = p0, p1
	}
	return out, before, after, out >= 0
}

// NewNaiveConv builds the geometry; pads are (top, bottom, left, right) for
// EXPLICIT.
func NewNaiveConv(nchw bool, n, h, w, c, kh, kw, cf, o, sh, sw, dh, dw int, padding string, pads [4]int) (NaiveConv, bool) {
	g := NaiveConv{NCHW: nchw, N: n, H: h, W: w, C: c, KH: kh, KW: kw, CF: cf, O: o, SH: sh, SW: sw, DH: dh, DW: dw}
	var ok1, ok2 bool
	g.OH, g.PT, g.PB, ok1 = NaiveAxis(h, kh, sh, dh, padding, pads[0], pads[1])
	g.OW, g.PL, g.PR, ok2 = NaiveAxis(w, kw, sw, dw, padding, pads[2], pads[3])
	return g, ok1 && ok2
}

// idx is the flat index of [b, y, x, ch] of a tensor of spatial size
// hh×ww and depth cc in the geometry's layout.
func (g *NaiveConv) idx(b, y, x, ch, hh, ww, cc int) int {
	if g.NCHW {
		return ((b*cc+ch)*hh+y)*ww + x
	}
	return ((b*hh+y)*ww+x)*cc + ch
}

// XShape returns the input shape.
func (g *NaiveConv) XShape() []int { return g.shape(g.N, g.H, g.W, g.C) }

// YShape returns the output shape.
func (g *NaiveConv) YShape() []int { return g.shape(g.N, g.OH, g.OW, g.O) }

// FShape returns the filter shape.
func (g *NaiveConv) FShape() []int { return []int{g.KH, g.KW, g.CF, g.O} }

// shape is a 4-D shape in the geometry's layout.
func (g *NaiveConv) shape(n, h, w, c int) []int {
	if g.NCHW {
		return []int{n, c, h, w}
	}
	return []int{n, h, w, c}
}

// visit calls fn for every (output element, filter tap) pair that reads
// an input element inside the image, with the three flat indices.
func (g *NaiveConv) visit(fn func(xi, fi, yi int)) {
	og := g.O / (g.C / g.CF)
	for b := 0; b < g.N; b++ {
		for i := 0; i < g.OH; i++ {
			for j := 0; j < g.OW; j++ {
				for o := 0; o < g.O; o++ {
					grp := o / og
					yi := g.idx(b, i, j, o, g.OH, g.OW, g.O)
					for p := 0; p < g.KH; p++ {
						for q := 0; q < g.KW; q++ {
							yy := i*g.SH - g.PT + p*g.DH
							xx := j*g.SW - g.PL + q*g.DW
							if yy < 0 || yy >= g.H || xx < 0 || xx >= g.W {
								continue
							}
							for k := 0; k < g.CF; k++ {
								xi := g.idx(b, yy, xx, grp*g.CF+k, g.H, g.W, g.C)
								fi := ((p*g.KW+q)*g.CF+k)*g.O + o
								fn(xi, fi, yi)
							}
						}
					}
				}
			}
		}
	}
}

// Forward returns the convolution of x with f.
func (g *NaiveConv) Forward(x, f []float64) []float64 {
	y := make([]float64, g.N*g.OH*g.OW*g.O)
	g.visit(func(xi, fi, yi int) { y[yi] += x[xi] * f[fi] })
	return y
}

// BackpropInput returns the input gradient for filter f and output
// gradient dy.
func (g *NaiveConv) BackpropInput(f, dy []float64) []float64 {
	dx := make([]float64, g.N*g.H*g.W*g.C)
	g.visit(func(xi, fi, yi int) { dx[xi] += dy[yi] * f[fi] })
	return dx
}

// BackpropFilter returns the filter gradient for input x and output
// gradient dy.
func (g *NaiveConv) BackpropFilter(x, dy []float64) []float64 {
	df := make([]float64, g.KH*g.KW*g.CF*g.O)
	g.visit(func(xi, fi, yi int) { df[fi] += dy[yi] * x[xi] })
	return df
}

// ConvRef is a naive float64 reference of a convolution family's three
// ops on one geometry (NaiveConv, and the depthwise tests' own).
type ConvRef interface {
	XShape() []int
	YShape() []int
	FShape() []int
	Forward(x, f []float64) []float64
	BackpropInput(f, dy []float64) []float64
	BackpropFilter(x, dy []float64) []float64
}

// NHWCToNCHW transposes values of NHWC shape s [n, h, w, c] to NCHW and
// returns them with their NCHW shape.
func NHWCToNCHW(v []float64, s []int) ([]float64, []int) {
	n, h, w, c := s[0], s[1], s[2], s[3]
	out := make([]float64, len(v))
	for b := range n {
		for y := range h {
			for x := range w {
				for ch := range c {
					out[((b*c+ch)*h+y)*w+x] = v[((b*h+y)*w+x)*c+ch]
				}
			}
		}
	}
	return out, []int{n, c, h, w}
}

// ConvWindow returns the strides and dilations of a window given in NHWC
// names (sh, sw, dh, dw) in the layout of data_format format, and for
// EXPLICIT padding the eight explicit paddings with pads (top, bottom,
// left, right) on the H and W axes (nil for the other paddings).
func ConvWindow(format string, sh, sw, dh, dw int, padding string, pads [4]int) (strides, dilations, explicit []int) {
	h, w := 1, 2
	strides, dilations = []int{1, sh, sw, 1}, []int{1, dh, dw, 1}
	if format == "NCHW" {
		h, w = 2, 3
		strides, dilations = []int{1, 1, sh, sw}, []int{1, 1, dh, dw}
	}
	if padding == "EXPLICIT" {
		explicit = make([]int, 8)
		explicit[2*h], explicit[2*h+1], explicit[2*w], explicit[2*w+1] = pads[0], pads[1], pads[2], pads[3]
	}
	return strides, dilations, explicit
}

// RandomDepthwiseWindow draws the window attrs of a random depthwise test call
// from r: strides 1–3 by 1–2, one of the three paddings, dilations 1–2 by
// 1 or 3, NCHW (format "NCHW") or the default layout (format ""), and for
// EXPLICIT padding 0, 1 or 4 on each side of H and W. The lists are in
// the layout of format.
func RandomDepthwiseWindow(r *rand.Rand) (format, padding string, strides, dilations, explicit []int) {
	pick := func(v ...int) int { return v[r.Intn(len(v))] }
	strides = []int{1, pick(1, 2, 3), pick(1, 2), 1}
	padding = []string{"SAME", "VALID", "EXPLICIT"}[r.Intn(3)]
	dilations = []int{1, pick(1, 2), pick(1, 3), 1}
	h, w := 1, 2
	if r.Intn(2) == 0 {
		format, h, w = "NCHW", 2, 3
		strides = []int{1, 1, strides[1], strides[2]}
		dilations = []int{1, 1, dilations[1], dilations[2]}
	}
	if padding == "EXPLICIT" {
		explicit = make([]int, 8)
		for _, i := range []int{2 * h, 2*h + 1, 2 * w, 2*w + 1} {
			explicit[i] = pick(0, 1, 4)
		}
	}
	return format, padding, strides, dilations, explicit
}
