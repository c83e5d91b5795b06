package forward

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// A float64 reference for the Conv2D family, written directly from
// spec/conv2d.md §2–§3 and the padding table of spec/README.md, with its
// own output-size and padding computation (it shares no code with the
// kernels).

// naiveConv is the geometry of one convolution in NHWC names.
type naiveConv struct {
	nchw           bool
	n, h, w, c     int
	kh, kw, cf, o  int
	sh, sw, dh, dw int
	pt, pb, pl, pr int
	oh, ow         int
}

// naiveAxis returns the output length and the padding before/after of one
// axis (README table); ok is false when the output length is negative.
func naiveAxis(in, k, s, d int, padding string, p0, p1 int) (out, before, after int, ok bool) {
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

// newNaiveConv builds the geometry; pads are (top, bottom, left, right) for
// EXPLICIT.
func newNaiveConv(nchw bool, n, h, w, c, kh, kw, cf, o, sh, sw, dh, dw int, padding string, pads [4]int) (naiveConv, bool) {
	g := naiveConv{nchw: nchw, n: n, h: h, w: w, c: c, kh: kh, kw: kw, cf: cf, o: o, sh: sh, sw: sw, dh: dh, dw: dw}
	var ok1, ok2 bool
	g.oh, g.pt, g.pb, ok1 = naiveAxis(h, kh, sh, dh, padding, pads[0], pads[1])
	g.ow, g.pl, g.pr, ok2 = naiveAxis(w, kw, sw, dw, padding, pads[2], pads[3])
	return g, ok1 && ok2
}

// idx is the flat index of [b, y, x, ch] of a tensor of spatial size
// hh×ww and depth cc in the geometry's layout.
func (g *naiveConv) idx(b, y, x, ch, hh, ww, cc int) int {
	if g.nchw {
		return ((b*cc+ch)*hh+y)*ww + x
	}
	return ((b*hh+y)*ww+x)*cc + ch
}

func (g *naiveConv) xShape() []int { return g.shape(g.n, g.h, g.w, g.c) }
func (g *naiveConv) yShape() []int { return g.shape(g.n, g.oh, g.ow, g.o) }
func (g *naiveConv) fShape() []int { return []int{g.kh, g.kw, g.cf, g.o} }

func (g *naiveConv) shape(n, h, w, c int) []int {
	if g.nchw {
		return []int{n, c, h, w}
	}
	return []int{n, h, w, c}
}

// visit calls fn for every (output element, filter tap) pair that reads
// an input element inside the image, with the three flat indices.
func (g *naiveConv) visit(fn func(xi, fi, yi int)) {
	og := g.o / (g.c / g.cf)
	for b := 0; b < g.n; b++ {
		for i := 0; i < g.oh; i++ {
			for j := 0; j < g.ow; j++ {
				for o := 0; o < g.o; o++ {
					grp := o / og
					yi := g.idx(b, i, j, o, g.oh, g.ow, g.o)
					for p := 0; p < g.kh; p++ {
						for q := 0; q < g.kw; q++ {
							yy := i*g.sh - g.pt + p*g.dh
							xx := j*g.sw - g.pl + q*g.dw
							if yy < 0 || yy >= g.h || xx < 0 || xx >= g.w {
								continue
							}
							for k := 0; k < g.cf; k++ {
								xi := g.idx(b, yy, xx, grp*g.cf+k, g.h, g.w, g.c)
								fi := ((p*g.kw+q)*g.cf+k)*g.o + o
								fn(xi, fi, yi)
							}
						}
					}
				}
			}
		}
	}
}

func (g *naiveConv) forward(x, f []float64) []float64 {
	y := make([]float64, g.n*g.oh*g.ow*g.o)
	g.visit(func(xi, fi, yi int) { y[yi] += x[xi] * f[fi] })
	return y
}

func (g *naiveConv) backpropInput(f, dy []float64) []float64 {
	dx := make([]float64, g.n*g.h*g.w*g.c)
	g.visit(func(xi, fi, yi int) { dx[xi] += dy[yi] * f[fi] })
	return dx
}

func (g *naiveConv) backpropFilter(x, dy []float64) []float64 {
	df := make([]float64, g.kh*g.kw*g.cf*g.o)
	g.visit(func(xi, fi, yi int) { df[fi] += dy[yi] * x[xi] })
	return df
}

// convRef is a naive float64 reference of a convolution family's three
// ops on one geometry (naiveConv, dwNaive).
type convRef interface {
	xShape() []int
	yShape() []int
	fShape() []int
	forward(x, f []float64) []float64
	backpropInput(f, dy []float64) []float64
	backpropFilter(x, dy []float64) []float64
}

// convCheckRef runs the three ops of a convolution family (ops: the
// forward, the input and the filter backprop) with attrs on random
// inputs of g's geometry, in float64 and float32, with 1 and 3 threads,
// against the reference g; results must be bit-identical across thread
// counts. When the output size is negative (ok false) the forward must
// refuse the geometry with TensorFlow's message instead.
func convCheckRef(t *testing.T, c fmt.Stringer, ops [3]string, g convRef, ok bool, attrs any, seed int64) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	xs, fs := g.xShape(), g.fShape()
	x := testutil.Normal(r, testutil.Numel(xs))
	f := testutil.Normal(r, testutil.Numel(fs))
	if !ok {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			_, err := registrytest.Run(t, ops[0], attrs, 1, testutil.Dense(t, dt, xs, x), testutil.Dense(t, dt, fs, f))
			if err == nil || !strings.Contains(err.Error(), "Computed output size would be negative") {
				t.Fatalf("%v: want a negative-output-size error, got %v", c, err)
			}
		}
		return
	}
	ys := g.yShape()
	dy := testutil.Normal(r, testutil.Numel(ys))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		rel := 1e-13
		if dt == tensor.Float32 {
			rel = 3e-6
		}
		xr, fr, dyr := testutil.Round(dt, x), testutil.Round(dt, f), testutil.Round(dt, dy)
		xa, fa, dya := testutil.Abs(xr), testutil.Abs(fr), testutil.Abs(dyr)
		wantY, boundY := g.forward(xr, fr), g.forward(xa, fa)
		wantDx, boundDx := g.backpropInput(fr, dyr), g.backpropInput(fa, dya)
		wantDf, boundDf := g.backpropFilter(xr, dyr), g.backpropFilter(xa, dya)
		var first [3]*tensor.Dense
		for _, threads := range []int{1, 3} {
			name := fmt.Sprintf("%v/%v/t%d", c, dt, threads)
			out, err := registrytest.Run(t, ops[0], attrs, threads, testutil.Dense(t, dt, xs, x), testutil.Dense(t, dt, fs, f))
			if err != nil {
				t.Fatalf("%s: %s: %v", name, ops[0], err)
			}
			testutil.CloseBound(t, name+"/"+ops[0], out[0], ys, wantY, boundY, rel)
			dx, err := registrytest.Run(t, ops[1], attrs, threads, testutil.Ints(t, xs...), testutil.Dense(t, dt, fs, f), testutil.Dense(t, dt, ys, dy))
			if err != nil {
				t.Fatalf("%s: %s: %v", name, ops[1], err)
			}
			testutil.CloseBound(t, name+"/"+ops[1], dx[0], xs, wantDx, boundDx, rel)
			df, err := registrytest.Run(t, ops[2], attrs, threads, testutil.Dense(t, dt, xs, x), testutil.Ints(t, fs...), testutil.Dense(t, dt, ys, dy))
			if err != nil {
				t.Fatalf("%s: %s: %v", name, ops[2], err)
			}
			testutil.CloseBound(t, name+"/"+ops[2], df[0], fs, wantDf, boundDf, rel)
			res := [3]*tensor.Dense{out[0], dx[0], df[0]}
			if threads == 1 {
				first = res
				continue
			}
			for i := range res {
				if !testutil.BitEqual(t, first[i], res[i]) {
					t.Fatalf("%s: op %d differs between 1 and %d threads", name, i, threads)
				}
			}
		}
	}
}
