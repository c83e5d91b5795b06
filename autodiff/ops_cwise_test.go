package autodiff_test

import (
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// ExampleMaximum clips a vector from below at 0 and takes the gradient: at
// a tie (x = 0) TensorFlow sends the gradient to the first operand.
func ExampleMaximum() {
	tp := autodiff.NewTape()
	x := tp.Watch(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{-1, 0, 2})))
	y := autodiff.Maximum(x, tp.Scalar(tensor.Float64, 0))
	g, err := tp.Grad([]autodiff.Value{autodiff.Sum(y, nil, false)}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := y.Float64s()
	dx, _ := g[0].Float64s()
	fmt.Println("max(x, 0):", v)
	fmt.Println("d/dx:", dx)
	// Output:
	// max(x, 0): [0 0 2]
	// d/dx: [0 1 1]
}

// ExampleWhere picks elements of a where a > b and of b elsewhere.
func ExampleWhere() {
	tp := autodiff.NewTape()
	a := tp.Constant(tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{1, 5, 3, 0})))
	b := tp.Constant(tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{2, 2, 2, 2})))
	w := autodiff.Where(autodiff.Greater(a, b), a, b)
	v, err := w.Float64s()
	fmt.Println(v, err)
	// Output: [2 5 3 2] <nil>
}

// TestCwiseOpsValues runs every typed function of ops_cwise.go once and
// checks values and, for the differentiable ones, gradients.
func TestCwiseOpsValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{3}, []float64{-2, 0.5, 3}))
	y := tp.Watch(testutil.New(t, []int{3}, []float64{1, 0.5, 2}))
	cases := []struct {
		name    string
		v       autodiff.Value
		want    []float64
		dx, dy  []float64 // gradient of Sum(v); nil: not checked
		boolOut bool
	}{
		{"Abs", autodiff.Abs(x), []float64{2, 0.5, 3}, []float64{-1, 1, 1}, []float64{0, 0, 0}, false},
		{"Sign", autodiff.Sign(x), []float64{-1, 1, 1}, nil, nil, false},
		{"Maximum", autodiff.Maximum(x, y), []float64{1, 0.5, 3}, []float64{0, 1, 1}, []float64{1, 0, 0}, false},
		{"Minimum", autodiff.Minimum(x, y), []float64{-2, 0.5, 2}, []float64{1, 1, 0}, []float64{0, 0, 1}, false},
		{"Pow", autodiff.Pow(y, x), []float64{1, math.Sqrt(0.5), 8}, []float64{0, math.Sqrt(0.5) * math.Log(0.5), 8 * math.Log(2)},
			[]float64{-2, 0.5 / math.Sqrt(0.5), 12}, false},
		{"Greater", autodiff.Greater(x, y), []float64{0, 0, 1}, nil, nil, true},
		{"GreaterEqual", autodiff.GreaterEqual(x, y), []float64{0, 1, 1}, nil, nil, true},
		{"Less", autodiff.Less(x, y), []float64{1, 0, 0}, nil, nil, true},
		{"LessEqual", autodiff.LessEqual(x, y), []float64{1, 1, 0}, nil, nil, true},
		{"Equal", autodiff.Equal(x, y), []float64{0, 1, 0}, nil, nil, true},
		{"NotEqual", autodiff.NotEqual(x, y), []float64{1, 0, 1}, nil, nil, true},
		{"Where", autodiff.Where(autodiff.Less(x, y), x, y), []float64{-2, 0.5, 2}, []float64{1, 0, 0}, []float64{0, 1, 1}, false},
	}
	for _, c := range cases {
		d, err := c.v.Data()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []float64
		if c.boolOut {
			for _, b := range tensorx.MustSlice[bool](d) {
				got = append(got, map[bool]float64{true: 1}[b])
			}
		} else {
			got = testutil.Float64s(t, d)
		}
		testutil.Close(t, c.name, got, c.want, testutil.Tol{Rel: 1e-15, RelFloor: 1})
		if c.dx == nil {
			continue
		}
		g, err := tp.Grad([]autodiff.Value{autodiff.Sum(c.v, nil, false)}, []autodiff.Value{x, y}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatalf("%s grad: %v", c.name, err)
		}
		testutil.Close(t, c.name+" dx", testutil.Values(t, g[0]), c.dx, testutil.Tol{Rel: 1e-15, RelFloor: 1})
		testutil.Close(t, c.name+" dy", testutil.Values(t, g[1]), c.dy, testutil.Tol{Rel: 1e-15, RelFloor: 1})
	}
}

// TestCwiseNoTape: a zero Value has no tape to record on.
func TestCwiseNoTape(t *testing.T) {
	var z autodiff.Value
	for _, v := range []autodiff.Value{autodiff.Abs(z), autodiff.Maximum(z, z), autodiff.Where(z, z, z), autodiff.Equal(z, z)} {
		if v.Err() == nil {
			t.Fatal("op on zero Values: no error")
		}
	}
}
