package testutil

import "fmt"

// DepthwiseRef is a float64 reference of the DepthwiseConv2dNative family
// written directly from spec/depthwise_conv2d.md §2–§3 and the padding
// table of docs/spec/README.md, with dilations applied as in Conv2D (spec §6).
// It shares no code with the kernels. Sizes are in NHWC names; tensors
// are NCHW when NCHW is set.
type DepthwiseRef struct {
	NCHW           bool
	N, H, W, C, M  int
	KH, KW         int
	SH, SW, DH, DW int
	PT, PL         int
	OH, OW         int
}

// NewDepthwiseRef builds the reference of one geometry; pads are (top,
// bottom, left, right) for EXPLICIT padding. ok is false when an output
// size is negative.
func NewDepthwiseRef(nchw bool, n, h, w, c, m, kh, kw, sh, sw, dh, dw int, padding string, pads [4]int) (DepthwiseRef, bool) {
	g := DepthwiseRef{NCHW: nchw, N: n, H: h, W: w, C: c, M: m, KH: kh, KW: kw, SH: sh, SW: sw, DH: dh, DW: dw}
	var ok1, ok2 bool
	g.OH, g.PT, ok1 = depthwiseAxis(h, kh, sh, dh, padding, pads[0], pads[1])
	g.OW, g.PL, ok2 = depthwiseAxis(w, kw, sw, dw, padding, pads[2], pads[3])
	return g, ok1 && ok2
}

// depthwiseAxis returns the output length and the padding before of one
// axis (README table); ok is false when the output length is negative.
func depthwiseAxis(in, k, s, d int, padding string, p0, p1 int) (out, before int, ok bool) {
	e := (k-1)*d + 1
	switch padding {
	case "VALID":
		out = (in - e + s) / s
	case "SAME":
		out = (in + s - 1) / s
		before = max(0, (out-1)*s+e-in) / 2
	case "EXPLICIT":
		out = (in + p0 + p1 - e + s) / s
		before = p0
	}
	return out, before, out >= 0
}

func (g *DepthwiseRef) idx(b, y, x, ch, hh, ww, cc int) int {
	if g.NCHW {
		return ((b*cc+ch)*hh+y)*ww + x
	}
	return ((b*hh+y)*ww+x)*cc + ch
}

func (g *DepthwiseRef) shape(n, h, w, c int) []int {
	if g.NCHW {
		return []int{n, c, h, w}
	}
	return []int{n, h, w, c}
}

// XShape returns the input shape.
func (g *DepthwiseRef) XShape() []int { return g.shape(g.N, g.H, g.W, g.C) }

// YShape returns the output (out_backprop) shape.
func (g *DepthwiseRef) YShape() []int { return g.shape(g.N, g.OH, g.OW, g.C*g.M) }

// FShape returns the filter shape [KH, KW, C, M].
func (g *DepthwiseRef) FShape() []int { return []int{g.KH, g.KW, g.C, g.M} }

// visit calls fn for every (output element, tap) pair that reads an input
// element inside the image.
func (g *DepthwiseRef) visit(fn func(xi, fi, yi int)) {
	for b := 0; b < g.N; b++ {
		for i := 0; i < g.OH; i++ {
			for j := 0; j < g.OW; j++ {
				for c := 0; c < g.C; c++ {
					for m := 0; m < g.M; m++ {
						yi := g.idx(b, i, j, c*g.M+m, g.OH, g.OW, g.C*g.M)
						for p := 0; p < g.KH; p++ {
							for q := 0; q < g.KW; q++ {
								yy := i*g.SH - g.PT + p*g.DH
								xx := j*g.SW - g.PL + q*g.DW
								if yy < 0 || yy >= g.H || xx < 0 || xx >= g.W {
									continue
								}
								fn(g.idx(b, yy, xx, c, g.H, g.W, g.C), ((p*g.KW+q)*g.C+c)*g.M+m, yi)
							}
						}
					}
				}
			}
		}
	}
}

// Forward returns DepthwiseConv2dNative of x and f.
func (g *DepthwiseRef) Forward(x, f []float64) []float64 {
	y := make([]float64, g.N*g.OH*g.OW*g.C*g.M)
	g.visit(func(xi, fi, yi int) { y[yi] += x[xi] * f[fi] })
	return y
}

// BackpropInput returns DepthwiseConv2dNativeBackpropInput of f and dy.
func (g *DepthwiseRef) BackpropInput(f, dy []float64) []float64 {
	dx := make([]float64, g.N*g.H*g.W*g.C)
	g.visit(func(xi, fi, yi int) { dx[xi] += dy[yi] * f[fi] })
	return dx
}

// BackpropFilter returns DepthwiseConv2dNativeBackpropFilter of x and dy.
func (g *DepthwiseRef) BackpropFilter(x, dy []float64) []float64 {
	df := make([]float64, g.KH*g.KW*g.C*g.M)
	g.visit(func(xi, fi, yi int) { df[fi] += dy[yi] * x[xi] })
	return df
}

// DepthwiseCase is one geometry of the depthwise tests: the reference,
// whether its output sizes are non-negative, and the padding attr and
// (for EXPLICIT) the paddings top, bottom, left, right it was built from.
type DepthwiseCase struct {
	Ref     DepthwiseRef
	OK      bool
	Padding string
	Pads    [4]int
}

// String names the case by layout, padding, shapes, strides and dilations.
func (c *DepthwiseCase) String() string {
	g := &c.Ref
	f := "NHWC"
	if g.NCHW {
		f = "NCHW"
	}
	return fmt.Sprintf("%s/%s%v/x[%d,%d,%d,%d]/f[%d,%d,%d,%d]/s%d,%d/d%d,%d", f, c.Padding, c.Pads,
		g.N, g.H, g.W, g.C, g.KH, g.KW, g.C, g.M, g.SH, g.SW, g.DH, g.DW)
}

// Window returns the case's data_format and its strides, dilations and
// explicit paddings in that layout (ConvWindow).
func (c *DepthwiseCase) Window() (format string, strides, dilations, explicit []int) {
	format = "NHWC"
	if c.Ref.NCHW {
		format = "NCHW"
	}
	strides, dilations, explicit = ConvWindow(format, c.Ref.SH, c.Ref.SW, c.Ref.DH, c.Ref.DW, c.Padding, c.Pads)
	return format, strides, dilations, explicit
}

// DepthwiseGrid is the attr grid of the depthwise tests: both layouts,
// three paddings, equal and unequal strides 1–3, dilations 1–2,
// multipliers 1–3, 3x3 (the fast paths), non-square and 1-wide filters,
// odd sizes, batch 1–3. Without long a fixed, spread-out subset runs,
// plus every 3x3 multiplier-1 case at strides 1 and 2 (the fast paths).
func DepthwiseGrid(long bool) []DepthwiseCase {
	strides := [][2]int{{1, 1}, {2, 2}, {2, 1}, {1, 3}, {3, 3}}
	dils := [][2]int{{1, 1}, {2, 1}, {1, 2}, {2, 2}}
	filters := [][2]int{{3, 3}, {2, 3}, {1, 1}, {3, 2}, {1, 4}}
	chans := [][2]int{{5, 1}, {2, 2}, {3, 3}, {17, 1}} // c, m
	inputs := [][2]int{{6, 7}, {9, 8}, {2, 3}}
	var out []DepthwiseCase
	idx := 0
	for _, nchw := range []bool{false, true} {
		for _, padding := range []string{"VALID", "SAME", "EXPLICIT"} {
			for _, s := range strides {
				for _, d := range dils {
					for _, f := range filters {
						for _, ch := range chans {
							for _, in := range inputs {
								idx++
								fast := f == [2]int{3, 3} && ch[1] == 1 && d[1] == 1 && s[1] <= 2 && in[0] >= 6 && idx%3 == 0
								if !long && !fast && idx%31 != 0 && idx%101 != 7 {
									continue
								}
								pads := [4]int{1, 0, 2, 1}
								switch idx % 3 {
								case 1:
									pads = [4]int{0, 2, 1, 3}
								case 2:
									pads = [4]int{4, 1, 0, 0}
								}
								if padding != "EXPLICIT" {
									pads = [4]int{}
								}
								n := 1 + idx%3
								g, ok := NewDepthwiseRef(nchw, n, in[0], in[1], ch[0], ch[1], f[0], f[1], s[0], s[1], d[0], d[1], padding, pads)
								out = append(out, DepthwiseCase{Ref: g, OK: ok, Padding: padding, Pads: pads})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// DepthwiseLarger returns geometries large enough for several filter
// gradient chunks and row blocks on several goroutines, with the fast
// paths (3x3, multiplier 1, stride 1 and 2), a multiplier-2 case, a large
// explicit padding (the input-gradient window starts past the left edge)
// and a stride larger than the input. Every one has OK set; the tests
// check it.
func DepthwiseLarger() []DepthwiseCase {
	var out []DepthwiseCase
	for _, c := range []struct {
		nchw                 bool
		n, h, w, ch, m, k, s int
		padding              string
		pads                 [4]int
	}{
		{n: 3, h: 23, w: 21, ch: 40, m: 1, k: 3, s: 1, padding: "SAME"},
		{n: 2, h: 30, w: 29, ch: 24, m: 1, k: 3, s: 2, padding: "SAME"},
		{n: 2, h: 17, w: 18, ch: 9, m: 2, k: 3, s: 1, padding: "VALID", nchw: true},
		{n: 1, h: 12, w: 14, ch: 8, m: 1, k: 3, s: 1, padding: "EXPLICIT", pads: [4]int{5, 0, 6, 2}},
		{n: 1, h: 11, w: 13, ch: 5, m: 1, k: 3, s: 2, padding: "EXPLICIT", pads: [4]int{3, 2, 5, 4}},
		{n: 1, h: 11, w: 12, ch: 5, m: 1, k: 3, s: 2, padding: "EXPLICIT", pads: [4]int{4, 1, 3, 0}},
		{n: 2, h: 5, w: 4, ch: 3, m: 2, k: 2, s: 7, padding: "SAME"},
	} {
		g, ok := NewDepthwiseRef(c.nchw, c.n, c.h, c.w, c.ch, c.m, c.k, c.k, c.s, c.s, 1, 1, c.padding, c.pads)
		out = append(out, DepthwiseCase{Ref: g, OK: ok, Padding: c.padding, Pads: c.pads})
	}
	return out
}
