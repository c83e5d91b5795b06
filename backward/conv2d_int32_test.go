package backward_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// The int32 kernels of Conv2D and Conv2DBackpropInput, through the
// registry, against the naive int64 loops of testutil.NaiveConv, and the
// refusals of the family's int32 paths (spec/conv2d.md).

// randInt32s returns n values: small ones (|v| <= 9) or, with wide, any
// int32 (sums wrap).
func randInt32s(r *rand.Rand, n int, wide bool) []int32 {
	v := make([]int32, n)
	for i := range v {
		if wide {
			v[i] = int32(r.Uint32())
		} else {
			v[i] = int32(r.Intn(19) - 9)
		}
	}
	return v
}

// TestConv2DInt32Grid runs Conv2D (with groups, dilations, strides and
// the three paddings) and Conv2DBackpropInput (strides and the three
// paddings; TensorFlow's int32 kernels refuse its dilations and groups)
// in int32 over random NHWC geometries, with small and wrapping operands
// and the [H, W] form of input_sizes, on 1 and 2 threads: every result
// must equal the naive loops exactly.
func TestConv2DInt32Grid(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	iters := 120
	if testutil.Long() {
		iters = 1000
	}
	ran := [2]int{}
	for it := range iters {
		backprop := it%2 == 1
		padding := []string{"VALID", "SAME", "EXPLICIT"}[r.Intn(3)]
		var pads [4]int
		if padding == "EXPLICIT" {
			pads = [4]int{r.Intn(3), r.Intn(3), r.Intn(3), r.Intn(3)}
		}
		groups, cf := 1+r.Intn(3), 1+r.Intn(3)
		dh, dw := 1+r.Intn(2), 1+r.Intn(2)
		if backprop {
			groups, dh, dw = 1, 1, 1
		}
		ng, ok := testutil.NewNaiveConv(false, 1+r.Intn(3), 1+r.Intn(7), 1+r.Intn(7), groups*cf,
			1+r.Intn(3), 1+r.Intn(3), cf, groups*(1+r.Intn(3)), 1+r.Intn(3), 1+r.Intn(3), dh, dw, padding, pads)
		if !ok {
			continue
		}
		strides, dilations, explicit := testutil.ConvWindow("NHWC", ng.SH, ng.SW, ng.DH, ng.DW, padding, pads)
		attrs := forward.Conv2DAttrs{Strides: strides, Dilations: dilations, Padding: padding, ExplicitPaddings: explicit}
		wide := r.Intn(2) == 0
		name := fmt.Sprintf("#%d %+v wide=%v", it, ng, wide)
		var op string
		var in []*tensor.Dense
		var want []int32
		var shape []int
		if !backprop {
			x, f := randInt32s(r, testutil.Numel(ng.XShape()), wide), randInt32s(r, testutil.Numel(ng.FShape()), wide)
			op, shape, want = "Conv2D", ng.YShape(), ng.ForwardInt32(x, f)
			in = []*tensor.Dense{testutil.New(t, ng.XShape(), x), testutil.New(t, ng.FShape(), f)}
		} else {
			f, dy := randInt32s(r, testutil.Numel(ng.FShape()), wide), randInt32s(r, testutil.Numel(ng.YShape()), wide)
			sizes := testutil.Ints(t, ng.XShape()...)
			if it%4 == 3 {
				sizes = testutil.Ints(t, ng.H, ng.W)
			}
			op, shape, want = "Conv2DBackpropInput", ng.XShape(), ng.BackpropInputInt32(f, dy)
			in = []*tensor.Dense{sizes, testutil.New(t, ng.FShape(), f), testutil.New(t, ng.YShape(), dy)}
		}
		ran[it%2]++
		for _, threads := range []int{1, 2} {
			out, err := registrytest.Run(t, op, attrs, threads, in...)
			if err != nil {
				t.Fatalf("%s %s t%d: %v", op, name, threads, err)
			}
			if out[0].Dtype() != tensor.Int32 || !slices.Equal(out[0].Shape(), shape) {
				t.Fatalf("%s %s t%d: %v %v, want int32 %v", op, name, threads, out[0].Dtype(), out[0].Shape(), shape)
			}
			if got := tensorx.MustSlice[int32](out[0]); !slices.Equal(got, want) {
				t.Fatalf("%s %s t%d:\n got %v\nwant %v", op, name, threads, got, want)
			}
		}
	}
	if ran[0] < iters/4 || ran[1] < iters/4 {
		t.Fatalf("only %v of %d geometries ran: the generator is off", ran, iters)
	}
}

// TestConv2DBackpropInputInt32SpecVectors runs the Conv2DBackpropInput
// vectors of spec/conv2d.md §7 (BI1–BI8, NHWC) in int32.
func TestConv2DBackpropInputInt32SpecVectors(t *testing.T) {
	ran := 0
	for _, v := range conv2DVectors {
		if v.op != "Conv2DBackpropInput" {
			continue
		}
		ran++
		f := testutil.New(t, v.f, testutil.Convert[int32](testutil.Arange(testutil.Numel(v.f))))
		dy := testutil.New(t, v.dy, testutil.Convert[int32](testutil.Arange(testutil.Numel(v.dy))))
		out, err := registrytest.Run(t, v.op, v.attrs(false), 2, testutil.Ints(t, v.sizes...), f, dy)
		if err != nil {
			t.Fatalf("%s: %v", v.id, err)
		}
		want := v.want
		if want == nil {
			want = make([]float64, testutil.Numel(v.outShape))
		}
		testutil.ShapeIs(t, v.id, out[0], v.outShape...)
		if got := tensorx.MustSlice[int32](out[0]); !slices.Equal(got, testutil.Convert[int32](want)) {
			t.Fatalf("%s: got %v, want %v", v.id, got, want)
		}
	}
	if ran != 8 {
		t.Fatalf("%d BackpropInput vectors, want 8", ran)
	}
}

// TestConv2DInt32Refusals checks the int32 refusals of the family:
// Conv2DBackpropInput with NCHW, dilations or groups (TensorFlow's int32
// kernels refuse them), and the ops TensorFlow registers no int32 CPU
// kernel for: Conv2DBackpropFilter and the depthwise family.
func TestConv2DInt32Refusals(t *testing.T) {
	i32 := func(shape ...int) *tensor.Dense {
		return testutil.New(t, shape, testutil.Convert[int32](testutil.Arange(testutil.Numel(shape))))
	}
	s1 := []int{1, 1, 1, 1}
	IA, DT := registry.ErrInvalidArgument, registry.ErrDtype
	for _, c := range []struct {
		name, op string
		attrs    any
		in       []*tensor.Dense
		kind     error
		substr   string
	}{
		{"bi-nchw", "Conv2DBackpropInput", forward.Conv2DAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCHW"},
			[]*tensor.Dense{testutil.Ints(t, 1, 1, 3, 3), i32(2, 2, 1, 1), i32(1, 1, 2, 2)}, IA, "only supports NHWC"},
		{"bi-nchw-empty", "Conv2DBackpropInput", forward.Conv2DAttrs{Strides: s1, Padding: "VALID", DataFormat: "NCHW"},
			[]*tensor.Dense{testutil.Ints(t, 0, 1, 3, 3), i32(2, 2, 1, 1), i32(0, 1, 2, 2)}, IA, "only supports NHWC"},
		{"bi-dilated", "Conv2DBackpropInput", forward.Conv2DAttrs{Strides: s1, Padding: "VALID", Dilations: []int{1, 2, 1, 1}},
			[]*tensor.Dense{testutil.Ints(t, 1, 3, 3, 1), i32(2, 2, 1, 1), i32(1, 1, 2, 1)}, IA, "dilation rates larger than 1"},
		{"bi-grouped", "Conv2DBackpropInput", forward.Conv2DAttrs{Strides: s1, Padding: "VALID"},
			[]*tensor.Dense{testutil.Ints(t, 1, 3, 3, 4), i32(2, 2, 2, 2), i32(1, 2, 2, 2)}, IA, "Gradients for grouped convolutions are not supported"},
		{"bi-dtype", "Conv2DBackpropInput", forward.Conv2DAttrs{Strides: s1, Padding: "VALID"},
			[]*tensor.Dense{testutil.Ints(t, 1, 3, 3, 1), i32(2, 2, 1, 1), testutil.Float64Zeros(1, 2, 2, 1)(t)}, DT, "out_backprop has dtype float64, expected int32"},
		{"bf", "Conv2DBackpropFilter", forward.Conv2DAttrs{Strides: s1, Padding: "VALID"},
			[]*tensor.Dense{i32(1, 3, 3, 1), testutil.Ints(t, 2, 2, 1, 1), i32(1, 2, 2, 1)}, DT, "no kernel for dtype int32"},
		{"dw", "DepthwiseConv2dNative", forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID"},
			[]*tensor.Dense{i32(1, 3, 3, 1), i32(2, 2, 1, 1)}, DT, "no kernel for dtype int32"},
		{"dw-bi", "DepthwiseConv2dNativeBackpropInput", forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID"},
			[]*tensor.Dense{testutil.Ints(t, 1, 3, 3, 1), i32(2, 2, 1, 1), i32(1, 2, 2, 1)}, DT, "no kernel for dtype int32"},
		{"dw-bf", "DepthwiseConv2dNativeBackpropFilter", forward.DepthwiseConv2dAttrs{Strides: s1, Padding: "VALID"},
			[]*tensor.Dense{i32(1, 3, 3, 1), testutil.Ints(t, 2, 2, 1, 1), i32(1, 2, 2, 1)}, DT, "no kernel for dtype int32"},
	} {
		_, err := registrytest.Run(t, c.op, c.attrs, 1, c.in...)
		testutil.WantErr(t, err, c.kind, c.substr, c.op)
	}
}

// TestConv2DInt32MatchesFloat64 runs Conv2D and Conv2DBackpropInput on
// random, partly invalid problems (both layouts, dilations, groups,
// mismatched depths, empty tensors, both input_sizes forms) in int32 and
// in float64 with the same small integer values. Where the int32 kernels
// follow TensorFlow's int32 refusals (NCHW; for the input gradient also
// dilations and groups) the int32 call must fail with an error naming the
// op; everywhere else both calls must fail alike or return the same
// numbers, so the int32 paths share every check of the float ones (the
// int32 input gradient checks the shapes even when its output or
// out_backprop is empty, as TensorFlow's CPU kernel does, where the float
// path returns early).
func TestConv2DInt32MatchesFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(99))
	iters := 400
	if testutil.Long() {
		iters = 4000
	}
	agreed, refused := 0, 0
	for it := range iters {
		backprop := it%2 == 1
		format := []string{"NHWC", "NHWC", "NCHW"}[r.Intn(3)]
		padding := []string{"VALID", "SAME", "EXPLICIT"}[r.Intn(3)]
		var pads [4]int
		if padding == "EXPLICIT" {
			pads = [4]int{r.Intn(3), r.Intn(3), r.Intn(3), r.Intn(3)}
		}
		sh, sw, dh, dw := 1+r.Intn(3), 1+r.Intn(3), 1+r.Intn(2), 1+r.Intn(2)
		if r.Intn(2) == 0 {
			dh, dw = 1, 1
		}
		strides, dilations, explicit := testutil.ConvWindow(format, sh, sw, dh, dw, padding, pads)
		attrs := forward.Conv2DAttrs{Strides: strides, Dilations: dilations, Padding: padding, ExplicitPaddings: explicit, DataFormat: format}
		n, h, w := r.Intn(3), r.Intn(6), r.Intn(6)
		cf := 1 + r.Intn(3)
		c := cf * (1 + r.Intn(2))
		if r.Intn(8) == 0 {
			c++ // not a multiple of the filter depth
		}
		o := (c / cf) * (1 + r.Intn(2))
		if r.Intn(8) == 0 {
			o++ // not a multiple of the groups
		}
		fs := []int{1 + r.Intn(3), 1 + r.Intn(3), cf, o}
		image := func(nn, hh, ww, cc int) []int {
			if format == "NCHW" {
				return []int{nn, cc, hh, ww}
			}
			return []int{nn, hh, ww, cc}
		}
		xs := image(n, h, w, c)
		// out_backprop: the forward output size, or a wrong one at times.
		oh, _, _, _ := testutil.NaiveAxis(h, fs[0], sh, dh, padding, pads[0], pads[1])
		ow, _, _, _ := testutil.NaiveAxis(w, fs[1], sw, dw, padding, pads[2], pads[3])
		if r.Intn(8) == 0 {
			oh++
		}
		ys := image(n, max(oh, 0), max(ow, 0), o)
		vals := func(s []int) []int32 { return randInt32s(r, testutil.Numel(s), false) }
		var op string
		var ints []*tensor.Dense
		var floats []*tensor.Dense
		both := func(s []int) {
			v := vals(s)
			ints = append(ints, testutil.New(t, s, v))
			floats = append(floats, testutil.New(t, s, testutil.Convert[float64](v)))
		}
		if !backprop {
			op = "Conv2D"
			both(xs)
			both(fs)
		} else {
			op = "Conv2DBackpropInput"
			sizes := testutil.Ints(t, xs...)
			if r.Intn(4) == 0 {
				sizes = testutil.Ints(t, h, w)
				c = cf // the [H, W] form takes the filter's depth
			}
			ints, floats = append(ints, sizes), append(floats, sizes)
			both(fs)
			both(ys)
		}
		outF, errF := registrytest.Run(t, op, attrs, 1, floats...)
		outI, errI := registrytest.Run(t, op, attrs, 1, ints...)
		name := fmt.Sprintf("#%d %s %+v x%v f%v y%v", it, op, attrs, xs, fs, ys)
		int32Refuses := format == "NCHW" || (backprop && (dh > 1 || dw > 1 || (errF == nil && c != cf)))
		name += fmt.Sprintf(" c=%d", c)
		if !backprop && format == "NCHW" && errF == nil && (testutil.Numel(outF[0].Shape()) == 0 || testutil.Numel(xs) == 0) {
			int32Refuses = false // empty results return before the format check
		}
		switch {
		case int32Refuses && errI != nil:
			if !errors.Is(errI, registry.ErrInvalidArgument) && !errors.Is(errI, registry.ErrUnimplemented) && !errors.Is(errI, registry.ErrShape) {
				t.Fatalf("%s: int32 refusal %v is not an invalid-argument, unimplemented or shape error", name, errI)
			}
			refused++
		case int32Refuses:
			t.Fatalf("%s: int32 call succeeded; TensorFlow's int32 kernels refuse it", name)
		case backprop && errF == nil && errI != nil && (testutil.Numel(ys) == 0 || testutil.Numel(outF[0].Shape()) == 0):
			// The int32 input gradient reconciles the shapes before its
			// empty-tensor returns, as TensorFlow's CPU kernel does; the
			// float path returns an empty output, or zeros for an empty
			// out_backprop, first.
			if !errors.Is(errI, registry.ErrShape) && !errors.Is(errI, registry.ErrInvalidArgument) {
				t.Fatalf("%s: int32 error %v is not a shape or invalid-argument error", name, errI)
			}
			refused++
		case (errF == nil) != (errI == nil):
			t.Fatalf("%s: float64 error %v, int32 error %v", name, errF, errI)
		case errF == nil:
			want := tensorx.MustSlice[float64](outF[0])
			got := tensorx.MustSlice[int32](outI[0])
			if !slices.Equal(outI[0].Shape(), outF[0].Shape()) || !slices.Equal(testutil.Convert[float64](got), want) {
				t.Fatalf("%s: int32 %v %v, float64 %v %v", name, outI[0].Shape(), got, outF[0].Shape(), want)
			}
			agreed++
		}
	}
	if agreed < iters/4 || refused < iters/20 {
		t.Fatalf("%d agreeing and %d refused calls of %d: the generator is off", agreed, refused, iters)
	}
}
