package forward

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// ---------------------------------------------------------------------
// Test helpers.

// dwAttrsFor returns the attrs of the reference case c.
func dwAttrsFor(c *testutil.DepthwiseCase) DepthwiseConv2dAttrs {
	format, s, d, p := c.Window()
	return DepthwiseConv2dAttrs{Strides: s, Padding: c.Padding, DataFormat: format, Dilations: d, ExplicitPaddings: p}
}

// ---------------------------------------------------------------------
// Grid against the reference (testutil.DepthwiseRef, written from
// spec/depthwise_conv2d.md §2–§3 and the padding table of docs/spec/README.md).
// The backprops' grid is in package backward.

// dwCheckCase runs DepthwiseConv2dNative on one geometry on random
// inputs in float64 and float32, with 1 and 3 threads, against the
// reference; results must be bit-identical across thread counts. When
// the output size is negative (c.OK false) the op must refuse the
// geometry with TensorFlow's message instead.
func dwCheckCase(t *testing.T, c *testutil.DepthwiseCase, seed int64) {
	t.Helper()
	registrytest.CheckConvRef(t, c, [3]string{"DepthwiseConv2dNative"}, &c.Ref, c.OK, dwAttrsFor(c), seed)
}

func TestDepthwiseConv2dGrid(t *testing.T) {
	cases := testutil.DepthwiseGrid(testutil.Long())
	if len(cases) < 100 {
		t.Fatalf("grid has only %d cases", len(cases))
	}
	t.Logf("%d configurations (all: -long)", len(cases))
	for i := range cases {
		dwCheckCase(t, &cases[i], int64(i))
	}
}

// TestDepthwiseConv2dLarger runs testutil.DepthwiseLarger: shapes large
// enough for several row blocks on several goroutines, the fast paths,
// large explicit paddings and a stride larger than the input.
func TestDepthwiseConv2dLarger(t *testing.T) {
	for i, c := range testutil.DepthwiseLarger() {
		if !c.OK {
			t.Fatalf("case %d: bad geometry", i)
		}
		dwCheckCase(t, &c, int64(100+i))
	}
}

func TestDepthwiseConv2dSamples(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range []string{"DepthwiseConv2dNative"} {
		samples, outs := registrytest.RunSamples(t, op, r, 8, registrytest.KC(0))
		mults, formats, paddings := map[int]bool{}, map[string]bool{}, map[string]bool{}
		unequal, dilated := false, false
		for i, s := range samples {
			a := s.Attrs.(DepthwiseConv2dAttrs)
			l := convLayoutOf(a.DataFormat)
			formats[a.DataFormat], paddings[a.Padding] = true, true
			unequal = unequal || a.Strides[l.h] != a.Strides[l.w]
			dilated = dilated || a.Dilations[l.h] > 1 || a.Dilations[l.w] > 1
			mults[s.Inputs[1].Shape()[3]] = true
			for _, v := range testutil.Float64s(t, outs[i][0]) {
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
	x, f     []int // shapes (NHWC)
	xv, fv   []float64
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
						vals, s = testutil.NHWCToNCHW(vals, s)
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
				in := []*tensor.Dense{image(v.x, nil), filter()}
				out, err := registrytest.Run(t, v.op, c.attrs(), 2, in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want, shape := v.want, v.outShape
				if nchw {
					want, shape = testutil.NHWCToNCHW(want, shape)
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
	f64, f32, seq := testutil.Float64Zeros, testutil.Float32Zeros, testutil.Seq
	type errCase struct {
		name   string
		op     string
		attrs  any
		in     func(t testing.TB) []*tensor.Dense
		kind   error
		substr string
	}
	const fwdOp = "DepthwiseConv2dNative"
	s1 := []int{1, 1, 1, 1}
	at := func(strides []int, padding string) DepthwiseConv2dAttrs {
		return DepthwiseConv2dAttrs{Strides: strides, Padding: padding}
	}
	fwd := seq(f64(1, 5, 5, 2), f64(2, 2, 2, 3))
	IA, SH, DT := registry.ErrInvalidArgument, registry.ErrShape, registry.ErrDtype
	var cases []errCase
	for _, o := range []struct {
		op string
		in func(t testing.TB) []*tensor.Dense
	}{{fwdOp, fwd}} {
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
	)
	for _, c := range cases {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.Run(t, c.op, c.attrs, 2, c.in(t)...)
			testutil.WantErr(t, err, c.kind, c.substr, c.op)
		})
	}
}

// TestDepthwiseConv2dEmpty covers the forward op's empty-tensor rules
// (spec §2, §6); the backprops' are tested in package backward.
func TestDepthwiseConv2dEmpty(t *testing.T) {
	v := DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	f64 := func(shape ...int) *tensor.Dense { return testutil.ArangeFloat64s(t, shape...) }
	check := func(name string, out []*tensor.Dense, err error, shape []int) {
		t.Helper()
		testutil.WantZeros(t, name, out, err, shape)
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
}

// TestDepthwiseConv2dNoPanics feeds random small shapes and attrs to
// DepthwiseConv2dNative (the backprops' test is in package backward): each call returns a result or an error, never an internal
// error.
func TestDepthwiseConv2dNoPanics(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	pick := func(v ...int) int { return v[r.Intn(len(v))] }
	for it := 0; it < 400; it++ {
		shape := func() []int {
			s := make([]int, pick(4, 4, 4, 3))
			for i := range s {
				s[i] = pick(0, 1, 2, 3, 5)
			}
			return s
		}
		format, padding, strides, dilations, explicit := testutil.RandomDepthwiseWindow(r)
		a := DepthwiseConv2dAttrs{Strides: strides, Padding: padding, DataFormat: format, Dilations: dilations, ExplicitPaddings: explicit}
		const op = "DepthwiseConv2dNative"
		xs, fs := shape(), shape()
		in := []*tensor.Dense{testutil.Dense(t, tensor.Float32, xs, make([]float64, testutil.Numel(xs))), testutil.Dense(t, tensor.Float32, fs, make([]float64, testutil.Numel(fs)))}
		out, err := registrytest.Run(t, op, a, 2, in...)
		if errors.Is(err, registry.ErrInternal) {
			t.Fatalf("%s %+v x%v f%v: %v", op, a, xs, fs, err)
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
