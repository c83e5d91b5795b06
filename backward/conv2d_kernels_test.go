package backward_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/conv"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of the kernels of Conv2DBackpropInput and Conv2DBackpropFilter,
// most of them with Conv2D's (forward/conv2d_test.go has Conv2D's own):
// the three ops against the naive float64 reference
// (testutil.NaiveConv), bit-identical across thread counts, TensorFlow's
// spec vectors, errors and empty-tensor rules, random and fuzzed inputs.

// conv2DLayout gives the positions of the N, H, W and C axes of a 4-D
// image tensor (and of the per-axis attr lists) in a data format.
type conv2DLayout struct{ n, h, w, c int }

// conv2DLayoutOf returns the layout of data_format "NHWC" or "NCHW".
func conv2DLayoutOf(format string) conv2DLayout {
	if format == "NCHW" {
		return conv2DLayout{n: 0, c: 1, h: 2, w: 3}
	}
	return conv2DLayout{n: 0, h: 1, w: 2, c: 3}
}

// shape builds a 4-D shape in this layout from its N, H, W, C sizes.
func (l conv2DLayout) shape(n, h, w, c int) []int {
	s := make([]int, 4)
	s[l.n], s[l.h], s[l.w], s[l.c] = n, h, w, c
	return s
}

// conv2DWindowAttrs returns the attrs of a window given in NHWC names:
// strides and dilations in the layout of format, and for EXPLICIT the
// paddings pads (top, bottom, left, right).
func conv2DWindowAttrs(format string, sh, sw, dh, dw int, padding string, pads [4]int) forward.Conv2DAttrs {
	s, d, p := testutil.ConvWindow(format, sh, sw, dh, dw, padding, pads)
	return forward.Conv2DAttrs{Strides: s, Padding: padding, DataFormat: format, Dilations: d, ExplicitPaddings: p}
}

// conv2DAttrsFor returns attrs in the layout of g.
func conv2DAttrsFor(g *testutil.NaiveConv, padding string, pads [4]int) forward.Conv2DAttrs {
	format := "NHWC"
	if g.NCHW {
		format = "NCHW"
	}
	return conv2DWindowAttrs(format, g.SH, g.SW, g.DH, g.DW, padding, pads)
}

type conv2DGridCase struct {
	g       testutil.NaiveConv
	ok      bool // output size non-negative
	padding string
	pads    [4]int
}

func (c *conv2DGridCase) String() string {
	g := &c.g
	f := "NHWC"
	if g.NCHW {
		f = "NCHW"
	}
	return fmt.Sprintf("%s/%s%v/x[%d,%d,%d,%d]/f[%d,%d,%d,%d]/s%d,%d/d%d,%d", f, c.padding, c.pads,
		g.N, g.H, g.W, g.C, g.KH, g.KW, g.CF, g.O, g.SH, g.SW, g.DH, g.DW)
}

// convGrid is the attr grid: both layouts, three paddings, strides 1–3,
// dilations 1–2, 1x1/square/non-square filters, 1–3 groups, odd sizes,
// batch 1–3. Without -long a fixed, spread-out subset runs.
func conv2DGrid(long bool) []conv2DGridCase {
	strides := [][2]int{{1, 1}, {2, 1}, {1, 3}, {2, 2}, {3, 3}}
	dils := [][2]int{{1, 1}, {2, 1}, {1, 2}, {2, 2}}
	filters := [][2]int{{1, 1}, {3, 3}, {2, 3}, {1, 2}}
	groups := [][3]int{{3, 3, 4}, {4, 2, 6}, {3, 1, 3}} // c, cf, o
	inputs := [][2]int{{5, 7}, {8, 6}, {3, 4}}
	var out []conv2DGridCase
	idx := 0
	for _, nchw := range []bool{false, true} {
		for _, padding := range []string{"VALID", "SAME", "EXPLICIT"} {
			for _, s := range strides {
				for _, d := range dils {
					for _, f := range filters {
						for _, gr := range groups {
							for _, in := range inputs {
								idx++
								if !long && idx%29 != 0 && idx%97 != 1 {
									continue
								}
								pads := [4]int{1, 0, 2, 1}
								if idx%2 == 0 {
									pads = [4]int{0, 2, 1, 1}
								}
								if padding != "EXPLICIT" {
									pads = [4]int{}
								}
								n := 1 + idx%3
								g, ok := testutil.NewNaiveConv(nchw, n, in[0], in[1], gr[0], f[0], f[1], gr[1], gr[2], s[0], s[1], d[0], d[1], padding, pads)
								out = append(out, conv2DGridCase{g: g, ok: ok, padding: padding, pads: pads})
							}
						}
					}
				}
			}
		}
	}
	return out
}

// conv2DCheckCase runs the three ops of one geometry in float64 and float32,
// with 1 and 3 threads, against the naive reference.
func conv2DCheckCase(t *testing.T, c *conv2DGridCase, seed int64) {
	t.Helper()
	ops := [3]string{"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"}
	registrytest.CheckConvRef(t, c, ops, &c.g, c.ok, conv2DAttrsFor(&c.g, c.padding, c.pads), seed)
}

func TestConv2DGrid(t *testing.T) {
	cases := conv2DGrid(testutil.Long())
	if len(cases) < 100 {
		t.Fatalf("grid has only %d cases", len(cases))
	}
	t.Logf("%d configurations (all: -long)", len(cases))
	for i := range cases {
		conv2DCheckCase(t, &cases[i], int64(i))
	}
}

// TestConv2DChunking uses shapes large enough to need several im2col
// chunks of the strided input gradient (whole-image chunks, chunks
// splitting an image) and several filter-gradient chunks, then runs them
// again with the filter gradient's chunks and partial budget shrunk, so
// that chunks start and end anywhere in an image and take several
// reduction rounds.
func TestConv2DChunking(t *testing.T) {
	type cfg struct {
		n, h, w, c, k, cf, o, s int
		padding                 string
		nchw                    bool
	}
	cases := []cfg{
		{n: 5, h: 22, w: 22, c: 64, k: 3, cf: 64, o: 2, s: 1, padding: "SAME"},             // one filter chunk
		{n: 5, h: 22, w: 22, c: 64, k: 3, cf: 64, o: 2, s: 2, padding: "SAME"},             // strided: split images
		{n: 1000, h: 8, w: 8, c: 1, k: 3, cf: 1, o: 2, s: 1, padding: "VALID"},             // 12 filter chunks
		{n: 300, h: 8, w: 8, c: 1, k: 3, cf: 1, o: 2, s: 2, padding: "VALID"},              // strided: whole images
		{n: 1, h: 33, w: 31, c: 64, k: 3, cf: 32, o: 4, s: 1, padding: "SAME", nchw: true}, // groups, NCHW
		{n: 4, h: 20, w: 20, c: 96, k: 1, cf: 96, o: 3, s: 1, padding: "VALID"},            // direct 1x1
	}
	run := func(seed int64) {
		for _, c := range cases {
			g, ok := testutil.NewNaiveConv(c.nchw, c.n, c.h, c.w, c.c, c.k, c.k, c.cf, c.o, c.s, c.s, 1, 1, c.padding, [4]int{})
			if !ok {
				t.Fatal("bad chunking case")
			}
			cc := conv2DGridCase{g: g, ok: true, padding: c.padding}
			conv2DCheckCase(t, &cc, seed)
		}
	}
	run(7)
	defer conv.SetFilterChunking(37, 3000)()
	run(8)
}

// TestConv2DDirectPaths checks the no-im2col paths against the general
// one: 1x1 stride 1 (with groups) and a filter covering the whole input.
func TestConv2DDirectPaths(t *testing.T) {
	for _, c := range []conv2DGridCase{
		{padding: "SAME"}, {padding: "VALID"}, {padding: "EXPLICIT"},
	} {
		for _, gr := range [][3]int{{4, 4, 3}, {4, 2, 6}, {6, 1, 6}} {
			c.g, c.ok = testutil.NewNaiveConv(false, 2, 3, 5, gr[0], 1, 1, gr[1], gr[2], 1, 1, 2, 1, c.padding, [4]int{})
			conv2DCheckCase(t, &c, 3)
			c.g, c.ok = testutil.NewNaiveConv(true, 2, 3, 5, gr[0], 1, 1, gr[1], gr[2], 1, 1, 1, 1, c.padding, [4]int{})
			conv2DCheckCase(t, &c, 4)
		}
		// Whole-input filter (one output pixel per image).
		c.g, c.ok = testutil.NewNaiveConv(false, 3, 4, 3, 2, 4, 3, 2, 5, 1, 2, 1, 1, "VALID", [4]int{})
		c.padding = "VALID"
		conv2DCheckCase(t, &c, 5)
		c.g, c.ok = testutil.NewNaiveConv(true, 3, 4, 3, 2, 4, 3, 2, 5, 5, 5, 1, 1, "SAME", [4]int{})
		c.padding = "SAME"
		conv2DCheckCase(t, &c, 6)
	}
}

// TestConv2DBackpropSamples runs the samples of the backprop ops: every
// one computes, without NaN.
func TestConv2DBackpropSamples(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range []string{"Conv2DBackpropInput", "Conv2DBackpropFilter"} {
		samples, outs := registrytest.RunSamples(t, op, r, 8, registrytest.KC(0))
		for i, s := range samples {
			for _, v := range testutil.Float64s(t, outs[i][0]) {
				if math.IsNaN(v) {
					t.Fatalf("%s %s: NaN in output", op, s.Name)
				}
			}
		}
	}
}

// The backprops' spec test vectors (spec/conv2d.md §7): arange inputs,
// NHWC, run as given and converted to NCHW, in float64 and float32.

type conv2DVector struct {
	id       string
	op       string
	x, f, dy []int // shapes (NHWC); x or f is the size vector for backprops
	sizes    []int // input_sizes / filter_sizes values
	strides  [2]int
	dil      [2]int
	padding  string
	explicit [4]int
	outShape []int
	want     []float64 // nil: all zeros
}

var conv2DVectors = []conv2DVector{
	{id: "BI1", op: "Conv2DBackpropInput", sizes: []int{1, 2, 3, 1}, f: []int{2, 2, 1, 1}, dy: []int{1, 1, 2, 1}, padding: "VALID", outShape: []int{1, 2, 3, 1},
		want: []float64{1, 4, 4, 3, 10, 8}},
	{id: "BI2", op: "Conv2DBackpropInput", sizes: []int{1, 2, 3, 3}, f: []int{2, 2, 3, 3}, dy: []int{1, 1, 2, 3}, padding: "VALID", outShape: []int{1, 2, 3, 3},
		want: []float64{14, 32, 50, 100, 163, 226, 167, 212, 257, 122, 140, 158, 478, 541, 604, 437, 482, 527}},
	{id: "BI3", op: "Conv2DBackpropInput", sizes: []int{1, 3, 6, 1}, f: []int{2, 2, 1, 1}, dy: []int{1, 2, 3, 1}, strides: [2]int{1, 2}, padding: "VALID", outShape: []int{1, 3, 6, 1},
		want: []float64{1, 2, 2, 4, 3, 6, 7, 12, 11, 18, 15, 24, 12, 16, 15, 20, 18, 24}},
	{id: "BI4", op: "Conv2DBackpropInput", sizes: []int{1, 4, 4, 1}, f: []int{1, 1, 1, 1}, dy: []int{1, 2, 2, 1}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 4, 4, 1},
		want: []float64{1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0}},
	{id: "BI5", op: "Conv2DBackpropInput", sizes: []int{1, 2, 2, 1}, f: []int{2, 2, 1, 2}, dy: []int{1, 1, 1, 2}, padding: "VALID", outShape: []int{1, 2, 2, 1},
		want: []float64{5, 11, 17, 23}},
	{id: "BI6", op: "Conv2DBackpropInput", sizes: []int{2, 2}, f: []int{2, 2, 1, 2}, dy: []int{1, 1, 1, 2}, padding: "VALID", outShape: []int{1, 2, 2, 1},
		want: []float64{5, 11, 17, 23}},
	{id: "BI7", op: "Conv2DBackpropInput", sizes: []int{3, 1, 1, 2}, f: []int{1, 3, 2, 3}, dy: []int{3, 1, 0, 3}, strides: [2]int{1, 2}, padding: "VALID", outShape: []int{3, 1, 1, 2}},
	{id: "BI8", op: "Conv2DBackpropInput", sizes: []int{0, 2, 3, 1}, f: []int{2, 2, 1, 1}, dy: []int{0, 1, 2, 1}, padding: "VALID", outShape: []int{0, 2, 3, 1}, want: []float64{}},

	{id: "BF1", op: "Conv2DBackpropFilter", x: []int{1, 2, 3, 1}, sizes: []int{2, 2, 1, 1}, dy: []int{1, 1, 2, 1}, padding: "VALID", outShape: []int{2, 2, 1, 1},
		want: []float64{5, 8, 14, 17}},
	{id: "BF2", op: "Conv2DBackpropFilter", x: []int{1, 2, 3, 3}, sizes: []int{2, 2, 3, 3}, dy: []int{1, 1, 2, 3}, padding: "VALID", outShape: []int{2, 2, 3, 3},
		want: []float64{17, 22, 27, 22, 29, 36, 27, 36, 45, 32, 43, 54, 37, 50, 63, 42, 57, 72, 62, 85, 108, 67, 92, 117, 72, 99, 126, 77, 106, 135, 82, 113, 144, 87, 120, 153}},
	{id: "BF3", op: "Conv2DBackpropFilter", x: []int{1, 3, 6, 1}, sizes: []int{2, 2, 1, 1}, dy: []int{1, 2, 3, 1}, strides: [2]int{1, 2}, padding: "VALID", outShape: []int{2, 2, 1, 1},
		want: []float64{161, 182, 287, 308}},
	{id: "BF4", op: "Conv2DBackpropFilter", x: []int{1, 4, 4, 1}, sizes: []int{1, 1, 1, 1}, dy: []int{1, 2, 2, 1}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 1, 1, 1},
		want: []float64{78}},
	{id: "BF5", op: "Conv2DBackpropFilter", x: []int{1, 2, 2, 1}, sizes: []int{2, 2, 1, 2}, dy: []int{1, 1, 1, 2}, padding: "VALID", outShape: []int{2, 2, 1, 2},
		want: []float64{1, 2, 2, 4, 3, 6, 4, 8}},
	{id: "BF6", op: "Conv2DBackpropFilter", x: []int{0, 2, 3, 1}, sizes: []int{2, 2, 1, 1}, dy: []int{0, 1, 2, 1}, padding: "VALID", outShape: []int{2, 2, 1, 1}},
	{id: "BF7", op: "Conv2DBackpropFilter", x: []int{1, 2, 3, 1}, sizes: []int{2, 2, 1, 0}, dy: []int{1, 1, 2, 0}, padding: "VALID", outShape: []int{2, 2, 1, 0}, want: []float64{}},
}

func (v *conv2DVector) attrs(nchw bool) forward.Conv2DAttrs {
	format := "NHWC"
	if nchw {
		format = "NCHW"
	}
	return conv2DWindowAttrs(format, max(1, v.strides[0]), max(1, v.strides[1]), max(1, v.dil[0]), max(1, v.dil[1]), v.padding, v.explicit)
}

func TestConv2DBackpropSpecVectors(t *testing.T) {
	for _, v := range conv2DVectors {
		for _, nchw := range []bool{false, true} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				name := fmt.Sprintf("%s/nchw=%v/%v", v.id, nchw, dt)
				// image makes an NHWC arange tensor, transposed for NCHW.
				image := func(s []int) *tensor.Dense {
					vals := testutil.Arange(testutil.Numel(s))
					if nchw {
						vals, s = testutil.NHWCToNCHW(vals, s)
					}
					return testutil.Dense(t, dt, s, vals)
				}
				var in []*tensor.Dense
				switch v.op {
				case "Conv2DBackpropInput":
					sizes := v.sizes
					if nchw && len(sizes) == 4 {
						sizes = []int{sizes[0], sizes[3], sizes[1], sizes[2]}
					}
					in = []*tensor.Dense{testutil.Ints(t, sizes...), testutil.Dense(t, dt, v.f, testutil.Arange(testutil.Numel(v.f))), image(v.dy)}
				default:
					in = []*tensor.Dense{image(v.x), testutil.Ints(t, v.sizes...), image(v.dy)}
				}
				out, err := registrytest.Run(t, v.op, v.attrs(nchw), 2, in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want, shape := v.want, v.outShape
				if want == nil {
					want = make([]float64, testutil.Numel(shape))
				}
				if nchw && v.op != "Conv2DBackpropFilter" {
					want, shape = testutil.NHWCToNCHW(want, shape)
				}
				testutil.CloseBound(t, name, out[0], shape, want, make([]float64, len(want)), 0)
			}
		}
	}
}

type conv2DErrCase struct {
	name   string
	op     string
	attrs  any
	in     func(t testing.TB) []*tensor.Dense
	kind   error
	substr string
}

// TestConv2DBackpropErrors checks the backprops' errors: the attr errors
// they share with Conv2D, then their own inputs'.
func TestConv2DBackpropErrors(t *testing.T) {
	f64, f32, ints, int64s, seq := testutil.Float64Zeros, testutil.Float32Zeros, testutil.IntsFn, testutil.Int64sFn, testutil.Seq
	ints2d := func(t testing.TB) *tensor.Dense {
		d, err := tensorx.New([]int{2, 2}, []int32{1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	s1 := []int{1, 1, 1, 1}
	at := func(strides []int, padding string) forward.Conv2DAttrs {
		return forward.Conv2DAttrs{Strides: strides, Padding: padding}
	}
	bi := seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 3))
	bf := seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 3))
	IA, UN, SH, DT := registry.ErrInvalidArgument, registry.ErrUnimplemented, registry.ErrShape, registry.ErrDtype
	var cases []conv2DErrCase
	// Attr errors, for both ops.
	for _, o := range []struct {
		op string
		in func(t testing.TB) []*tensor.Dense
		bd error // kind of the batch/depth stride error
	}{{"Conv2DBackpropInput", bi, UN}, {"Conv2DBackpropFilter", bf, IA}} {
		cases = append(cases,
			conv2DErrCase{"padding", o.op, at(s1, "FULL"), o.in, IA, "allowed values"},
			conv2DErrCase{"no-padding", o.op, forward.Conv2DAttrs{Strides: s1}, o.in, IA, "padding"},
			conv2DErrCase{"data-format", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCDHW"}, o.in, IA, "allowed values"},
			conv2DErrCase{"no-strides", o.op, forward.Conv2DAttrs{Padding: "VALID"}, o.in, IA, "strides"},
			conv2DErrCase{"strides-3", o.op, at([]int{1, 1, 1}, "VALID"), o.in, IA, "strides field must specify 4 dimensions"},
			conv2DErrCase{"dilations-3", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 1}}, o.in, IA, "dilations field must specify 4 dimensions"},
			conv2DErrCase{"stride-batch", o.op, at([]int{2, 1, 1, 1}, "VALID"), o.in, o.bd, "strides in the batch and depth"},
			conv2DErrCase{"stride-depth", o.op, at([]int{1, 1, 1, 2}, "VALID"), o.in, o.bd, "strides in the batch and depth"},
			conv2DErrCase{"stride-depth-nchw", o.op, forward.Conv2DAttrs{Strides: []int{1, 2, 1, 1}, Padding: "VALID", DataFormat: "NCHW"}, o.in, o.bd, "strides in the batch and depth"},
			conv2DErrCase{"stride-0", o.op, at([]int{1, 0, 1, 1}, "VALID"), o.in, IA, "Row and column strides should be larger than 0"},
			conv2DErrCase{"dilation-batch", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{2, 1, 1, 1}}, o.in, o.bd, "dilations in the batch and depth"},
			conv2DErrCase{"dilation-0", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, -1, 1}}, o.in, IA, "Dilated rates should be larger than 0"},
			conv2DErrCase{"explicit-count", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0}}, o.in, IA, "must contain 8 values, but got: 7"},
			conv2DErrCase{"explicit-negative", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, -1, 1, 1, 1, 0, 0}}, o.in, IA, "must be nonnegative"},
			conv2DErrCase{"explicit-batch", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			conv2DErrCase{"explicit-depth-nchw", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", DataFormat: "NCHW", ExplicitPaddings: []int{0, 0, 0, 1, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			conv2DErrCase{"explicit-not-explicit", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "SAME", ExplicitPaddings: []int{0, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "must be empty if the padding attribute is not EXPLICIT"},
			conv2DErrCase{"explicit-too-large", o.op, forward.Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1 << 31, 0, 0, 0, 0, 0}}, o.in, IA, "too large"},
		)
	}
	v := at(s1, "VALID")
	cases = append(cases,
		// Conv2DBackpropInput inputs.
		conv2DErrCase{"sizes-rank2", "Conv2DBackpropInput", v, seq(ints2d, f64(2, 2, 2, 3), f64(1, 4, 4, 3)), IA, "input_sizes input must be 1-dim, not 2"},
		conv2DErrCase{"sizes-3", "Conv2DBackpropInput", v, seq(ints(1, 5, 5), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), IA, "requires input_sizes to contain 4 values or 2 values, but got: 3"},
		conv2DErrCase{"sizes-negative-2", "Conv2DBackpropInput", v, seq(ints(-1, 5), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), IA, "elements of input_sizes must be >= 0"},
		conv2DErrCase{"sizes-negative-4", "Conv2DBackpropInput", v, seq(ints(1, -1, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), IA, "Dimension -1 must be >= 0"},
		conv2DErrCase{"sizes-float", "Conv2DBackpropInput", v, seq(f64(4), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), DT, "input_sizes"},
		conv2DErrCase{"dy-rank3", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(4, 4, 3)), SH, "input_sizes must be 4-dimensional, got: 3"},
		conv2DErrCase{"bi-filter-rank3", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 2), f64(2, 2, 2), f64(1, 4, 4, 3)), SH, "filter must be 4-dimensional"},
		conv2DErrCase{"bi-batch", "Conv2DBackpropInput", v, seq(ints(2, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), SH, "input and out_backprop must have the same batch size"},
		conv2DErrCase{"bi-filter-depth-0", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 2), f64(2, 2, 0, 3), f64(1, 4, 4, 3)), IA, "filter depth must be strictly greated than zero"},
		conv2DErrCase{"bi-depth-multiple", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 3), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), SH, "input depth must be evenly divisible by filter depth"},
		conv2DErrCase{"bi-out-depth", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 2)), SH, "filter and out_backprop must have the same out_depth"},
		conv2DErrCase{"bi-groups-out", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 4), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), IA, "output depth must be evenly divisible by number of groups"},
		conv2DErrCase{"bi-spatial", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 3, 3)), SH, "Size of out_backprop doesn't match computed: actual = 3, computed = 4"},
		conv2DErrCase{"bi-dtype", "Conv2DBackpropInput", v, seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f32(1, 4, 4, 3)), DT, "out_backprop has dtype"},
		conv2DErrCase{"bi-negative-out", "Conv2DBackpropInput", v, seq(ints(1, 1, 5, 2), f64(4, 2, 2, 3), f64(1, 1, 4, 3)), IA, "Computed output size would be negative"},
		// Conv2DBackpropFilter inputs.
		conv2DErrCase{"fsizes-rank2", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 2), ints2d, f64(1, 4, 4, 3)), IA, "filter_sizes input must be 1-dim, not 2"},
		conv2DErrCase{"fsizes-negative", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 2), ints(2, -1, 2, 3), f64(1, 4, 4, 3)), IA, "Dimension -1 must be >= 0"},
		conv2DErrCase{"fsizes-3", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 2), ints(2, 2, 2), f64(1, 4, 4, 3)), SH, "filter must be 4-dimensional"},
		conv2DErrCase{"bf-input-rank3", "Conv2DBackpropFilter", v, seq(f64(5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 3)), SH, "input must be 4-dimensional"},
		conv2DErrCase{"bf-dy-rank3", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(4, 4, 3)), SH, "out_backprop must be 4-dimensional"},
		conv2DErrCase{"bf-batch", "Conv2DBackpropFilter", v, seq(f64(2, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 3)), SH, "same batch size"},
		conv2DErrCase{"bf-depth-multiple", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 3), ints(2, 2, 2, 3), f64(1, 4, 4, 3)), SH, "input depth must be evenly divisible by filter depth"},
		conv2DErrCase{"bf-out-depth", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 4)), SH, "same out_depth"},
		conv2DErrCase{"bf-spatial", "Conv2DBackpropFilter", at([]int{1, 2, 2, 1}, "SAME"), seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 3)), SH, "Size of out_backprop doesn't match computed: actual = 4, computed = 3"},
		conv2DErrCase{"bf-dtype", "Conv2DBackpropFilter", v, seq(f32(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 3)), DT, "out_backprop has dtype"},
		conv2DErrCase{"bf-too-large", "Conv2DBackpropFilter", v, seq(f64(1, 5, 5, 2), int64s(1<<31, 1, 1, 3), f64(1, 4, 4, 3)), IA, "filter too large"},
		conv2DErrCase{"bi-too-large", "Conv2DBackpropInput", v, seq(int64s(1, 1<<31, 1, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 3)), IA, "too large"},
	)
	for _, c := range cases {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.Run(t, c.op, c.attrs, 2, c.in(t)...)
			testutil.WantErr(t, err, c.kind, c.substr, c.op)
		})
	}
}

// TestConv2DBackpropEmpty covers the backprops' empty-tensor rules of
// spec §2–§3 beyond the spec vectors.
func TestConv2DBackpropEmpty(t *testing.T) {
	v := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	f64 := func(shape ...int) *tensor.Dense { return testutil.ArangeFloat64s(t, shape...) }
	check := func(name string, out []*tensor.Dense, err error, shape []int) {
		t.Helper()
		testutil.WantZeros(t, name, out, err, shape)
	}
	// Backprop filter with an empty out_backprop (and non-empty input): zeros.
	out, err := registrytest.Run(t, "Conv2DBackpropFilter", forward.Conv2DAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1,
		f64(1, 2, 1, 1), testutil.Ints(t, 1, 3, 1, 2), f64(1, 2, 0, 2))
	check("bf-empty-dy", out, err, []int{1, 3, 1, 2})
	// Backprop filter of an empty filter shape (also one with Cf = 0):
	// empty, before any other shape check (TensorFlow's kernel order).
	out, err = registrytest.Run(t, "Conv2DBackpropFilter", v, 1, f64(1, 5, 5, 2), testutil.Ints(t, 2, 2, 0, 3), f64(1, 4, 4, 3))
	check("bf-cf0", out, err, []int{2, 2, 0, 3})
	// Backprop input with an empty filter (KW = 0) and non-empty dy: zeros.
	out, err = registrytest.Run(t, "Conv2DBackpropInput", v, 1, testutil.Ints(t, 1, 2, 2, 1), f64(1, 0, 1, 1), f64(1, 2, 3, 1))
	check("bi-empty-filter", out, err, []int{1, 2, 2, 1})
}

// TestConv2DRandomized throws random (often invalid) shapes, sizes and
// attrs at the three ops: every call either fails with a non-internal
// error naming the op, or succeeds with the right shape, fully written
// (the allocator poisons outputs with NaN), and — for Conv2D — the values
// of the naive reference.
func TestConv2DRandomized(t *testing.T) {
	r := rand.New(rand.NewSource(99))
	iters := 3000
	if testutil.Long() {
		iters = 50000
	}
	pick := func(v ...int) int { return v[r.Intn(len(v))] }
	list := func(n int, v ...int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = pick(v...)
		}
		return out
	}
	okCount := map[string]int{}
	for it := 0; it < iters; it++ {
		format := []string{"NHWC", "NCHW"}[r.Intn(2)]
		l := conv2DLayoutOf(format)
		padding := []string{"SAME", "VALID", "EXPLICIT"}[r.Intn(3)]
		a := forward.Conv2DAttrs{Padding: padding, DataFormat: format}
		a.Strides = l.shape(1, pick(1, 1, 2, 3), pick(1, 1, 2, 3), 1)
		a.Dilations = l.shape(1, pick(1, 1, 2), pick(1, 1, 2), 1)
		if r.Intn(10) == 0 {
			a.Strides = list(pick(3, 4, 4), -1, 0, 1, 2)
		}
		if r.Intn(10) == 0 {
			a.Dilations = list(pick(3, 4, 4), -1, 0, 1, 2)
		}
		if padding == "EXPLICIT" {
			a.ExplicitPaddings = make([]int, 8)
			for _, ax := range []int{l.h, l.w} {
				a.ExplicitPaddings[2*ax], a.ExplicitPaddings[2*ax+1] = pick(0, 1, 2), pick(0, 1, 3)
			}
			if r.Intn(10) == 0 {
				a.ExplicitPaddings = list(pick(7, 8, 8), -1, 0, 1)
			}
		} else if r.Intn(20) == 0 {
			a.ExplicitPaddings = list(8, 0)
		}
		// Mostly valid shapes (C a multiple of Cf, O of the groups), with
		// zeros, wrong ranks and mismatches mixed in.
		rare := func(v, alt int) int {
			if r.Intn(12) == 0 {
				return alt
			}
			return v
		}
		cf, groups := rare(pick(1, 2, 3), 0), pick(1, 1, 2, 3)
		c := rare(cf*groups, pick(0, 1, 2, 5))
		o := rare(groups*pick(1, 2), pick(0, 1, 3))
		dims := func() []int {
			s := l.shape(rare(pick(1, 2), 0), rare(pick(1, 3, 4, 6), 0), rare(pick(1, 2, 5), 0), c)
			if r.Intn(15) == 0 {
				s = s[:pick(2, 3)]
			}
			return s
		}
		xs := dims()
		fs := []int{rare(pick(1, 2, 3), 0), pick(1, 2, 3), cf, o}
		if r.Intn(15) == 0 {
			fs = fs[:3]
		}
		dys := dims()
		var pads [4]int
		if padding == "EXPLICIT" && len(a.ExplicitPaddings) == 8 {
			pads = [4]int{a.ExplicitPaddings[2*l.h], a.ExplicitPaddings[2*l.h+1], a.ExplicitPaddings[2*l.w], a.ExplicitPaddings[2*l.w+1]}
		}
		// naive returns the reference geometry of input shape x (ok false
		// when the shapes or attrs are not a valid convolution).
		attrsOK := len(a.Strides) == 4 && len(a.Dilations) == 4
		for _, v := range [][]int{a.Strides, a.Dilations} {
			attrsOK = attrsOK && v[l.n] == 1 && v[l.c] == 1 && v[l.h] > 0 && v[l.w] > 0
		}
		if padding == "EXPLICIT" {
			attrsOK = attrsOK && len(a.ExplicitPaddings) == 8
			for i, p := range a.ExplicitPaddings {
				attrsOK = attrsOK && p >= 0 && (p == 0 || i/2 == l.h || i/2 == l.w)
			}
		} else {
			attrsOK = attrsOK && len(a.ExplicitPaddings) == 0
		}
		naive := func(x []int) (testutil.NaiveConv, bool) {
			if !attrsOK || len(x) != 4 || len(fs) != 4 || fs[2] <= 0 || x[l.c]%fs[2] != 0 {
				return testutil.NaiveConv{}, false
			}
			if gr := x[l.c] / fs[2]; gr > 0 && fs[3]%gr != 0 { // C = 0: an empty input
				return testutil.NaiveConv{}, false
			}
			return testutil.NewNaiveConv(format == "NCHW", x[l.n], x[l.h], x[l.w], x[l.c], fs[0], fs[1], fs[2], fs[3],
				a.Strides[l.h], a.Strides[l.w], a.Dilations[l.h], a.Dilations[l.w], padding, pads)
		}
		if g, ok := naive(xs); ok && r.Intn(4) != 0 {
			dys = g.YShape() // mostly consistent shapes, so the kernels compute
		}
		dt := []tensor.Dtype{tensor.Float64, tensor.Float32}[r.Intn(2)]
		mk := func(s []int) *tensor.Dense {
			return testutil.Dense(t, dt, s, testutil.Normal(r, testutil.Numel(s)))
		}
		var op string
		var in []*tensor.Dense
		var want []int
		switch r.Intn(3) {
		case 0:
			op, in = "Conv2D", []*tensor.Dense{mk(xs), mk(fs)}
		case 1:
			sizes := xs
			if len(sizes) == 4 && r.Intn(4) == 0 {
				sizes = []int{sizes[l.h], sizes[l.w]}
			}
			if r.Intn(10) == 0 {
				sizes = list(pick(1, 3, 4), -1, 0, 2)
			}
			op, in, want = "Conv2DBackpropInput", []*tensor.Dense{testutil.Ints(t, sizes...), mk(fs), mk(dys)}, sizes
			if len(sizes) == 2 && len(dys) == 4 && len(fs) == 4 {
				want = l.shape(dys[l.n], sizes[0], sizes[1], fs[2])
			}
		default:
			sizes := fs
			if r.Intn(10) == 0 {
				sizes = list(pick(3, 4, 5), -1, 0, 2)
			}
			op, in, want = "Conv2DBackpropFilter", []*tensor.Dense{mk(xs), testutil.Ints(t, sizes...), mk(dys)}, sizes
		}
		out, err := registrytest.Run(t, op, a, 1+it%3, in...)
		name := fmt.Sprintf("#%d %s %+v %v", it, op, a, []any{xs, fs, dys})
		if err != nil {
			if errors.Is(err, registry.ErrInternal) || !strings.Contains(err.Error(), op) {
				t.Fatalf("%s: %v", name, err)
			}
			continue
		}
		got := testutil.Float64s(t, out[0])
		for _, v := range got {
			if math.IsNaN(v) {
				t.Fatalf("%s: unwritten (NaN) output element", name)
			}
		}
		zeros := make([]float64, len(got))
		rel := 1e-13
		if dt == tensor.Float32 {
			rel = 3e-6
		}
		switch op {
		case "Conv2D":
			g, ok := naive(xs)
			if !ok {
				t.Fatalf("%s: succeeded on an invalid convolution", name)
			}
			ys := g.YShape()
			if tensorx.Len(in[0]) == 0 || testutil.Numel(ys) == 0 {
				testutil.CloseBound(t, name, out[0], ys, zeros, zeros, 0)
				break
			}
			okCount[op]++
			xv, fv := testutil.Float64s(t, in[0]), testutil.Float64s(t, in[1])
			testutil.CloseBound(t, name, out[0], ys, g.Forward(xv, fv), g.Forward(testutil.Abs(xv), testutil.Abs(fv)), rel)
		case "Conv2DBackpropInput":
			if len(got) == 0 || tensorx.Len(in[2]) == 0 {
				testutil.CloseBound(t, name, out[0], want, zeros, zeros, 0)
				break
			}
			g, ok := naive(want)
			if !ok || !tensorx.SameShape(g.YShape(), dys) {
				t.Fatalf("%s: succeeded on inconsistent shapes", name)
			}
			okCount[op]++
			fv, dyv := testutil.Float64s(t, in[1]), testutil.Float64s(t, in[2])
			testutil.CloseBound(t, name, out[0], want, g.BackpropInput(fv, dyv), g.BackpropInput(testutil.Abs(fv), testutil.Abs(dyv)), rel)
		default:
			if len(got) == 0 || tensorx.Len(in[0]) == 0 {
				testutil.CloseBound(t, name, out[0], want, zeros, zeros, 0)
				break
			}
			g, ok := naive(xs)
			if !ok || !tensorx.SameShape(g.YShape(), dys) || !tensorx.SameShape(want, fs) {
				t.Fatalf("%s: succeeded on inconsistent shapes", name)
			}
			okCount[op]++
			xv, dyv := testutil.Float64s(t, in[0]), testutil.Float64s(t, in[2])
			testutil.CloseBound(t, name, out[0], want, g.BackpropFilter(xv, dyv), g.BackpropFilter(testutil.Abs(xv), testutil.Abs(dyv)), rel)
		}
	}
	t.Logf("successful calls: %v of %d", okCount, iters)
	for _, op := range []string{"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"} {
		if okCount[op] < iters/50 {
			t.Fatalf("too few successful %s calls (%d): the generator is off", op, okCount[op])
		}
	}
}

// TestConv2DBackpropFilterFloat32Accuracy sums 2^18 positive products per
// filter element in float32: the chunked float64 reduction keeps the
// relative error near float32's rounding of the result.
func TestConv2DBackpropFilterFloat32Accuracy(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	const n, h, w = 4, 256, 256
	xv, dyv := make([]float64, n*h*w), make([]float64, n*h*w*2)
	for i := range xv {
		xv[i] = float64(float32(0.5 + r.Float64()))
	}
	for i := range dyv {
		dyv[i] = float64(float32(0.5 + r.Float64()))
	}
	a := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	out, err := registrytest.Run(t, "Conv2DBackpropFilter", a, 2, testutil.Dense(t, tensor.Float32, []int{n, h, w, 1}, xv),
		testutil.Ints(t, 1, 1, 1, 2), testutil.Dense(t, tensor.Float32, []int{n, h, w, 2}, dyv))
	if err != nil {
		t.Fatal(err)
	}
	got := testutil.Float64s(t, out[0])
	for o := 0; o < 2; o++ {
		var want float64
		for i, x := range xv {
			want += x * dyv[2*i+o]
		}
		if rel := math.Abs(got[o]-want) / want; rel > 2e-7 {
			t.Fatalf("filter gradient %d = %v, want %v (relative error %.2g)", o, got[o], want, rel)
		}
	}
}

// FuzzConv2D feeds arbitrary small shapes, sizes and attrs to the three
// ops: bad input must give an error naming the op, never a panic, and a
// result must be fully written.
// Run: go test ./backward -run '^$' -fuzz FuzzConv2D -fuzztime 20s
func FuzzConv2D(f *testing.F) {
	f.Add(uint8(0), uint8(0), []byte{1, 5, 5, 2, 3, 3, 2, 3, 1, 1, 1, 1, 0, 0, 0, 0})
	f.Add(uint8(1), uint8(5), []byte{1, 4, 4, 3, 2, 2, 1, 3, 2, 1, 1, 2, 1, 0, 2, 1})
	f.Add(uint8(2), uint8(10), []byte{2, 3, 6, 4, 1, 3, 2, 2, 1, 3, 2, 1, 0, 1, 0, 3})
	f.Fuzz(func(t *testing.T, opSel, mode uint8, b []byte) {
		if len(b) < 16 {
			return
		}
		v := func(i int) int { return int(int8(b[i])) % 9 } // small, possibly negative
		format := []string{"NHWC", "NCHW"}[mode&1]
		padding := []string{"SAME", "VALID", "EXPLICIT", "FULL"}[(mode>>1)&3]
		l := conv2DLayoutOf(format)
		a := forward.Conv2DAttrs{Padding: padding, DataFormat: format,
			Strides: l.shape(1+int(mode>>6&1), v(8), v(9), 1), Dilations: l.shape(1, v(10), v(11), 1)}
		if padding == "EXPLICIT" {
			a.ExplicitPaddings = make([]int, 8)
			a.ExplicitPaddings[2*l.h], a.ExplicitPaddings[2*l.h+1] = v(12), v(13)
			a.ExplicitPaddings[2*l.w], a.ExplicitPaddings[2*l.w+1] = v(14), v(15)
		}
		abs := func(i int) int { return max(0, v(i)) }
		xs := l.shape(abs(0), abs(1), abs(2), abs(3))
		fs := []int{abs(4), abs(5), abs(6), abs(7)}
		r := rand.New(rand.NewSource(int64(len(b))))
		mk := func(s []int) *tensor.Dense {
			return testutil.Dense(t, tensor.Float64, s, testutil.Normal(r, testutil.Numel(s)))
		}
		var op string
		var in []*tensor.Dense
		switch opSel % 3 {
		case 0:
			op, in = "Conv2D", []*tensor.Dense{mk(xs), mk(fs)}
		case 1:
			dys := l.shape(abs(0), abs(12), abs(13), abs(7))
			if len(b) > 16 {
				dys[l.h] = int(b[16]) % 7
			}
			op, in = "Conv2DBackpropInput", []*tensor.Dense{testutil.Ints(t, xs...), mk(fs), mk(dys)}
		default:
			dys := l.shape(abs(0), abs(12), abs(13), abs(7))
			op, in = "Conv2DBackpropFilter", []*tensor.Dense{mk(xs), testutil.Ints(t, fs...), mk(dys)}
		}
		out, err := registrytest.Run(t, op, a, 1+int(mode>>7), in...)
		if err != nil {
			if errors.Is(err, registry.ErrInternal) || !strings.Contains(err.Error(), op) {
				t.Fatalf("%s %+v %v: %v", op, a, in, err)
			}
			return
		}
		for _, x := range testutil.Float64s(t, out[0]) {
			if math.IsNaN(x) {
				t.Fatalf("%s %+v: unwritten output element", op, a)
			}
		}
	})
}
