package autodiff_test

import (
	"fmt"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// ExampleAvgPool averages 2x2 windows with SAME padding: the windows at
// the right and bottom border hold fewer input elements, and each is
// averaged over its own count (TensorFlow's rule).
func ExampleAvgPool() {
	tp := autodiff.NewTape()
	x := tp.Constant(tensor.New(tensor.WithShape(1, 3, 3, 1), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9})))
	y := autodiff.AvgPool(x, forward.PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}, Padding: "SAME"})
	v, err := y.Float64s()
	fmt.Println(y.Shape(), v, err)
	// Output: (1, 2, 2, 1) [3 4.5 7.5 9] <nil>
}

func TestPoolOpsValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{1, 2, 4, 1}, []float64{1, 5, 2, 2, 3, 4, 8, 0}))
	a := forward.PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}, Padding: "VALID"}
	mp := autodiff.MaxPool(x, a)
	ap := autodiff.AvgPool(x, a)
	for _, c := range []struct {
		name   string
		v      autodiff.Value
		want   []float64
		wantDx []float64
	}{
		{"MaxPool", mp, []float64{5, 8}, []float64{0, 1, 0, 0, 0, 0, 1, 0}},
		{"AvgPool", ap, []float64{3.25, 3}, []float64{0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25, 0.25}},
	} {
		got, err := c.v.Float64s()
		if err != nil || !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v %v, want %v", c.name, got, err, c.want)
		}
		g, err := tp.Grad([]autodiff.Value{autodiff.Sum(c.v, nil, false)}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		testutil.Close(t, c.name+" grad", testutil.Values(t, g[0]), c.wantDx, testutil.Tol{})
	}
	dy := tp.Constant(testutil.New(t, []int{1, 1, 2, 1}, []float64{1, 2}))
	mg, err := autodiff.MaxPoolGrad(x, mp, dy, a).Float64s()
	if err != nil || !slices.Equal(mg, []float64{0, 1, 0, 0, 0, 0, 2, 0}) {
		t.Fatalf("MaxPoolGrad: %v %v", mg, err)
	}
	ag, err := autodiff.AvgPoolGrad([]int{1, 2, 4, 1}, dy, a).Float64s()
	if err != nil || !slices.Equal(ag, []float64{0.25, 0.25, 0.5, 0.5, 0.25, 0.25, 0.5, 0.5}) {
		t.Fatalf("AvgPoolGrad: %v %v", ag, err)
	}
}
