package backward_test

import (
	"math/rand"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestSliceFamilyGradients runs the first- and second-order checks on
// every sample configuration of the slicing and elementwise families (the
// default sweep keeps only a few per op), for two generator seeds.
func TestSliceFamilyGradients(t *testing.T) {
	checkSamples(t, []string{"ConcatV2", "Slice", "StridedSlice", "StridedSliceGrad", "tapegrad.SliceGrad", "Pad", "PadV2",
		"Abs", "Maximum", "Minimum", "Pow", "Select", "SelectV2"}, []int64{1, 2}, 0, 3)
	for _, op := range []string{"ArgMax", "ArgMin", "Sign", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual"} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		if def.GradKind() != registry.GradZero {
			t.Fatalf("%s should be not differentiable, got %v", op, def.GradKind())
		}
	}
}

// slIndex returns v as an int32 or int64 vector.
func slIndex(t *testing.T, i64 bool, v ...int) *tensor.Dense {
	if i64 {
		return testutil.New(t, []int{len(v)}, testutil.Convert[int64](v))
	}
	return testutil.New(t, []int{len(v)}, testutil.Convert[int32](v))
}

// TestStridedSliceGradScatters: StridedSliceGrad writes dy exactly where
// StridedSlice reads (found by slicing an input holding its own flat
// indices) and zeros elsewhere.
func TestStridedSliceGradScatters(t *testing.T) {
	r := rand.New(rand.NewSource(31))
	cases := []struct {
		shape               []int
		begin, end, strides []int
		a                   forward.StridedSliceAttrs
	}{
		{[]int{7}, []int{1}, []int{6}, []int{2}, forward.StridedSliceAttrs{}},
		{[]int{3, 4}, []int{5, -1}, []int{-9, 0}, []int{-1, -2}, forward.StridedSliceAttrs{}},
		{[]int{3, 4, 2}, []int{0, 1, 0}, []int{0, 3, 1}, []int{1, 1, 1}, forward.StridedSliceAttrs{EllipsisMask: 1, ShrinkAxisMask: 4}},
		{[]int{4, 5}, []int{-1, 0, 1}, []int{0, 0, 4}, []int{1, 1, 2}, forward.StridedSliceAttrs{ShrinkAxisMask: 1, NewAxisMask: 2}},
		{[]int{2, 3}, []int{0, 0}, []int{2, 3}, []int{1, 1}, forward.StridedSliceAttrs{}},
	}
	for k, c := range cases {
		i64 := k%2 == 1
		n := testutil.Numel(c.shape)
		x := testutil.Dense(t, tensor.Float64, c.shape, testutil.Arange(n)) // values 1..n
		sl := registrytest.MustRun(t, "StridedSlice", c.a, 1, x, slIndex(t, i64, c.begin...), slIndex(t, i64, c.end...), slIndex(t, i64, c.strides...))[0]
		pos := testutil.Float64s(t, sl)
		dyv := testutil.RandVals(r, len(pos), 1, 0)
		dy := testutil.Dense(t, tensor.Float64, tensorx.Shape(sl), dyv)
		for _, threads := range []int{1, 3} {
			g := registrytest.MustRun(t, "StridedSliceGrad", c.a, threads, slIndex(t, i64, c.shape...), slIndex(t, i64, c.begin...),
				slIndex(t, i64, c.end...), slIndex(t, i64, c.strides...), dy)[0]
			testutil.ShapeIs(t, "StridedSliceGrad", g, c.shape...)
			want := make([]float64, n)
			for i, p := range pos {
				want[int(p)-1] = dyv[i]
			}
			if got := testutil.Float64s(t, g); !slices.Equal(got, want) {
				t.Fatalf("case %d: %v, want %v", k, got, want)
			}
		}
	}
	_, err := registrytest.Run(t, "StridedSliceGrad", forward.StridedSliceAttrs{}, 1, slIndex(t, false, 5), slIndex(t, false, 1),
		slIndex(t, false, 4), slIndex(t, false, 1), testutil.Dense(t, tensor.Float64, []int{2}, []float64{1, 2}))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "StridedSliceGrad: shape of dy was [2] instead of [3]")
	_, err = registrytest.Run(t, "StridedSliceGrad", forward.StridedSliceAttrs{}, 1, slIndex(t, true, 5), slIndex(t, false, 1),
		slIndex(t, false, 4), slIndex(t, false, 1), testutil.Dense(t, tensor.Float64, []int{3}, []float64{1, 2, 3}))
	testutil.WantErr(t, err, registry.ErrDtype, "StridedSliceGrad")
}

func TestSliceGradKernel(t *testing.T) {
	dy := testutil.Dense(t, tensor.Float32, []int{2, 1}, []float64{5, 7})
	g := registrytest.MustRun(t, "tapegrad.SliceGrad", nil, 1, slIndex(t, true, 3, 2), slIndex(t, true, 1, 1), dy)[0]
	if got := testutil.Float64s(t, g); !slices.Equal(got, []float64{0, 0, 0, 5, 0, 7}) || g.Dtype() != tensor.Float32 {
		t.Fatalf("SliceGrad: %v %v", got, g.Dtype())
	}
	for _, c := range []struct {
		shape, begin *tensor.Dense
		kind         error
		msg          string
	}{
		{slIndex(t, false, 3, 2), slIndex(t, false, 2, 1), registry.ErrInvalidArgument, "does not fit"},
		{slIndex(t, false, 3, 2), slIndex(t, false, 1), registry.ErrInvalidArgument, "do not have one rank"},
		{slIndex(t, false, 3, 2), slIndex(t, true, 1, 1), registry.ErrDtype, "same dtype"},
		{slIndex(t, false, 3, -2), slIndex(t, false, 1, 1), registry.ErrInvalidArgument, "negative dimension"},
	} {
		_, err := registrytest.Run(t, "tapegrad.SliceGrad", nil, 1, c.shape, c.begin, dy)
		testutil.WantErr(t, err, c.kind, "tapegrad.SliceGrad", c.msg)
	}
}

// TestConcatGradAxisFromShapes: the gradient finds the axis from the
// shapes, also when all values have the same shape or are empty along the
// axis.
func TestConcatGradAxisFromShapes(t *testing.T) {
	for _, c := range []struct {
		shapes [][]int
		axis   int
	}{
		{[][]int{{2, 3}, {2, 3}}, 1},
		{[][]int{{2, 3}, {2, 3}}, 0},
		{[][]int{{0, 3}, {2, 3}}, 0},
		{[][]int{{2, 0}, {2, 0}}, 1},
	} {
		tp := autodiff.NewTape()
		var vals []autodiff.Value
		for _, s := range c.shapes {
			vals = append(vals, tp.Watch(testutil.Dense(t, tensor.Float64, s, testutil.Arange(testutil.Numel(s)))))
		}
		y := autodiff.Concat(vals, c.axis)
		up, err := y.Data()
		if err != nil {
			t.Fatal(err)
		}
		// Upstream = the output itself: each value's gradient must be the
		// value.
		g, err := tp.Grad([]autodiff.Value{y}, vals, []autodiff.Value{tp.Constant(up)}, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range c.shapes {
			testutil.Close(t, "Concat grad", testutil.Values(t, g[i]), testutil.Arange(testutil.Numel(s)), testutil.Tol{})
		}
	}
}
