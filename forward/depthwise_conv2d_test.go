package forward

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"syscall"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// ---------------------------------------------------------------------
// A float64 reference written directly from spec/depthwise_conv2d.md
// §2–§3 and the padding table of spec/README.md, with dilations applied as
// in Conv2D (spec §6). It shares no code with the kernels; output sizes
// and paddings come from naiveAxis (conv2d_naive_test.go), the same table.

type dwNaive struct {
	nchw           bool
	n, h, w, c, m  int
	kh, kw         int
	sh, sw, dh, dw int
	pt, pl         int
	oh, ow         int
}

func newDwNaive(nchw bool, n, h, w, c, m, kh, kw, sh, sw, dh, dw int, padding string, pads [4]int) (dwNaive, bool) {
	g := dwNaive{nchw: nchw, n: n, h: h, w: w, c: c, m: m, kh: kh, kw: kw, sh: sh, sw: sw, dh: dh, dw: dw}
	var ok1, ok2 bool
	g.oh, g.pt, _, ok1 = naiveAxis(h, kh, sh, dh, padding, pads[0], pads[1])
	g.ow, g.pl, _, ok2 = naiveAxis(w, kw, sw, dw, padding, pads[2], pads[3])
	return g, ok1 && ok2
}

func (g *dwNaive) idx(b, y, x, ch, hh, ww, cc int) int {
	if g.nchw {
		return ((b*cc+ch)*hh+y)*ww + x
	}
	return ((b*hh+y)*ww+x)*cc + ch
}

func (g *dwNaive) shape(n, h, w, c int) []int {
	if g.nchw {
		return []int{n, c, h, w}
	}
	return []int{n, h, w, c}
}

func (g *dwNaive) xShape() []int { return g.shape(g.n, g.h, g.w, g.c) }
func (g *dwNaive) yShape() []int { return g.shape(g.n, g.oh, g.ow, g.c*g.m) }
func (g *dwNaive) fShape() []int { return []int{g.kh, g.kw, g.c, g.m} }

// visit calls fn for every (output element, tap) pair that reads an input
// element inside the image.
func (g *dwNaive) visit(fn func(xi, fi, yi int)) {
	for b := 0; b < g.n; b++ {
		for i := 0; i < g.oh; i++ {
			for j := 0; j < g.ow; j++ {
				for c := 0; c < g.c; c++ {
					for m := 0; m < g.m; m++ {
						yi := g.idx(b, i, j, c*g.m+m, g.oh, g.ow, g.c*g.m)
						for p := 0; p < g.kh; p++ {
							for q := 0; q < g.kw; q++ {
								yy := i*g.sh - g.pt + p*g.dh
								xx := j*g.sw - g.pl + q*g.dw
								if yy < 0 || yy >= g.h || xx < 0 || xx >= g.w {
									continue
								}
								fn(g.idx(b, yy, xx, c, g.h, g.w, g.c), ((p*g.kw+q)*g.c+c)*g.m+m, yi)
							}
						}
					}
				}
			}
		}
	}
}

func (g *dwNaive) forward(x, f []float64) []float64 {
	y := make([]float64, g.n*g.oh*g.ow*g.c*g.m)
	g.visit(func(xi, fi, yi int) { y[yi] += x[xi] * f[fi] })
	return y
}

func (g *dwNaive) backpropInput(f, dy []float64) []float64 {
	dx := make([]float64, g.n*g.h*g.w*g.c)
	g.visit(func(xi, fi, yi int) { dx[xi] += dy[yi] * f[fi] })
	return dx
}

func (g *dwNaive) backpropFilter(x, dy []float64) []float64 {
	df := make([]float64, g.kh*g.kw*g.c*g.m)
	g.visit(func(xi, fi, yi int) { df[fi] += dy[yi] * x[xi] })
	return df
}

// ---------------------------------------------------------------------
// Test helpers.

func dwAttrsFor(g *dwNaive, padding string, pads [4]int) DepthwiseConv2dAttrs {
	format := "NHWC"
	if g.nchw {
		format = "NCHW"
	}
	c := dwSampleCfg{format: format, sh: g.sh, sw: g.sw, dh: g.dh, dw: g.dw, padding: padding, pads: pads}
	return c.attrs()
}

// ---------------------------------------------------------------------
// Grid against the reference.

type dwGridCase struct {
	g       dwNaive
	ok      bool
	padding string
	pads    [4]int
}

func (c *dwGridCase) String() string {
	g := &c.g
	f := "NHWC"
	if g.nchw {
		f = "NCHW"
	}
	return fmt.Sprintf("%s/%s%v/x[%d,%d,%d,%d]/f[%d,%d,%d,%d]/s%d,%d/d%d,%d", f, c.padding, c.pads,
		g.n, g.h, g.w, g.c, g.kh, g.kw, g.c, g.m, g.sh, g.sw, g.dh, g.dw)
}

// dwGrid is the attr grid: both layouts, three paddings, equal and
// unequal strides 1–3, dilations 1–2, multipliers 1–3, 3x3 (the fast
// paths), non-square and 1-wide filters, odd sizes, batch 1–3. Without
// -long a fixed, spread-out subset runs, plus every 3x3 multiplier-1 case
// at strides 1 and 2 (the fast paths).
func dwGrid(long bool) []dwGridCase {
	strides := [][2]int{{1, 1}, {2, 2}, {2, 1}, {1, 3}, {3, 3}}
	dils := [][2]int{{1, 1}, {2, 1}, {1, 2}, {2, 2}}
	filters := [][2]int{{3, 3}, {2, 3}, {1, 1}, {3, 2}, {1, 4}}
	chans := [][2]int{{5, 1}, {2, 2}, {3, 3}, {17, 1}} // c, m
	inputs := [][2]int{{6, 7}, {9, 8}, {2, 3}}
	var out []dwGridCase
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
								g, ok := newDwNaive(nchw, n, in[0], in[1], ch[0], ch[1], f[0], f[1], s[0], s[1], d[0], d[1], padding, pads)
								out = append(out, dwGridCase{g: g, ok: ok, padding: padding, pads: pads})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// dwCheckCase runs the three ops of one geometry in float64 and float32,
// with 1 and 3 threads, against the reference; results must be
// bit-identical across thread counts.
func dwCheckCase(t *testing.T, c *dwGridCase, seed int64) {
	t.Helper()
	ops := [3]string{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}
	convCheckRef(t, c, ops, &c.g, c.ok, dwAttrsFor(&c.g, c.padding, c.pads), seed)
}

func TestDepthwiseConv2dGrid(t *testing.T) {
	cases := dwGrid(testutil.Long())
	if len(cases) < 100 {
		t.Fatalf("grid has only %d cases", len(cases))
	}
	t.Logf("%d configurations (all: -long)", len(cases))
	for i := range cases {
		dwCheckCase(t, &cases[i], int64(i))
	}
}

// TestDepthwiseConv2dLarger uses shapes large enough for several filter
// gradient chunks and row blocks on several goroutines, with the fast
// paths (3x3, multiplier 1, stride 1 and 2), a multiplier-2 case, a large
// explicit padding (the input-gradient window starts past the left edge)
// and a stride larger than the input.
func TestDepthwiseConv2dLarger(t *testing.T) {
	for i, c := range []struct {
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
		g, ok := newDwNaive(c.nchw, c.n, c.h, c.w, c.ch, c.m, c.k, c.k, c.s, c.s, 1, 1, c.padding, c.pads)
		if !ok {
			t.Fatalf("case %d: bad geometry", i)
		}
		gc := dwGridCase{g: g, ok: true, padding: c.padding, pads: c.pads}
		dwCheckCase(t, &gc, int64(100+i))
	}
}

func TestDepthwiseConv2dSamples(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range []string{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		samples := def.Samples(r)
		if len(samples) < 8 {
			t.Fatalf("%s: %d samples", op, len(samples))
		}
		mults, formats, paddings := map[int]bool{}, map[string]bool{}, map[string]bool{}
		unequal, dilated := false, false
		for _, s := range samples {
			a := s.Attrs.(DepthwiseConv2dAttrs)
			l := convLayoutOf(a.DataFormat)
			formats[a.DataFormat], paddings[a.Padding] = true, true
			unequal = unequal || a.Strides[l.h] != a.Strides[l.w]
			dilated = dilated || a.Dilations[l.h] > 1 || a.Dilations[l.w] > 1
			if op == "DepthwiseConv2dNativeBackpropFilter" {
				mults[int(s.Inputs[1].Int32s()[3])] = true
			} else {
				mults[s.Inputs[1].Shape()[3]] = true
			}
			out, err := registry.Run(def, registrytest.KC(0), s.Attrs, s.Inputs)
			if err != nil {
				t.Fatalf("%s %s: %v", op, s.Name, err)
			}
			for _, v := range testutil.Float64s(t, out[0]) {
				if math.IsNaN(v) {
					t.Fatalf("%s %s: NaN in output", op, s.Name)
				}
			}
		}
		if len(mults) < 3 || len(formats) < 2 || len(paddings) < 3 || !unequal || !dilated {
			t.Fatalf("%s: samples do not cover the attrs: multipliers %v, formats %v, paddings %v, unequal strides %v, dilations %v",
				op, mults, formats, paddings, unequal, dilated)
		}
	}
}

// TestDepthwiseConv2dMatchesConv2D checks the equivalence of spec §2: with
// one input channel, the op is Conv2D with filter [KH, KW, 1, M].
func TestDepthwiseConv2dMatchesConv2D(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	xs, fs := []int{2, 7, 6, 1}, []int{3, 2, 1, 3}
	x, f := testutil.Dense(t, tensor.Float64, xs, testutil.Normal(r, testutil.Numel(xs))), testutil.Dense(t, tensor.Float64, fs, testutil.Normal(r, testutil.Numel(fs)))
	a := DepthwiseConv2dAttrs{Strides: []int{1, 2, 1, 1}, Padding: "SAME", Dilations: []int{1, 1, 2, 1}}
	got, err := registrytest.Run(t, "DepthwiseConv2dNative", a, 1, x, f)
	if err != nil {
		t.Fatal(err)
	}
	def, err := registry.Lookup("Conv2D")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := def.ParseAttrs(map[string]any{"strides": []any{1.0, 2.0, 1.0, 1.0}, "padding": "SAME", "dilations": []any{1.0, 1.0, 2.0, 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := registry.Run(def, nil, ca, []*tensor.Dense{x, f})
	if err != nil {
		t.Fatal(err)
	}
	wv := testutil.Float64s(t, w[0])
	testutil.CloseBound(t, "depthwise vs Conv2D", got[0], w[0].Shape(), wv, testutil.Abs(wv), 1e-12)
}

// ---------------------------------------------------------------------
// Spec test vectors (spec/depthwise_conv2d.md §7): arange inputs, NHWC,
// run as given and converted to NCHW, in float64 and float32.

type dwVector struct {
	id       string
	op       string
	x, f, dy []int // shapes (NHWC)
	xv, fv   []float64
	sizes    []int
	strides  [2]int
	padding  string
	outShape []int
	want     []float64
}

var dwVectors = []dwVector{
	{id: "DW1", op: "DepthwiseConv2dNative", x: []int{1, 2, 3, 2}, f: []int{2, 2, 2, 2}, padding: "VALID", outShape: []int{1, 1, 2, 4},
		want: []float64{196, 216, 272, 296, 252, 280, 344, 376}},
	{id: "DW2", op: "DepthwiseConv2dNative", x: []int{1, 3, 2, 2}, f: []int{3, 3, 2, 1}, padding: "SAME", outShape: []int{1, 3, 2, 2},
		fv:   []float64{1, 2, 7, 8, 13, 14, 3, 4, 9, 10, 15, 16, 5, 6, 11, 12, 17, 18},
		want: []float64{228, 300, 132, 180, 482, 596, 266, 344, 372, 452, 180, 236}},
	{id: "DW3", op: "DepthwiseConv2dNative", x: []int{1, 7, 7, 1}, f: []int{2, 2, 1, 1}, strides: [2]int{3, 3}, padding: "VALID", outShape: []int{1, 2, 2, 1},
		want: []float64{65, 95, 275, 305}},
	{id: "DW4", op: "DepthwiseConv2dNative", x: []int{1, 4, 4, 1}, f: []int{2, 2, 1, 1}, strides: [2]int{3, 3}, padding: "SAME", outShape: []int{1, 2, 2, 1},
		want: []float64{44, 28, 41, 16}},
	{id: "DW5", op: "DepthwiseConv2dNative", x: []int{1, 2, 2, 1}, f: []int{2, 2, 1, 2}, padding: "VALID", outShape: []int{1, 1, 1, 2},
		want: []float64{50, 60}},
	{id: "DWI1", op: "DepthwiseConv2dNativeBackpropInput", sizes: []int{1, 2, 3, 1}, f: []int{2, 2, 1, 1}, dy: []int{1, 1, 2, 1}, padding: "VALID", outShape: []int{1, 2, 3, 1},
		want: []float64{1, 4, 4, 3, 10, 8}},
	{id: "DWI2", op: "DepthwiseConv2dNativeBackpropInput", sizes: []int{1, 4, 4, 1}, f: []int{1, 1, 1, 1}, dy: []int{1, 2, 2, 1}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 4, 4, 1},
		want: []float64{1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0}},
	{id: "DWI3", op: "DepthwiseConv2dNativeBackpropInput", sizes: []int{1, 2, 2, 1}, f: []int{2, 2, 1, 2}, dy: []int{1, 1, 1, 2}, padding: "VALID", outShape: []int{1, 2, 2, 1},
		want: []float64{5, 11, 17, 23}},
	{id: "DWF1", op: "DepthwiseConv2dNativeBackpropFilter", x: []int{1, 2, 3, 1}, sizes: []int{2, 2, 1, 1}, dy: []int{1, 1, 2, 1}, padding: "VALID", outShape: []int{2, 2, 1, 1},
		want: []float64{5, 8, 14, 17}},
	{id: "DWF2", op: "DepthwiseConv2dNativeBackpropFilter", x: []int{1, 4, 4, 1}, sizes: []int{1, 1, 1, 1}, dy: []int{1, 2, 2, 1}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 1, 1, 1},
		want: []float64{78}},
	{id: "DWF3", op: "DepthwiseConv2dNativeBackpropFilter", x: []int{1, 2, 2, 1}, sizes: []int{2, 2, 1, 2}, dy: []int{1, 1, 1, 2}, padding: "VALID", outShape: []int{2, 2, 1, 2},
		want: []float64{1, 2, 2, 4, 3, 6, 4, 8}},
}

func TestDepthwiseConv2dSpecVectors(t *testing.T) {
	for _, v := range dwVectors {
		for _, nchw := range []bool{false, true} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				name := fmt.Sprintf("%s/nchw=%v/%v", v.id, nchw, dt)
				image := func(s []int, vals []float64) *tensor.Dense {
					if vals == nil {
						vals = testutil.Arange(testutil.Numel(s))
					}
					if nchw {
						vals, s = convNHWCToNCHW(vals, s)
					}
					return testutil.Dense(t, dt, s, vals)
				}
				filter := func() *tensor.Dense {
					if v.fv != nil {
						return testutil.Dense(t, dt, v.f, v.fv)
					}
					return testutil.Dense(t, dt, v.f, testutil.Arange(testutil.Numel(v.f)))
				}
				format := "NHWC"
				if nchw {
					format = "NCHW"
				}
				s := [2]int{max(1, v.strides[0]), max(1, v.strides[1])}
				c := dwSampleCfg{format: format, sh: s[0], sw: s[1], dh: 1, dw: 1, padding: v.padding}
				var in []*tensor.Dense
				switch v.op {
				case "DepthwiseConv2dNative":
					in = []*tensor.Dense{image(v.x, nil), filter()}
				case "DepthwiseConv2dNativeBackpropInput":
					sizes := v.sizes
					if nchw {
						sizes = []int{sizes[0], sizes[3], sizes[1], sizes[2]}
					}
					in = []*tensor.Dense{testutil.Ints(t, sizes...), filter(), image(v.dy, nil)}
				default:
					in = []*tensor.Dense{image(v.x, nil), testutil.Ints(t, v.sizes...), image(v.dy, nil)}
				}
				out, err := registrytest.Run(t, v.op, c.attrs(), 2, in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want, shape := v.want, v.outShape
				if nchw && v.op != "DepthwiseConv2dNativeBackpropFilter" {
					want, shape = convNHWCToNCHW(want, shape)
				}
				testutil.CloseBound(t, name, out[0], shape, want, make([]float64, len(want)), 0)
			}
		}
	}
}

// TestDepthwiseConv2dDilatedVector checks a dilated case worked by hand:
// x = arange [1,4,4,1], f = arange [2,2,1,1], dilations [1,2,1,1], VALID:
// out[i,j] = x[i,j] + 2·x[i,j+1] + 3·x[i+2,j] + 4·x[i+2,j+1].
func TestDepthwiseConv2dDilatedVector(t *testing.T) {
	a := DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID", Dilations: []int{1, 2, 1, 1}}
	x := testutil.Dense(t, tensor.Float64, []int{1, 4, 4, 1}, testutil.Arange(testutil.Numel([]int{16})))
	f := testutil.Dense(t, tensor.Float64, []int{2, 2, 1, 1}, testutil.Arange(testutil.Numel([]int{4})))
	out, err := registrytest.Run(t, "DepthwiseConv2dNative", a, 1, x, f)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 6)
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			at := func(y, x int) float64 { return float64(y*4 + x + 1) }
			want[i*3+j] = at(i, j) + 2*at(i, j+1) + 3*at(i+2, j) + 4*at(i+2, j+1)
		}
	}
	testutil.CloseBound(t, "dilated", out[0], []int{1, 2, 3, 1}, want, make([]float64, 6), 0)
}

// ---------------------------------------------------------------------
// Attrs, errors and empty tensors.

func TestDepthwiseConv2dAttrs(t *testing.T) {
	def, err := registry.Lookup("DepthwiseConv2dNative")
	if err != nil {
		t.Fatal(err)
	}
	a, err := def.ParseAttrs(map[string]any{"strides": []any{1.0, 2.0, 2.0, 1.0}, "padding": "SAME", "T": "float"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err = def.NormalizeAttrs(a); err != nil {
		t.Fatal(err)
	}
	da, ok := a.(DepthwiseConv2dAttrs)
	if !ok {
		t.Fatalf("parsed attrs are %T", a)
	}
	if da.DataFormat != "NHWC" || fmt.Sprint(da.Dilations) != "[1 1 1 1]" || len(da.ExplicitPaddings) != 0 {
		t.Fatalf("defaults not applied: %+v", da)
	}
	if _, err := def.ParseAttrs(map[string]any{"strides": []any{1.0, 1.0, 1.0, 1.0}, "padding": "SAME", "use_cudnn_on_gpu": true}); err == nil {
		t.Fatal("use_cudnn_on_gpu accepted: the depthwise ops have no such attr")
	}
}

func TestDepthwiseConv2dErrors(t *testing.T) {
	type tensorFn func(t *testing.T) *tensor.Dense
	f64 := func(shape ...int) tensorFn {
		return func(t *testing.T) *tensor.Dense {
			return testutil.Dense(t, tensor.Float64, shape, make([]float64, testutil.Numel(shape)))
		}
	}
	f32 := func(shape ...int) tensorFn {
		return func(t *testing.T) *tensor.Dense {
			return testutil.Dense(t, tensor.Float32, shape, make([]float64, testutil.Numel(shape)))
		}
	}
	ints := func(v ...int) tensorFn {
		return func(t *testing.T) *tensor.Dense { return testutil.Ints(t, v...) }
	}
	int64s := func(v ...int64) tensorFn {
		return func(t *testing.T) *tensor.Dense {
			d, err := tensorx.New([]int{len(v)}, v)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	ints2d := func(t *testing.T) *tensor.Dense {
		d, err := tensorx.New([]int{2, 2}, []int32{1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	seq := func(fs ...tensorFn) func(t *testing.T) []*tensor.Dense {
		return func(t *testing.T) []*tensor.Dense {
			out := make([]*tensor.Dense, len(fs))
			for i, f := range fs {
				out[i] = f(t)
			}
			return out
		}
	}
	type errCase struct {
		name   string
		op     string
		attrs  any
		in     func(t *testing.T) []*tensor.Dense
		kind   error
		substr string
	}
	const fwdOp, biOp, bfOp = "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"
	s1 := []int{1, 1, 1, 1}
	at := func(strides []int, padding string) DepthwiseConv2dAttrs {
		return DepthwiseConv2dAttrs{Strides: strides, Padding: padding}
	}
	fwd := seq(f64(1, 5, 5, 2), f64(2, 2, 2, 3))
	bi := seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 6))
	bf := seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 6))
	IA, SH, DT := registry.ErrInvalidArgument, registry.ErrShape, registry.ErrDtype
	var cases []errCase
	for _, o := range []struct {
		op string
		in func(t *testing.T) []*tensor.Dense
	}{{fwdOp, fwd}, {biOp, bi}, {bfOp, bf}} {
		cases = append(cases,
			errCase{"padding", o.op, at(s1, "FULL"), o.in, IA, "allowed values"},
			errCase{"no-padding", o.op, DepthwiseConv2dAttrs{Strides: s1}, o.in, IA, "padding"},
			errCase{"data-format", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCDHW"}, o.in, IA, "allowed values"},
			errCase{"attrs-type", o.op, struct{}{}, o.in, IA, "attrs must be"},
			errCase{"no-strides", o.op, DepthwiseConv2dAttrs{Padding: "VALID"}, o.in, IA, "strides"},
			errCase{"strides-3", o.op, at([]int{1, 1, 1}, "VALID"), o.in, IA, "strides field must specify 4 dimensions"},
			errCase{"dilations-3", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 1}}, o.in, IA, "requires the dilations attribute to contain 4 values"},
			errCase{"stride-batch", o.op, at([]int{2, 1, 1, 1}, "VALID"), o.in, IA, "strides in the batch and depth dimensions"},
			errCase{"stride-depth", o.op, at([]int{1, 1, 1, 2}, "VALID"), o.in, IA, "strides in the batch and depth dimensions"},
			errCase{"stride-depth-nchw", o.op, DepthwiseConv2dAttrs{Strides: []int{1, 2, 1, 1}, Padding: "VALID", DataFormat: "NCHW"}, o.in, IA, "strides in the batch and depth dimensions"},
			errCase{"stride-0", o.op, at([]int{1, 0, 1, 1}, "VALID"), o.in, IA, "strides should be larger than 0"},
			errCase{"dilation-depth", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 1, 2}}, o.in, IA, "dilations in the batch and depth"},
			errCase{"dilation-0", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 0, 1, 1}}, o.in, IA, "Dilated rates should be larger than 0"},
			errCase{"explicit-count", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0}}, o.in, IA, "must contain 8 values, but got: 7"},
			errCase{"explicit-negative", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, -1, 1, 1, 1, 0, 0}}, o.in, IA, "must be nonnegative"},
			errCase{"explicit-batch", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			errCase{"explicit-depth-nchw", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", DataFormat: "NCHW", ExplicitPaddings: []int{0, 0, 0, 1, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			errCase{"explicit-not-explicit", o.op, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", ExplicitPaddings: []int{0, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "must be empty if the padding attribute is not EXPLICIT"},
		)
	}
	v := at(s1, "VALID")
	cases = append(cases,
		// DepthwiseConv2dNative inputs (spec §5 items 8–11).
		errCase{"input-rank3", fwdOp, v, seq(f64(5, 5, 2), f64(2, 2, 2, 2)), SH, "input must be 4-dimensional"},
		errCase{"filter-rank3", fwdOp, v, seq(f64(1, 5, 5, 2), f64(2, 2, 2)), SH, "filter must be 4-dimensional"},
		errCase{"depth", fwdOp, v, seq(f64(1, 5, 5, 2), f64(2, 2, 3, 1)), SH, "input and filter must have the same depth: 2 vs 3"},
		errCase{"negative-out", fwdOp, v, seq(f64(1, 1, 5, 1), f64(4, 1, 1, 1)), IA, "Computed output size would be negative"},
		errCase{"negative-out-dilated", fwdOp, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 3, 1}}, seq(f64(1, 5, 5, 1), f64(1, 3, 1, 1)), IA, "Computed output size would be negative"},
		errCase{"rows-too-large", fwdOp, v, seq(f64(0, 1<<31, 1, 1), f64(1, 1, 1, 1)), IA, "Input rows too large"},
		errCase{"cols-too-large-nchw", fwdOp, DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCHW"}, seq(f64(0, 1, 1, 1<<31), f64(1, 1, 1, 1)), IA, "Input cols too large"},
		errCase{"dtype", fwdOp, v, seq(f64(1, 5, 5, 2), f32(2, 2, 2, 2)), DT, "filter has dtype"},
		// DepthwiseConv2dNativeBackpropInput (items 12–18).
		errCase{"sizes-rank2", biOp, v, seq(ints2d, f64(2, 2, 2, 3), f64(1, 4, 4, 6)), IA, "input_sizes input must be 1-dim, not 2"},
		errCase{"sizes-negative", biOp, v, seq(ints(1, -1, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 6)), IA, "Dimension 1 of input_sizes must be >= 0"},
		errCase{"sizes-float", biOp, v, seq(f64(4), f64(2, 2, 2, 3), f64(1, 4, 4, 6)), DT, "input_sizes"},
		errCase{"sizes-2", biOp, v, seq(ints(5, 5), f64(2, 2, 2, 3), f64(1, 4, 4, 6)), SH, "input must be 4-dimensional"},
		errCase{"bi-filter-rank3", biOp, v, seq(ints(1, 5, 5, 2), f64(2, 2, 2), f64(1, 4, 4, 6)), SH, "filter must be 4-dimensional"},
		errCase{"bi-dy-rank3", biOp, v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(4, 4, 6)), SH, "out_backprop must be 4-dimensional"},
		errCase{"bi-batch", biOp, v, seq(ints(2, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 6)), SH, "input and out_backprop must have the same batch size"},
		errCase{"bi-in-depth", biOp, v, seq(ints(1, 5, 5, 3), f64(2, 2, 2, 3), f64(1, 4, 4, 6)), SH, "input and filter must have the same in_depth"},
		errCase{"bi-out-depth", biOp, v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 5)), SH, "depth_multiplier * in_depth not equal to out_depth"},
		errCase{"bi-rows", biOp, v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 3, 4, 6)), SH, "Number of rows of out_backprop doesn't match computed: actual = 3, computed = 4"},
		errCase{"bi-cols", biOp, v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 5, 6)), SH, "Number of cols of out_backprop doesn't match computed: actual = 5, computed = 4"},
		errCase{"bi-dtype", biOp, v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f32(1, 4, 4, 6)), DT, "out_backprop has dtype"},
		errCase{"bi-negative-out", biOp, v, seq(ints(1, 1, 5, 2), f64(4, 2, 2, 3), f64(1, 1, 4, 6)), IA, "Computed output size would be negative"},
		errCase{"bi-too-large", biOp, v, seq(int64s(1, 1<<31, 1, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 6)), IA, "Input rows too large"},
		// DepthwiseConv2dNativeBackpropFilter.
		errCase{"fsizes-rank2", bfOp, v, seq(f64(1, 5, 5, 2), ints2d, f64(1, 4, 4, 6)), IA, "filter_sizes input must be 1-dim, not 2"},
		errCase{"fsizes-negative", bfOp, v, seq(f64(1, 5, 5, 2), ints(2, -1, 2, 3), f64(1, 4, 4, 6)), IA, "Dimension 1 of filter_sizes must be >= 0"},
		errCase{"fsizes-3", bfOp, v, seq(f64(1, 5, 5, 2), ints(2, 2, 2), f64(1, 4, 4, 6)), SH, "filter must be 4-dimensional"},
		errCase{"bf-input-rank3", bfOp, v, seq(f64(5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 6)), SH, "input must be 4-dimensional"},
		errCase{"bf-dy-rank3", bfOp, v, seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(4, 4, 6)), SH, "out_backprop must be 4-dimensional"},
		errCase{"bf-batch", bfOp, v, seq(f64(2, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 6)), SH, "same batch size"},
		errCase{"bf-in-depth", bfOp, v, seq(f64(1, 5, 5, 2), ints(2, 2, 3, 3), f64(1, 4, 4, 6)), SH, "same in_depth"},
		errCase{"bf-out-depth", bfOp, v, seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 7)), SH, "depth_multiplier * in_depth not equal to out_depth"},
		errCase{"bf-rows", bfOp, at([]int{1, 2, 2, 1}, "SAME"), seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 3, 6)), SH, "Number of rows of out_backprop doesn't match computed: actual = 4, computed = 3"},
		errCase{"bf-cols-unequal", bfOp, at([]int{1, 2, 1, 1}, "SAME"), seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 3, 3, 6)), SH, "Number of cols of out_backprop doesn't match computed: actual = 3, computed = 5"},
		errCase{"bf-dtype", bfOp, v, seq(f32(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 6)), DT, "out_backprop has dtype"},
		errCase{"bf-sizes-dtype", bfOp, v, seq(f64(1, 5, 5, 2), f64(4), f64(1, 4, 4, 6)), DT, "filter_sizes"},
		errCase{"bf-too-large", bfOp, v, seq(f64(1, 5, 5, 2), int64s(1<<31, 1, 2, 3), f64(1, 4, 4, 6)), IA, "too large"},
	)
	for _, c := range cases {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.Run(t, c.op, c.attrs, 2, c.in(t)...)
			testutil.WantErr(t, err, c.kind, c.substr, c.op)
		})
	}
}

// TestDepthwiseConv2dEmpty covers the empty-tensor rules (spec §2, §3, §6).
func TestDepthwiseConv2dEmpty(t *testing.T) {
	v := DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	f64 := func(shape ...int) *tensor.Dense {
		return testutil.Dense(t, tensor.Float64, shape, testutil.Arange(testutil.Numel(shape)))
	}
	check := func(name string, out []*tensor.Dense, err error, shape []int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n := testutil.Numel(shape)
		testutil.CloseBound(t, name, out[0], shape, make([]float64, n), make([]float64, n), 0)
	}
	ex := DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0, 0}}
	// M = 0: empty output.
	out, err := registrytest.Run(t, "DepthwiseConv2dNative", v, 1, f64(1, 3, 3, 2), f64(2, 2, 2, 0))
	check("m0", out, err, []int{1, 2, 2, 0})
	// Empty batch.
	out, err = registrytest.Run(t, "DepthwiseConv2dNative", v, 1, f64(0, 3, 3, 2), f64(2, 2, 2, 1))
	check("n0", out, err, []int{0, 2, 2, 2})
	// Empty image with padding: zeros.
	out, err = registrytest.Run(t, "DepthwiseConv2dNative", ex, 1, f64(1, 0, 2, 2), f64(1, 1, 2, 2))
	check("h0-padded", out, err, []int{1, 2, 4, 4})
	// Empty filter window: empty sums.
	out, err = registrytest.Run(t, "DepthwiseConv2dNative", ex, 1, f64(1, 2, 2, 1), f64(0, 1, 1, 2))
	check("kh0", out, err, []int{1, 5, 4, 2})
	// VALID with the input shorter than the filter truncates to an empty axis.
	out, err = registrytest.Run(t, "DepthwiseConv2dNative", DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1, f64(1, 2, 1, 1), f64(1, 3, 1, 1))
	check("degenerate", out, err, []int{1, 2, 0, 1})
	// Backprop input with empty input_sizes returns empty; with an empty
	// out_backprop (degenerate axis), zeros.
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropInput", v, 1, testutil.Ints(t, 0, 2, 3, 1), f64(2, 2, 1, 1), f64(0, 1, 2, 1))
	check("bi-empty", out, err, []int{0, 2, 3, 1})
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropInput", DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1,
		testutil.Ints(t, 1, 2, 1, 1), f64(1, 3, 1, 2), f64(1, 2, 0, 2))
	check("bi-empty-dy", out, err, []int{1, 2, 1, 1})
	// Backprop filter with an empty out_backprop: zeros of filter_sizes.
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropFilter", DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1,
		f64(1, 2, 1, 1), testutil.Ints(t, 1, 3, 1, 2), f64(1, 2, 0, 2))
	check("bf-empty-dy", out, err, []int{1, 3, 1, 2})
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropFilter", v, 1, f64(0, 3, 3, 1), testutil.Ints(t, 2, 2, 1, 1), f64(0, 2, 2, 1))
	check("bf-n0", out, err, []int{2, 2, 1, 1})
	// Backprop filter of an empty filter shape.
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropFilter", v, 1, f64(1, 3, 3, 2), testutil.Ints(t, 2, 2, 2, 0), f64(1, 2, 2, 0))
	check("bf-m0", out, err, []int{2, 2, 2, 0})
}

// TestDepthwiseConv2dNoPanics feeds random small shapes and attrs to the
// three ops: each call returns a result or an error, never an internal
// error.
func TestDepthwiseConv2dNoPanics(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	ops := []string{"DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}
	pick := func(v ...int) int { return v[r.Intn(len(v))] }
	for it := 0; it < 400; it++ {
		shape := func() []int {
			s := make([]int, pick(4, 4, 4, 3))
			for i := range s {
				s[i] = pick(0, 1, 2, 3, 5)
			}
			return s
		}
		a := DepthwiseConv2dAttrs{
			Strides:   []int{1, pick(1, 2, 3), pick(1, 2), 1},
			Padding:   []string{"SAME", "VALID", "EXPLICIT"}[r.Intn(3)],
			Dilations: []int{1, pick(1, 2), pick(1, 3), 1},
		}
		if r.Intn(2) == 0 {
			a.DataFormat = "NCHW"
			a.Strides = []int{1, 1, a.Strides[1], a.Strides[2]}
			a.Dilations = []int{1, 1, a.Dilations[1], a.Dilations[2]}
		}
		if a.Padding == "EXPLICIT" {
			a.ExplicitPaddings = make([]int, 8)
			l := convLayoutOf(a.DataFormat)
			for _, i := range []int{2 * l.h, 2*l.h + 1, 2 * l.w, 2*l.w + 1} {
				a.ExplicitPaddings[i] = pick(0, 1, 4)
			}
		}
		op := ops[r.Intn(3)]
		xs, fs, ys := shape(), shape(), shape()
		var in []*tensor.Dense
		switch op {
		case ops[0]:
			in = []*tensor.Dense{testutil.Dense(t, tensor.Float32, xs, make([]float64, testutil.Numel(xs))), testutil.Dense(t, tensor.Float32, fs, make([]float64, testutil.Numel(fs)))}
		case ops[1]:
			in = []*tensor.Dense{testutil.Ints(t, xs...), testutil.Dense(t, tensor.Float64, fs, make([]float64, testutil.Numel(fs))), testutil.Dense(t, tensor.Float64, ys, make([]float64, testutil.Numel(ys)))}
		default:
			in = []*tensor.Dense{testutil.Dense(t, tensor.Float64, xs, make([]float64, testutil.Numel(xs))), testutil.Ints(t, fs...), testutil.Dense(t, tensor.Float64, ys, make([]float64, testutil.Numel(ys)))}
		}
		out, err := registrytest.Run(t, op, a, 2, in...)
		if errors.Is(err, registry.ErrInternal) {
			t.Fatalf("%s %+v x%v f%v y%v: %v", op, a, xs, fs, ys, err)
		}
		if err == nil {
			for _, v := range testutil.Float64s(t, out[0]) {
				if v != 0 {
					t.Fatalf("%s %+v: zero inputs gave %v", op, a, v)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------
// Benchmarks: workloads W5 and W6 of perf/WORKLOADS.md (NHWC float32),
// kernels alone, on pooled buffers (no page faults of fresh memory). Run
// with -cpu 1 for the 1-thread figures: the thread count is GOMAXPROCS.

type dwBenchAlloc struct{ pool map[string]*tensor.Dense }

func (a *dwBenchAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	k := fmt.Sprint(dt, shape)
	if d, ok := a.pool[k]; ok {
		if zeroed {
			clear(d.Float64s()) // only float64 scratch is asked zeroed here
		}
		return d, nil
	}
	d, err := tensorx.Zeros(dt, shape)
	a.pool[k] = d
	return d, err
}

func (a *dwBenchAlloc) Release(*tensor.Dense) {}

func dwBench(b *testing.B, n, h, w, c, s int, modes ...string) {
	r := rand.New(rand.NewSource(1))
	a := DepthwiseConv2dAttrs{Strides: []int{1, s, s, 1}, Padding: "SAME"}
	oh, ow := (h+s-1)/s, (w+s-1)/s
	x := testutil.Dense(b, tensor.Float32, []int{n, h, w, c}, testutil.Normal(r, n*h*w*c))
	f := testutil.Dense(b, tensor.Float32, []int{3, 3, c, 1}, testutil.Normal(r, 9*c))
	dy := testutil.Dense(b, tensor.Float32, []int{n, oh, ow, c}, testutil.Normal(r, n*oh*ow*c))
	kc := &registry.KernelCtx{Alloc: &dwBenchAlloc{pool: map[string]*tensor.Dense{}}, Threads: runtime.GOMAXPROCS(0)}
	run := func(op string, in ...*tensor.Dense) {
		def, _ := registry.Lookup(op)
		if _, err := registry.Run(def, kc, a, in); err != nil {
			b.Fatal(err)
		}
	}
	step := func() {
		for _, m := range modes {
			switch m {
			case "fwd":
				run("DepthwiseConv2dNative", x, f)
			case "bi":
				run("DepthwiseConv2dNativeBackpropInput", testutil.Ints(b, n, h, w, c), f, dy)
			case "bf":
				run("DepthwiseConv2dNativeBackpropFilter", x, testutil.Ints(b, 3, 3, c, 1), dy)
			}
		}
	}
	step()
	b.ResetTimer()
	cpu0 := dwCPUTime()
	for i := 0; i < b.N; i++ {
		step()
	}
	// The machine is shared: CPU time is steadier than wall time.
	b.ReportMetric(float64(dwCPUTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

// dwCPUTime returns the process's user+system CPU time in nanoseconds.
func dwCPUTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func BenchmarkDepthwiseW5Fwd(b *testing.B)       { dwBench(b, 8, 56, 56, 128, 1, "fwd") }
func BenchmarkDepthwiseW5BwdInput(b *testing.B)  { dwBench(b, 8, 56, 56, 128, 1, "bi") }
func BenchmarkDepthwiseW5BwdFilter(b *testing.B) { dwBench(b, 8, 56, 56, 128, 1, "bf") }
func BenchmarkDepthwiseW5FwdBwd(b *testing.B)    { dwBench(b, 8, 56, 56, 128, 1, "fwd", "bi", "bf") }
func BenchmarkDepthwiseW6Fwd(b *testing.B)       { dwBench(b, 8, 112, 112, 32, 2, "fwd") }
func BenchmarkDepthwiseW6BwdInput(b *testing.B)  { dwBench(b, 8, 112, 112, 32, 2, "bi") }
func BenchmarkDepthwiseW6BwdFilter(b *testing.B) { dwBench(b, 8, 112, 112, 32, 2, "bf") }
func BenchmarkDepthwiseW6FwdBwd(b *testing.B)    { dwBench(b, 8, 112, 112, 32, 2, "fwd", "bi", "bf") }
