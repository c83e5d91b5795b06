package forward

import (
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Conv2D in int32: TensorFlow's own int32 vectors, wrapping, and the
// int32 kernels' refusals. The grid against naive loops (with
// Conv2DBackpropInput) is in backward/conv2d_int32_test.go.

// int32Dense builds an int32 tensor of shape from integer values.
func int32Dense(t testing.TB, shape []int, vals []float64) *tensor.Dense {
	t.Helper()
	return testutil.New(t, shape, testutil.Convert[int32](vals))
}

// TestConv2DInt32SpecVectors runs the Conv2D vectors of spec/conv2d.md §7
// in int32, NHWC: TensorFlow's Conv2DTest runs every _VerifyValues case
// (C1–C11) for int32 in NHWC too and expects the same integers exactly;
// D1–D3 (dilation, explicit padding, groups) are exact integers as well.
func TestConv2DInt32SpecVectors(t *testing.T) {
	ran := 0
	for _, v := range convVectors {
		if v.op != "Conv2D" {
			continue
		}
		ran++
		x := int32Dense(t, v.x, testutil.Arange(testutil.Numel(v.x)))
		f := int32Dense(t, v.f, testutil.Arange(testutil.Numel(v.f)))
		for _, threads := range []int{1, 2} {
			out, err := registrytest.Run(t, "Conv2D", v.attrs(false), threads, x, f)
			if err != nil {
				t.Fatalf("%s t%d: %v", v.id, threads, err)
			}
			want := v.want
			if want == nil {
				want = make([]float64, testutil.Numel(v.outShape))
			}
			checkInt32(t, fmt.Sprintf("%s t%d", v.id, threads), out[0], v.outShape, want)
		}
	}
	if ran < 14 {
		t.Fatalf("only %d Conv2D vectors", ran)
	}
}

// checkInt32 checks that got is an int32 tensor of shape equal to want.
func checkInt32(t testing.TB, what string, got *tensor.Dense, shape []int, want []float64) {
	t.Helper()
	if got.Dtype() != tensor.Int32 {
		t.Fatalf("%s: dtype %v, want int32", what, got.Dtype())
	}
	testutil.ShapeIs(t, what, got, shape...)
	g := tensorx.MustSlice[int32](got)
	if len(g) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(want))
	}
	for i, w := range want {
		if int64(g[i]) != int64(w) {
			t.Fatalf("%s: element %d = %d, want %v (got %v)", what, i, g[i], w, g)
		}
	}
}

// TestConv2DInt32Wraps checks that int32 sums wrap modulo 2^32, as
// TensorFlow's int32 kernels do: the results are the exact integers
// reduced into [-2^31, 2^31).
func TestConv2DInt32Wraps(t *testing.T) {
	v := Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	const big = math.MaxInt32 // 2^31 - 1
	for _, c := range []struct {
		name string
		x, f []float64
		want float64
	}{
		{"product", []float64{big}, []float64{2}, -2},                                  // 2^32 - 2
		{"sum", []float64{1 << 30, 1 << 30}, []float64{3, 1}, 0},                       // 2^32
		{"min", []float64{-(1 << 30), -(1 << 30)}, []float64{1, 1}, -(1 << 31)},        // -2^31, no wrap
		{"under", []float64{math.MinInt32, -1}, []float64{1, 1}, big},                  // -2^31 - 1
		{"squares", []float64{1 << 16, 46341}, []float64{1 << 16, 46341}, -2147479015}, // 2^32 + 46341^2
	} {
		x := int32Dense(t, []int{1, 1, len(c.x), 1}, c.x)
		f := int32Dense(t, []int{1, len(c.f), 1, 1}, c.f)
		out, err := registrytest.Run(t, "Conv2D", v, 1, x, f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		checkInt32(t, c.name, out[0], []int{1, 1, 1, 1}, []float64{c.want})
	}
}

// TestConv2DInt32Refusals covers the refusals of the int32 kernel:
// NCHW (TensorFlow's int32 kernels are NHWC only), after the empty-tensor
// returns as in TensorFlow, and the checks it shares with the float
// kernels.
func TestConv2DInt32Refusals(t *testing.T) {
	i32 := func(shape ...int) *tensor.Dense { return int32Dense(t, shape, testutil.Arange(testutil.Numel(shape))) }
	nchw := Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID", DataFormat: "NCHW"}
	_, err := registrytest.Run(t, "Conv2D", nchw, 1, i32(1, 2, 3, 3), i32(2, 2, 2, 1))
	testutil.WantErr(t, err, registry.ErrUnimplemented, "Conv2D", "only supports the NHWC tensor format")
	// An empty output returns before the format check, as in TensorFlow.
	out, err := registrytest.Run(t, "Conv2D", nchw, 1, i32(0, 2, 3, 3), i32(2, 2, 2, 1))
	if err != nil {
		t.Fatalf("NCHW with an empty output: %v", err)
	}
	testutil.ShapeIs(t, "NCHW empty", out[0], 0, 1, 2, 2)
	nhwc := Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME"}
	_, err = registrytest.Run(t, "Conv2D", nhwc, 1, i32(1, 1, 1, 1), i32(1, 0, 1, 1))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "Conv2D", "filter must not have zero elements")
	_, err = registrytest.Run(t, "Conv2D", nhwc, 1, i32(1, 2, 2, 1), testutil.Float64Zeros(1, 1, 1, 1)(t))
	testutil.WantErr(t, err, registry.ErrDtype, "Conv2D", "filter has dtype float64, expected int32")
	_, err = registrytest.Run(t, "Conv2D", nhwc, 1, i32(1, 2, 2, 3), i32(1, 1, 2, 1))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "Conv2D", "input depth must be evenly divisible by filter depth: 3 vs 2")
	// Only padding reaches the output: zeros.
	out, err = registrytest.Run(t, "Conv2D", Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0, 0}}, 1, i32(1, 0, 2, 1), i32(1, 1, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	checkInt32(t, "padding only", out[0], []int{1, 2, 4, 1}, make([]float64, 8))
}
