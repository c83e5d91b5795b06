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

// ExampleStridedSlice takes x[1, ::-2] of a 2x4 matrix (the second row,
// every other element from the end) and its gradient.
func ExampleStridedSlice() {
	tp := autodiff.NewTape()
	x := tp.Watch(tensor.New(tensor.WithShape(2, 4), tensor.WithBacking([]float64{0, 1, 2, 3, 4, 5, 6, 7})))
	// Entry 0 is an index (shrink_axis_mask bit 0); entry 1 has neither a
	// begin nor an end (begin_mask and end_mask bit 1), step -2.
	y := autodiff.StridedSlice(x, []int{1, 0}, []int{2, 0}, []int{1, -2},
		forward.StridedSliceAttrs{ShrinkAxisMask: 1, BeginMask: 2, EndMask: 2})
	g, err := tp.Grad([]autodiff.Value{autodiff.Sum(y, nil, false)}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := y.Float64s()
	dx, _ := g[0].Float64s()
	fmt.Println(y.Shape(), v)
	fmt.Println(dx)
	// Output:
	// (2) [7 5]
	// [0 0 0 0 0 1 0 1]
}

// TestSliceOpsValues runs every typed function of ops_slice.go and checks
// values and gradients.
func TestSliceOpsValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
	y := tp.Watch(testutil.New(t, []int{1, 3}, []float64{7, 8, 9}))
	cases := []struct {
		name   string
		v      autodiff.Value
		shape  []int
		want   []float64
		dx, dy []float64 // gradient of Sum(v·w), w = 1, 2, 3, ...
	}{
		{"Concat", autodiff.Concat([]autodiff.Value{x, y}, 0), []int{3, 3}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9},
			[]float64{1, 2, 3, 4, 5, 6}, []float64{7, 8, 9}},
		{"Concat-neg-axis", autodiff.Concat([]autodiff.Value{y, y}, -1), []int{1, 6}, []float64{7, 8, 9, 7, 8, 9},
			nil, []float64{5, 7, 9}},
		{"Slice", autodiff.Slice(x, []int{1, 1}, []int{1, -1}), []int{1, 2}, []float64{5, 6}, []float64{0, 0, 0, 0, 1, 2}, nil},
		{"StridedSlice", autodiff.StridedSlice(x, []int{0, 2}, []int{2, 0}, []int{1, -2}, forward.StridedSliceAttrs{EndMask: 2}),
			[]int{2, 2}, []float64{3, 1, 6, 4}, []float64{2, 0, 1, 4, 0, 3}, nil},
		{"Pad", autodiff.Pad(y, [][2]int{{0, 1}, {1, 0}}), []int{2, 4}, []float64{0, 7, 8, 9, 0, 0, 0, 0}, nil, []float64{2, 3, 4}},
		{"PadConstant", autodiff.PadConstant(y, [][2]int{{0, 0}, {2, 0}}, -1), []int{1, 5}, []float64{-1, -1, 7, 8, 9}, nil, []float64{3, 4, 5}},
	}
	for _, c := range cases {
		got, err := c.v.Float64s()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal([]int(c.v.Shape()), c.shape) || !slices.Equal(got, c.want) {
			t.Fatalf("%s: %v %v, want %v %v", c.name, c.v.Shape(), got, c.shape, c.want)
		}
		w := tp.Constant(testutil.Dense(t, tensor.Float64, c.shape, testutil.Arange(len(c.want))))
		g, err := tp.Grad([]autodiff.Value{autodiff.Sum(autodiff.Mul(c.v, w), nil, false)}, []autodiff.Value{x, y}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatalf("%s grad: %v", c.name, err)
		}
		for i, want := range [][]float64{c.dx, c.dy} {
			if want == nil {
				want = make([]float64, []int{6, 3}[i])
			}
			testutil.Close(t, fmt.Sprintf("%s grad %d", c.name, i), testutil.Values(t, g[i]), want, testutil.Tol{})
		}
	}
	am, err := autodiff.ArgMax(x, 1).Int64s()
	if err != nil || !slices.Equal(am, []int64{2, 2}) {
		t.Fatalf("ArgMax: %v %v", am, err)
	}
	an, err := autodiff.ArgMin(x, -2).Int64s()
	if err != nil || !slices.Equal(an, []int64{0, 0, 0}) {
		t.Fatalf("ArgMin: %v %v", an, err)
	}
	if v := autodiff.Slice(x, []int{3, 0}, []int{1, 1}); v.Err() == nil || tp.Err() == nil {
		t.Fatal("Slice out of range: no error")
	}
}
