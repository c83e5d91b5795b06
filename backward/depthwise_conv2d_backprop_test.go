package backward_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of the DepthwiseConv2dNative family's gradient ops
// (DepthwiseConv2dNativeBackpropInput and
// DepthwiseConv2dNativeBackpropFilter) against the float64 reference
// testutil.DepthwiseRef (spec/depthwise_conv2d.md), with the forward op in
// the same runs; the forward op's own tests are in package forward.

// dwAttrs returns the attrs of a geometry given in NHWC names; pads are
// top, bottom, left, right for EXPLICIT padding.
func dwAttrs(nchw bool, sh, sw, dh, dw int, padding string, pads [4]int) forward.DepthwiseConv2dAttrs {
	format := "NHWC"
	if nchw {
		format = "NCHW"
	}
	s, d, p := testutil.ConvWindow(format, sh, sw, dh, dw, padding, pads)
	return forward.DepthwiseConv2dAttrs{Strides: s, Padding: padding, DataFormat: format, Dilations: d, ExplicitPaddings: p}
}

// dwHW returns the positions of the H and W axes in data_format format.
func dwHW(format string) (h, w int) {
	if format == "NCHW" {
		return 2, 3
	}
	return 1, 2
}

// ---------------------------------------------------------------------
// Grid against the reference.

// dwCheckCase runs the two backprop ops of one geometry on random
// inputs in float64 and float32, with 1 and 3 threads, against the
// reference; results must be bit-identical across thread counts. A
// geometry with a negative output size has no backprop shapes (the
// forward op's tests check its error).
func dwCheckCase(t *testing.T, c *testutil.DepthwiseCase, seed int64) {
	t.Helper()
	ops := [3]string{"", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}
	g := &c.Ref
	registrytest.CheckConvRef(t, c, ops, g, c.OK, dwAttrs(g.NCHW, g.SH, g.SW, g.DH, g.DW, c.Padding, c.Pads), seed)
}

func TestDepthwiseConv2dBackpropGrid(t *testing.T) {
	cases := testutil.DepthwiseGrid(testutil.Long())
	if len(cases) < 100 {
		t.Fatalf("grid has only %d cases", len(cases))
	}
	t.Logf("%d configurations (all: -long)", len(cases))
	for i := range cases {
		dwCheckCase(t, &cases[i], int64(i))
	}
}

// TestDepthwiseConv2dBackpropLarger runs testutil.DepthwiseLarger: shapes
// large enough for several filter gradient chunks and row blocks on
// several goroutines.
func TestDepthwiseConv2dBackpropLarger(t *testing.T) {
	for i, c := range testutil.DepthwiseLarger() {
		if !c.OK {
			t.Fatalf("case %d: bad geometry", i)
		}
		dwCheckCase(t, &c, int64(100+i))
	}
}

func TestDepthwiseConv2dBackpropSamples(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range []string{"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"} {
		samples, outs := registrytest.RunSamples(t, op, r, 8, registrytest.KC(0))
		mults, formats, paddings := map[int]bool{}, map[string]bool{}, map[string]bool{}
		unequal, dilated := false, false
		for i, s := range samples {
			a := s.Attrs.(forward.DepthwiseConv2dAttrs)
			h, w := dwHW(a.DataFormat)
			formats[a.DataFormat], paddings[a.Padding] = true, true
			unequal = unequal || a.Strides[h] != a.Strides[w]
			dilated = dilated || a.Dilations[h] > 1 || a.Dilations[w] > 1
			if op == "DepthwiseConv2dNativeBackpropFilter" {
				mults[int(s.Inputs[1].Int32s()[3])] = true
			} else {
				mults[s.Inputs[1].Shape()[3]] = true
			}
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

func TestDepthwiseConv2dBackpropSpecVectors(t *testing.T) {
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
				s := [2]int{max(1, v.strides[0]), max(1, v.strides[1])}
				attrs := dwAttrs(nchw, s[0], s[1], 1, 1, v.padding, [4]int{})
				var in []*tensor.Dense
				switch v.op {
				case "DepthwiseConv2dNativeBackpropInput":
					sizes := v.sizes
					if nchw {
						sizes = []int{sizes[0], sizes[3], sizes[1], sizes[2]}
					}
					in = []*tensor.Dense{testutil.Ints(t, sizes...), filter(), image(v.dy, nil)}
				default:
					in = []*tensor.Dense{image(v.x, nil), testutil.Ints(t, v.sizes...), image(v.dy, nil)}
				}
				out, err := registrytest.Run(t, v.op, attrs, 2, in...)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				want, shape := v.want, v.outShape
				if nchw && v.op != "DepthwiseConv2dNativeBackpropFilter" {
					want, shape = testutil.NHWCToNCHW(want, shape)
				}
				testutil.CloseBound(t, name, out[0], shape, want, make([]float64, len(want)), 0)
			}
		}
	}
}

// ---------------------------------------------------------------------
// Errors and empty tensors.

func TestDepthwiseConv2dBackpropErrors(t *testing.T) {
	f64, f32, ints, int64s, seq := testutil.Float64Zeros, testutil.Float32Zeros, testutil.IntsFn, testutil.Int64sFn, testutil.Seq
	ints2d := func(t testing.TB) *tensor.Dense {
		d, err := tensorx.New([]int{2, 2}, []int32{1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	type errCase struct {
		name   string
		op     string
		attrs  any
		in     func(t testing.TB) []*tensor.Dense
		kind   error
		substr string
	}
	const biOp, bfOp = "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"
	s1 := []int{1, 1, 1, 1}
	at := func(strides []int, padding string) forward.DepthwiseConv2dAttrs {
		return forward.DepthwiseConv2dAttrs{Strides: strides, Padding: padding}
	}
	bi := seq(ints(1, 5, 5, 2), f64(2, 2, 2, 3), f64(1, 4, 4, 6))
	bf := seq(f64(1, 5, 5, 2), ints(2, 2, 2, 3), f64(1, 4, 4, 6))
	IA, SH, DT := registry.ErrInvalidArgument, registry.ErrShape, registry.ErrDtype
	var cases []errCase
	for _, o := range []struct {
		op string
		in func(t testing.TB) []*tensor.Dense
	}{{biOp, bi}, {bfOp, bf}} {
		cases = append(cases,
			errCase{"padding", o.op, at(s1, "FULL"), o.in, IA, "allowed values"},
			errCase{"no-padding", o.op, forward.DepthwiseConv2dAttrs{Strides: s1}, o.in, IA, "padding"},
			errCase{"data-format", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCDHW"}, o.in, IA, "allowed values"},
			errCase{"attrs-type", o.op, struct{}{}, o.in, IA, "attrs must be"},
			errCase{"no-strides", o.op, forward.DepthwiseConv2dAttrs{Padding: "VALID"}, o.in, IA, "strides"},
			errCase{"strides-3", o.op, at([]int{1, 1, 1}, "VALID"), o.in, IA, "strides field must specify 4 dimensions"},
			errCase{"dilations-3", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 1}}, o.in, IA, "requires the dilations attribute to contain 4 values"},
			errCase{"stride-batch", o.op, at([]int{2, 1, 1, 1}, "VALID"), o.in, IA, "strides in the batch and depth dimensions"},
			errCase{"stride-depth", o.op, at([]int{1, 1, 1, 2}, "VALID"), o.in, IA, "strides in the batch and depth dimensions"},
			errCase{"stride-depth-nchw", o.op, forward.DepthwiseConv2dAttrs{Strides: []int{1, 2, 1, 1}, Padding: "VALID", DataFormat: "NCHW"}, o.in, IA, "strides in the batch and depth dimensions"},
			errCase{"stride-0", o.op, at([]int{1, 0, 1, 1}, "VALID"), o.in, IA, "strides should be larger than 0"},
			errCase{"dilation-depth", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 1, 1, 2}}, o.in, IA, "dilations in the batch and depth"},
			errCase{"dilation-0", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 0, 1, 1}}, o.in, IA, "Dilated rates should be larger than 0"},
			errCase{"explicit-count", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0}}, o.in, IA, "must contain 8 values, but got: 7"},
			errCase{"explicit-negative", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, -1, 1, 1, 1, 0, 0}}, o.in, IA, "must be nonnegative"},
			errCase{"explicit-batch", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", ExplicitPaddings: []int{1, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			errCase{"explicit-depth-nchw", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "EXPLICIT", DataFormat: "NCHW", ExplicitPaddings: []int{0, 0, 0, 1, 0, 0, 0, 0}}, o.in, IA, "Nonzero explicit padding in the batch or depth"},
			errCase{"explicit-not-explicit", o.op, forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID", ExplicitPaddings: []int{0, 0, 0, 0, 0, 0, 0, 0}}, o.in, IA, "must be empty if the padding attribute is not EXPLICIT"},
		)
	}
	v := at(s1, "VALID")
	cases = append(cases,
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

// TestDepthwiseConv2dBackpropEmpty covers the backprops' empty-tensor
// rules (spec §3, §6).
func TestDepthwiseConv2dBackpropEmpty(t *testing.T) {
	v := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	f64 := func(shape ...int) *tensor.Dense { return testutil.ArangeFloat64s(t, shape...) }
	check := func(name string, out []*tensor.Dense, err error, shape []int) {
		t.Helper()
		testutil.WantZeros(t, name, out, err, shape)
	}
	// Backprop input with empty input_sizes returns empty; with an empty
	// out_backprop (degenerate axis), zeros.
	out, err := registrytest.Run(t, "DepthwiseConv2dNativeBackpropInput", v, 1, testutil.Ints(t, 0, 2, 3, 1), f64(2, 2, 1, 1), f64(0, 1, 2, 1))
	check("bi-empty", out, err, []int{0, 2, 3, 1})
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropInput", forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1,
		testutil.Ints(t, 1, 2, 1, 1), f64(1, 3, 1, 2), f64(1, 2, 0, 2))
	check("bi-empty-dy", out, err, []int{1, 2, 1, 1})
	// Backprop filter with an empty out_backprop: zeros of filter_sizes.
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropFilter", forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 2, 1}, Padding: "VALID"}, 1,
		f64(1, 2, 1, 1), testutil.Ints(t, 1, 3, 1, 2), f64(1, 2, 0, 2))
	check("bf-empty-dy", out, err, []int{1, 3, 1, 2})
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropFilter", v, 1, f64(0, 3, 3, 1), testutil.Ints(t, 2, 2, 1, 1), f64(0, 2, 2, 1))
	check("bf-n0", out, err, []int{2, 2, 1, 1})
	// Backprop filter of an empty filter shape.
	out, err = registrytest.Run(t, "DepthwiseConv2dNativeBackpropFilter", v, 1, f64(1, 3, 3, 2), testutil.Ints(t, 2, 2, 2, 0), f64(1, 2, 2, 0))
	check("bf-m0", out, err, []int{2, 2, 2, 0})
}

// TestDepthwiseConv2dBackpropNoPanics feeds random small shapes and attrs
// to the two backprop ops: each call returns a result or an error, never an internal
// error.
func TestDepthwiseConv2dBackpropNoPanics(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	ops := []string{"DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"}
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
		a := forward.DepthwiseConv2dAttrs{Strides: strides, Padding: padding, DataFormat: format, Dilations: dilations, ExplicitPaddings: explicit}
		op := ops[r.Intn(2)]
		xs, fs, ys := shape(), shape(), shape()
		var in []*tensor.Dense
		switch op {
		case ops[0]:
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
