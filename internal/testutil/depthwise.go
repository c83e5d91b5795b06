package testutil

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
