package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Conv2D's own tests: its samples, spec vectors, attrs, errors and
// empty-tensor rules. The tests that check Conv2D together with its
// backprops (the naive-reference grid, chunking, random and fuzzed
// inputs) are in backward/conv2d_kernels_test.go, where all three ops are
// registered; the loops' own tests are in internal/conv.

func TestConv2DSamples(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range []string{"Conv2D"} {
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

// ---------------------------------------------------------------------
// Spec test vectors (spec/conv2d.md §7): arange inputs, NHWC, run as given
// and converted to NCHW, in float64 and float32.

type convVector struct {
	id       string
	op       string
	x, f     []int // shapes (NHWC)
	strides  [2]int
	dil      [2]int
	padding  string
	explicit [4]int
	outShape []int
	want     []float64 // nil: all zeros
}

var convVectors = []convVector{
	{id: "C1", op: "Conv2D", x: []int{1, 2, 3, 3}, f: []int{1, 1, 3, 3}, padding: "VALID", outShape: []int{1, 2, 3, 3},
		want: []float64{30, 36, 42, 66, 81, 96, 102, 126, 150, 138, 171, 204, 174, 216, 258, 210, 261, 312}},
	{id: "C2", op: "Conv2D", x: []int{1, 2, 3, 3}, f: []int{2, 2, 3, 3}, padding: "VALID", outShape: []int{1, 1, 2, 3},
		want: []float64{2271, 2367, 2463, 2901, 3033, 3165}},
	{id: "C3", op: "Conv2D", x: []int{1, 2, 3, 3}, f: []int{1, 2, 3, 3}, padding: "VALID", outShape: []int{1, 2, 2, 3},
		want: []float64{231, 252, 273, 384, 423, 462, 690, 765, 840, 843, 936, 1029}},
	{id: "C4", op: "Conv2D", x: []int{1, 2, 3, 3}, f: []int{2, 2, 3, 3}, strides: [2]int{2, 2}, padding: "VALID", outShape: []int{1, 1, 1, 3},
		want: []float64{2271, 2367, 2463}},
	{id: "C5", op: "Conv2D", x: []int{1, 2, 3, 3}, f: []int{2, 2, 3, 3}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 1, 2, 3},
		want: []float64{2271, 2367, 2463, 1230, 1305, 1380}},
	{id: "C6", op: "Conv2D", x: []int{1, 3, 6, 1}, f: []int{2, 2, 1, 1}, strides: [2]int{1, 2}, padding: "VALID", outShape: []int{1, 2, 3, 1},
		want: []float64{58, 78, 98, 118, 138, 158}},
	{id: "C7", op: "Conv2D", x: []int{1, 7, 7, 1}, f: []int{2, 2, 1, 1}, strides: [2]int{3, 3}, padding: "VALID", outShape: []int{1, 2, 2, 1},
		want: []float64{65, 95, 275, 305}},
	{id: "C8a", op: "Conv2D", x: []int{1, 3, 3, 1}, f: []int{1, 1, 1, 1}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 2, 2, 1},
		want: []float64{1, 3, 7, 9}},
	{id: "C8b", op: "Conv2D", x: []int{1, 4, 4, 1}, f: []int{1, 1, 1, 1}, strides: [2]int{2, 2}, padding: "SAME", outShape: []int{1, 2, 2, 1},
		want: []float64{1, 3, 9, 11}},
	{id: "C8c", op: "Conv2D", x: []int{1, 4, 4, 1}, f: []int{2, 2, 1, 1}, strides: [2]int{3, 3}, padding: "SAME", outShape: []int{1, 2, 2, 1},
		want: []float64{44, 28, 41, 16}},
	{id: "C9", op: "Conv2D", x: []int{1, 2, 2, 1}, f: []int{2, 2, 1, 2}, padding: "VALID", outShape: []int{1, 1, 1, 2},
		want: []float64{50, 60}},
	{id: "C10", op: "Conv2D", x: []int{0, 2, 3, 3}, f: []int{1, 1, 3, 3}, padding: "VALID", outShape: []int{0, 2, 3, 3}, want: []float64{}},
	{id: "C11", op: "Conv2D", x: []int{1, 0, 2, 1}, f: []int{1, 1, 1, 1}, padding: "EXPLICIT", explicit: [4]int{1, 1, 1, 1}, outShape: []int{1, 2, 4, 1}},
	{id: "D1", op: "Conv2D", x: []int{1, 4, 4, 1}, f: []int{2, 2, 1, 1}, dil: [2]int{2, 1}, padding: "VALID", outShape: []int{1, 2, 3, 1},
		want: []float64{72, 82, 92, 112, 122, 132}},
	{id: "D2", op: "Conv2D", x: []int{1, 2, 2, 1}, f: []int{1, 1, 1, 2}, padding: "EXPLICIT", explicit: [4]int{1, 1, 1, 1}, outShape: []int{1, 4, 4, 2},
		want: []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 4, 0, 0, 0, 0, 3, 6, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	{id: "D3", op: "Conv2D", x: []int{1, 2, 2, 4}, f: []int{1, 1, 2, 4}, padding: "VALID", outShape: []int{1, 2, 2, 4},
		want: []float64{11, 14, 37, 44, 35, 46, 77, 92, 59, 78, 117, 140, 83, 110, 157, 188}},
}

func (v *convVector) attrs(nchw bool) Conv2DAttrs {
	c := convSampleCfg{format: "NHWC", sh: max(1, v.strides[0]), sw: max(1, v.strides[1]), dh: max(1, v.dil[0]), dw: max(1, v.dil[1]), padding: v.padding, pads: v.explicit}
	if nchw {
		c.format = "NCHW"
	}
	return c.attrs()
}

func TestConv2DSpecVectors(t *testing.T) {
	for _, v := range convVectors {
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
				in := []*tensor.Dense{image(v.x), testutil.Dense(t, dt, v.f, testutil.Arange(testutil.Numel(v.f)))}
				out, err := registrytest.Run(t, v.op, v.attrs(nchw), 2, in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want, shape := v.want, v.outShape
				if want == nil {
					want = make([]float64, testutil.Numel(shape))
				}
				if nchw {
					want, shape = testutil.NHWCToNCHW(want, shape)
				}
				testutil.CloseBound(t, name, out[0], shape, want, make([]float64, len(want)), 0)
			}
		}
	}
}

// ---------------------------------------------------------------------
// Attrs and errors.

func TestConv2DAttrs(t *testing.T) {
	def, err := registry.Lookup("Conv2D")
	if err != nil {
		t.Fatal(err)
	}
	a, err := def.ParseAttrs(map[string]any{"strides": []any{1.0, 2.0, 2.0, 1.0}, "padding": "SAME", "T": "float"})
	if err != nil {
		t.Fatal(err)
	}
	ca := a.(Conv2DAttrs)
	if ca.DataFormat != "NHWC" || fmt.Sprint(ca.Dilations) != "[1 1 1 1]" || ca.UseCudnnOnGPU == nil || !*ca.UseCudnnOnGPU || len(ca.ExplicitPaddings) != 0 {
		t.Fatalf("defaults not applied: %+v", ca)
	}
	a, err = def.ParseAttrs(map[string]any{"strides": []any{1.0, 1.0, 1.0, 1.0}, "padding": "EXPLICIT",
		"explicit_paddings": []any{0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0}, "data_format": "NCHW", "use_cudnn_on_gpu": false,
		"dilations": []any{1.0, 1.0, 2.0, 1.0}})
	if err != nil {
		t.Fatal(err)
	}
	ca = a.(Conv2DAttrs)
	if ca.DataFormat != "NCHW" || *ca.UseCudnnOnGPU || fmt.Sprint(ca.ExplicitPaddings) != "[0 0 0 0 1 2 3 4]" {
		t.Fatalf("attrs not parsed: %+v", ca)
	}
	// use_cudnn_on_gpu has no effect on the result.
	x := testutil.Dense(t, tensor.Float64, []int{1, 3, 3, 1}, testutil.Arange(testutil.Numel([]int{1, 3, 3, 1})))
	f := testutil.Dense(t, tensor.Float64, []int{2, 2, 1, 1}, testutil.Arange(testutil.Numel([]int{2, 2, 1, 1})))
	no := false
	r1, err1 := registrytest.Run(t, "Conv2D", Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID", UseCudnnOnGPU: &no}, 1, x, f)
	r2, err2 := registrytest.Run(t, "Conv2D", Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, 1, x, f)
	if err1 != nil || err2 != nil || !testutil.BitEqual(t, r1[0], r2[0]) {
		t.Fatalf("use_cudnn_on_gpu changed the result: %v %v", err1, err2)
	}
}

type convErrCase struct {
	name   string
	op     string
	attrs  any
	in     func(t testing.TB) []*tensor.Dense
	kind   error
	substr string
}

func TestConv2DErrors(t *testing.T) {
	f64, f32, seq := testutil.Float64Zeros, testutil.Float32Zeros, testutil.Seq
	s1 := []int{1, 1, 1, 1}
	at := func(strides []int, padding string) Conv2DAttrs {
		return Conv2DAttrs{Strides: strides, Padding: padding}
	}
	fwd := seq(f64(1, 5, 5, 2), f64(2, 2, 2, 3))
	IA, UN, SH, DT := registry.ErrInvalidArgument, registry.ErrUnimplemented, registry.ErrShape, registry.ErrDtype
	var cases []convErrCase
	// Attr errors.
	for _, o := range []struct {
		op string
		in func(t testing.TB) []*tensor.Dense
		bd error // kind of the batch/depth stride error
	}{{"Conv2D", fwd, UN}} {
		cases = append(cases,
			convErrCase{"padding", o.op, at(s1, "FULL"), o.in, IA, "allowed values"},
			convErrCase{"no-padding", o.op, Conv2DAttrs{Strides: s1}, o.in, IA, "padding"},
			convErrCase{"data-format", o.op, Conv2DAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCDHW"}, o.in, IA, "allowed values"},
			convErrCase{"no-strides", o.op, Conv2DAttrs{Padding: "VALID"}, o.in, IA, "strides"},
			convErrCase{"strides-3", o.op, at([]int{1, 1, 1}, "VALID"), o.in, IA, "strides field must specify 4 dimensions"},
			convErrCase{"dilations-3", o.op, Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 1}}, o.in, IA, "dilations field must specify 4 dimensions"},
			convErrCase{"stride-batch", o.op, at([]int{2, 1, 1, 1}, "VALID"), o.in, o.bd, "strides in the batch and depth"},
			convErrCase{"stride-depth", o.op, at([]int{1, 1, 1, 2}, "VALID"), o.in, o.bd, "strides in the batch and depth"},
			convErrCase{"stride-depth-nchw", o.op, Conv2DAttrs{Strides: []int{1, 2, 1, 1}, Padding: "VALID", DataFormat: "NCHW"}, o.in, o.bd, "strides in the batch and depth"},
			convErrCase{"stride-0", o.op, at([]int{1, 0, 1, 1}, "VALID"), o.in, IA, "Row and column strides should be larger than 0"},
			convErrCase{"dilation-batch", o.op, Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{2, 1, 1, 1}}, o.in, o.bd, "dilations in the batch and depth"},
			convErrCase{"dilation-0", o.op, Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, -1, 1}}, o.in, IA, "Dilated rates should be larger than 0"},
			convErrCase{"explicit-count", o.op, Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0}}, o.in, IA, "must contain 8 values, but got: 7"},
			convErrCase{"explicit-negative", o.op, Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, -1, 1, 1, 1, 0, 0}}, o.in, IA, "must be nonnegative"},
			convErrCase{"explicit-batch", o.op, Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			convErrCase{"explicit-depth-nchw", o.op, Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", DataFormat: "NCHW", ExplicitPaddings: []int{0, 0, 0, 1, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			convErrCase{"explicit-not-explicit", o.op, Conv2DAttrs{Strides: s1, Padding: "SAME", ExplicitPaddings: []int{0, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "must be empty if the padding attribute is not EXPLICIT"},
			convErrCase{"explicit-too-large", o.op, Conv2DAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1 << 31, 0, 0, 0, 0, 0}}, o.in, IA, "too large"},
		)
	}
	v := at(s1, "VALID")
	cases = append(cases,
		// Conv2D inputs.
		convErrCase{"input-rank3", "Conv2D", v, seq(f64(5, 5, 2), f64(2, 2, 2, 2)), SH, "input must be 4-dimensional"},
		convErrCase{"filter-rank3", "Conv2D", v, seq(f64(1, 5, 5, 2), f64(2, 2, 2)), SH, "filter must be 4-dimensional"},
		convErrCase{"filter-depth-0", "Conv2D", v, seq(f64(1, 5, 5, 2), f64(2, 2, 0, 2)), IA, "filter depth must be stricly positive"},
		convErrCase{"depth-multiple", "Conv2D", v, seq(f64(1, 5, 5, 3), f64(2, 2, 2, 2)), IA, "input depth must be evenly divisible by filter depth: 3 vs 2"},
		convErrCase{"groups-out", "Conv2D", v, seq(f64(1, 5, 5, 4), f64(2, 2, 2, 3)), IA, "output depth must be evenly divisible by number of groups: 3 vs 2"},
		convErrCase{"negative-out", "Conv2D", v, seq(f64(1, 1, 5, 1), f64(4, 1, 1, 1)), IA, "Computed output size would be negative"},
		convErrCase{"negative-out-dilated", "Conv2D", Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 3, 1}}, seq(f64(1, 5, 5, 1), f64(1, 3, 1, 1)), IA, "Computed output size would be negative"},
		convErrCase{"filter-zero", "Conv2D", at(s1, "SAME"), seq(f64(1, 1, 1, 1), f64(1, 0, 1, 1)), IA, "filter must not have zero elements"},
		convErrCase{"too-large", "Conv2D", v, seq(f64(0, 1<<31, 1, 1), f64(1, 1, 1, 1)), IA, "too large"},
		convErrCase{"dtype", "Conv2D", v, seq(f64(1, 5, 5, 2), f32(2, 2, 2, 2)), DT, "filter has dtype"},
	)
	for _, c := range cases {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.Run(t, c.op, c.attrs, 2, c.in(t)...)
			testutil.WantErr(t, err, c.kind, c.substr, c.op)
		})
	}
}

// TestConv2DEmpty covers the empty-tensor rules of spec §2–§3 beyond the
// spec vectors.
func TestConv2DEmpty(t *testing.T) {
	v := Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	f64 := func(shape ...int) *tensor.Dense { return testutil.ArangeFloat64s(t, shape...) }
	check := func(name string, out []*tensor.Dense, err error, shape []int) {
		t.Helper()
		testutil.WantZeros(t, name, out, err, shape)
	}
	// Zero output channels: empty output, even with an empty filter.
	out, err := registrytest.Run(t, "Conv2D", v, 1, f64(1, 3, 3, 2), f64(2, 2, 2, 0))
	check("conv-o0", out, err, []int{1, 2, 2, 0})
	// Empty input depth with a non-empty output: zeros.
	out, err = registrytest.Run(t, "Conv2D", v, 1, f64(1, 3, 3, 0), f64(2, 2, 1, 2))
	check("conv-c0", out, err, []int{1, 2, 2, 2})
	// VALID with the input shorter than the filter truncates to an empty axis.
	out, err = registrytest.Run(t, "Conv2D", Conv2DAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1, f64(1, 2, 1, 1), f64(1, 3, 1, 1))
	check("conv-degenerate", out, err, []int{1, 2, 0, 1})
}
