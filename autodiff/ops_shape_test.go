package autodiff_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// ExampleMatMul computes sum(a·b) and its gradients with respect to a
// and b.
func ExampleMatMul() {
	tape := autodiff.NewTape()
	ad, _ := tensorx.New([]int{2, 2}, []float64{1, 2, 3, 4})
	bd, _ := tensorx.New([]int{2, 1}, []float64{1, 1})
	a, b := tape.Watch(ad), tape.Watch(bd)
	y := autodiff.MatMul(a, b, forward.MatMulAttrs{})
	loss := autodiff.Sum(y, nil, false) // every axis
	v, err := loss.Item()
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := tape.Grad([]autodiff.Value{loss}, []autodiff.Value{a, b}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	da, _ := g[0].Float64s()
	db, _ := g[1].Float64s()
	fmt.Println("loss:", v)
	fmt.Println("da:", da)
	fmt.Println("db:", db)
	// Output:
	// loss: 10
	// da: [1 1 1 1]
	// db: [4 6]
}

func TestShapeTyped(t *testing.T) {
	tape := autodiff.NewTape()
	x := tape.Watch(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))

	r := autodiff.Reshape(x, 3, -1)
	if got := fmt.Sprint(r.Shape(), testutil.Values(t, r)); got != "(3, 2) [1 2 3 4 5 6]" {
		t.Fatalf("Reshape = %s", got)
	}
	s := autodiff.Reshape(autodiff.Sum(x, nil, false)) // scalar to scalar
	if len(s.Shape()) != 0 || testutil.Values(t, s)[0] != 21 {
		t.Fatalf("Reshape to scalar = %v %v", s.Shape(), testutil.Values(t, s))
	}

	tr := autodiff.Transpose(x) // reversed dimensions
	if got := fmt.Sprint(tr.Shape(), testutil.Values(t, tr)); got != "(3, 2) [1 4 2 5 3 6]" {
		t.Fatalf("Transpose = %s", got)
	}
	tr = autodiff.Transpose(x, 0, 1)
	if got := fmt.Sprint(testutil.Values(t, tr)); got != "[1 2 3 4 5 6]" {
		t.Fatalf("identity Transpose = %s", got)
	}

	if got := fmt.Sprint(testutil.Values(t, autodiff.Sum(x, []int{-1}, false))); got != "[6 15]" {
		t.Fatalf("Sum = %s", got)
	}
	if got := autodiff.Sum(x, []int{0}, true); fmt.Sprint(got.Shape(), testutil.Values(t, got)) != "(1, 3) [5 7 9]" {
		t.Fatalf("Sum keepDims = %v %v", got.Shape(), testutil.Values(t, got))
	}
	if got := autodiff.Sum(x, []int{}, false); fmt.Sprint(got.Shape()) != "(2, 3)" {
		t.Fatalf("Sum over no axes has shape %v", got.Shape())
	}
	if got := autodiff.Mean(x, nil, false); testutil.Values(t, got)[0] != 3.5 {
		t.Fatalf("Mean = %v", testutil.Values(t, got))
	}
	if got := autodiff.Mean(x, []int{1}, true); fmt.Sprint(got.Shape(), testutil.Values(t, got)) != "(2, 1) [2 5]" {
		t.Fatalf("Mean keepDims = %v %v", got.Shape(), testutil.Values(t, got))
	}

	f := autodiff.Fill(tape, tensor.Float32, []int{2, 2}, 1.5)
	if f.Dtype() != tensor.Float32 || fmt.Sprint(f.Shape()) != "(2, 2)" {
		t.Fatalf("Fill = %v %v", f.Dtype(), f.Shape())
	}
	if v, _ := f.Float32s(); fmt.Sprint(v) != "[1.5 1.5 1.5 1.5]" {
		t.Fatalf("Fill values %v", v)
	}
	if f := autodiff.Fill(tape, tensor.Float64, nil, -2); len(f.Shape()) != 0 || testutil.Values(t, f)[0] != -2 {
		t.Fatalf("scalar Fill = %v", f)
	}

	w := tape.Watch(testutil.New(t, []int{3, 2}, []float64{1, 0, 0, 1, 1, 1}))
	m := autodiff.MatMul(x, w, forward.MatMulAttrs{})
	if got := fmt.Sprint(testutil.Values(t, m)); got != "[4 5 10 11]" {
		t.Fatalf("MatMul = %s", got)
	}
	m = autodiff.MatMul(w, x, forward.MatMulAttrs{TransposeA: true, TransposeB: true})
	if got := fmt.Sprint(m.Shape(), testutil.Values(t, m)); got != "(2, 2) [4 10 5 11]" {
		t.Fatalf("MatMul transposed = %s", got)
	}

	b := tape.Watch(testutil.New(t, []int{3}, []float64{10, 20, 30}))
	if got := fmt.Sprint(testutil.Values(t, autodiff.BiasAdd(x, b, ""))); got != "[11 22 33 14 25 36]" {
		t.Fatalf("BiasAdd = %s", got)
	}
	x3 := tape.Watch(testutil.New(t, []int{1, 3, 2}, []float64{1, 2, 3, 4, 5, 6}))
	if got := fmt.Sprint(testutil.Values(t, autodiff.BiasAdd(x3, b, "NCHW"))); got != "[11 12 23 24 35 36]" {
		t.Fatalf("BiasAdd NCHW = %s", got)
	}
	if err := tape.Err(); err != nil {
		t.Fatal(err)
	}

	// Gradients flow through the typed functions.
	loss := autodiff.Mean(autodiff.BiasAdd(autodiff.Transpose(autodiff.Reshape(x, 3, 2)), tape.Watch(testutil.New(t, []int{3}, []float64{1, 2, 3})), "NHWC"), nil, false)
	g, err := tape.Grad([]autodiff.Value{loss}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range testutil.Values(t, g[0]) {
		if math.Abs(v-1.0/6) > 1e-15 {
			t.Fatalf("gradient %v, want 1/6 everywhere", testutil.Values(t, g[0]))
		}
	}
}

func TestShapeTypedErrors(t *testing.T) {
	// A zero Value: no tape to report on, an invalid result, no panic.
	for _, v := range []autodiff.Value{
		autodiff.Reshape(autodiff.Value{}, 2),
		autodiff.Transpose(autodiff.Value{}),
		autodiff.Sum(autodiff.Value{}, nil, false),
		autodiff.Mean(autodiff.Value{}, []int{0}, true),
		autodiff.MatMul(autodiff.Value{}, autodiff.Value{}, forward.MatMulAttrs{}),
		autodiff.BiasAdd(autodiff.Value{}, autodiff.Value{}, ""),
		autodiff.Fill(nil, tensor.Float64, []int{2}, 1),
	} {
		if err := v.Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
			t.Fatalf("op on zero Values: err = %v", err)
		}
	}

	// A zero Value next to a valid one is an error on the valid one's tape.
	tape := autodiff.NewTape()
	x := tape.Watch(testutil.New(t, []int{2, 2}, []float64{1, 2, 3, 4}))
	y := autodiff.MatMul(autodiff.Value{}, x, forward.MatMulAttrs{})
	if err := y.Err(); !errors.Is(err, autodiff.ErrInvalidValue) || !errors.Is(tape.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Value argument: %v / %v", err, tape.Err())
	}

	// Values of two tapes.
	tape = autodiff.NewTape()
	other := autodiff.NewTape()
	a := tape.Watch(testutil.New(t, []int{2, 2}, []float64{1, 2, 3, 4}))
	b := other.Watch(testutil.New(t, []int{2, 2}, []float64{1, 2, 3, 4}))
	if err := autodiff.MatMul(a, b, forward.MatMulAttrs{}).Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("mixed tapes: %v", err)
	}
	if err := autodiff.BiasAdd(a, b, "").Err(); err == nil {
		t.Fatal("mixed tapes in BiasAdd: no error")
	}

	// Op errors name the op and the caller's line.
	tape = autodiff.NewTape()
	x = tape.Watch(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
	err := autodiff.MatMul(x, x, forward.MatMulAttrs{}).Err()
	if !errors.Is(err, autodiff.ErrShape) || !strings.Contains(err.Error(), "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]") ||
		!strings.Contains(err.Error(), "ops_shape_test.go") {
		t.Fatalf("MatMul error = %v", err)
	}
	// The error is sticky: later ops return invalid values.
	if err := autodiff.Sum(x, nil, false).Err(); err == nil {
		t.Fatal("op after an error succeeded")
	}

	for _, f := range []func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value{
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.Reshape(x, 4, 2) },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.Reshape(x, 1<<40) },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.Transpose(x, 0, 0) },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.Sum(x, []int{2}, false) },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.Mean(x, []int{0, -2}, false) },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.BiasAdd(x, x, "NHWC") },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value { return autodiff.BiasAdd(x, x, "NDHWC") },
		func(tp *autodiff.Tape, x autodiff.Value) autodiff.Value {
			return autodiff.Fill(tp, tensor.Float64, []int{-1}, 0)
		},
	} {
		tp := autodiff.NewTape()
		x := tp.Watch(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
		v := f(tp, x)
		if v.Err() == nil || tp.Err() == nil {
			t.Fatalf("no error for %v", v)
		}
		var oe *autodiff.OpError
		if !errors.As(tp.Err(), &oe) || oe.Op == "" {
			t.Fatalf("error %v is not an OpError naming the op", tp.Err())
		}
	}
}
