package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// redNaive reduces x over the axes set in red (float64, in index order)
// and returns the keep-dims-free output and its count per element.
func redNaive(x []float64, shape []int, red []bool, mean bool) ([]float64, []int) {
	var outShape []int
	for i, d := range shape {
		if !red[i] {
			outShape = append(outShape, d)
		}
	}
	n := 1
	for _, d := range outShape {
		n *= d
	}
	out := make([]float64, n)
	cnt := make([]int, n)
	ist := shpStrides(shape)
	ost := shpStrides(outShape)
	for i, v := range x {
		o, k := 0, 0
		for a := range shape {
			idx := i / ist[a] % shape[a]
			if !red[a] {
				o += idx * ost[k]
				k++
			}
		}
		out[o] += v
		cnt[o]++
	}
	if mean {
		c := 1
		for a, d := range shape {
			if red[a] {
				c *= d
			}
		}
		for i := range out {
			out[i] /= float64(c)
		}
	}
	return out, outShape
}

// redSubsets returns every subset of 0..r-1 as axis lists.
func redSubsets(r int) [][]int {
	var out [][]int
	for m := 0; m < 1<<r; m++ {
		var s []int
		for a := 0; a < r; a++ {
			if m&(1<<a) != 0 {
				s = append(s, a)
			}
		}
		out = append(out, s)
	}
	return out
}

func TestSumMean(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	shapes := [][]int{{}, {7}, {3, 4}, {1, 5}, {2, 3, 4}, {2, 1, 3}, {3, 2, 1, 4}, {2, 0, 3}, {0}, {4, 1, 1, 3}}
	for i := 0; i < 5; i++ {
		shapes = append(shapes, shpRandShape(r, 1+r.Intn(4), 6))
	}
	for _, s := range shapes {
		x := SampleNormal(r, s...)
		x32 := testutil.To32(t, x)
		for _, axes := range redSubsets(len(s)) {
			red := make([]bool, len(s))
			given := make([]int, len(axes))
			for i, a := range axes {
				red[a] = true
				given[i] = a
				if r.Intn(2) == 0 {
					given[i] = a - len(s) // negative form
				}
			}
			// Axes in a random order.
			r.Shuffle(len(given), func(i, j int) { given[i], given[j] = given[j], given[i] })
			for _, op := range []string{"Sum", "Mean"} {
				want, dropShape := redNaive(x.Float64s(), s, red, op == "Mean")
				for _, keep := range []bool{false, true} {
					wantShape := dropShape
					if keep {
						wantShape = make([]int, len(s))
						for i, d := range s {
							wantShape[i] = d
							if red[i] {
								wantShape[i] = 1
							}
						}
					}
					for _, axisIn := range []*tensor.Dense{shpInt32s(given...), shpInt64s(given...)} {
						name := fmt.Sprintf("%s %v axes %v keep %v", op, s, given, keep)
						out := registrytest.MustRun(t, op, SumAttrs{KeepDims: keep}, 2, x, axisIn)[0]
						testutil.ShapeIs(t, name, out, wantShape...)
						shpClose(t, name, out.Float64s(), want, 1e-12)
						out32 := registrytest.MustRun(t, op, SumAttrs{KeepDims: keep}, 1, x32, axisIn)[0]
						testutil.ShapeIs(t, name+" float32", out32, wantShape...)
						shpClose(t, name+" float32", testutil.Float64s(t, out32), want, 1e-6)
					}
					if len(given) == 1 { // scalar axis
						out := registrytest.MustRun(t, op, SumAttrs{KeepDims: keep}, 1, x, shpInt32Scalar(given[0]))[0]
						testutil.ShapeIs(t, "scalar axis", out, wantShape...)
						shpClose(t, "scalar axis", out.Float64s(), want, 1e-12)
					}
				}
			}
		}
	}
}

// TestSumEmpty: reducing an empty dimension gives 0 for Sum and NaN for
// Mean; an empty kept dimension gives an empty output.
func TestSumEmpty(t *testing.T) {
	x := shpMust(tensorx.New([]int{0, 3}, []float64{}))
	out := registrytest.MustRun(t, "Sum", nil, 1, x, shpInt32s(0))[0]
	testutil.ShapeIs(t, "Sum", out, []int{3}...)
	shpClose(t, "Sum", out.Float64s(), []float64{0, 0, 0}, 0)
	out = registrytest.MustRun(t, "Mean", nil, 1, testutil.To32(t, x), shpInt32s(0))[0]
	for _, v := range out.Float32s() {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("Mean over an empty axis = %v, want NaN", out.Float32s())
		}
	}
	out = registrytest.MustRun(t, "Sum", SumAttrs{KeepDims: true}, 1, x, shpInt32s(1))[0]
	testutil.ShapeIs(t, "Sum keep", out, []int{0, 1}...)
	out = registrytest.MustRun(t, "Mean", nil, 1, x, shpInt32s(0, 1))[0]
	if v := out.Float64s(); len(v) != 1 || !math.IsNaN(v[0]) {
		t.Fatalf("Mean of an empty tensor = %v, want [NaN]", v)
	}
}

// TestSumLarge covers the parallel paths (inner, outer and middle
// reductions) and checks that results do not depend on the thread count,
// and that float32 sums are accumulated in float64.
func TestSumLarge(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	cases := []struct {
		shape, axes []int
	}{
		{[]int{300, 257}, []int{1}},
		{[]int{300, 257}, []int{0}},
		{[]int{13, 40, 3000}, []int{1}},
		{[]int{13, 40, 70}, []int{0, 2}},
		{[]int{5, 7, 9, 11}, []int{1, 3}},
		{[]int{100000}, []int{0}},
		// Few outputs, long reductions: chunked along the reduced axis.
		{[]int{300001}, []int{0}},
		{[]int{40000, 8}, []int{0}},
		{[]int{3, 60001, 5}, []int{1}},
		{[]int{2, 700, 3000}, []int{1}},
		{[]int{5, 30000, 3}, []int{0, 1}},
	}
	for _, c := range cases {
		x := SampleNormal(r, c.shape...)
		red := make([]bool, len(c.shape))
		for _, a := range c.axes {
			red[a] = true
		}
		want, _ := redNaive(x.Float64s(), c.shape, red, false)
		var ref []float64
		for _, threads := range []int{1, 2, 3, 8} {
			out := registrytest.MustRun(t, "Sum", nil, threads, x, shpInt32s(c.axes...))[0]
			shpClose(t, fmt.Sprint(c.shape, c.axes), out.Float64s(), want, 1e-10)
			if ref == nil {
				ref = out.Float64s()
			} else {
				for i, v := range out.Float64s() {
					if v != ref[i] {
						t.Fatalf("%v axes %v: %d threads differ at %d: %v vs %v", c.shape, c.axes, threads, i, v, ref[i])
					}
				}
			}
		}
	}
	// float32: 2^24 + many ones would lose them all in float32
	// accumulation; in float64 the rounded result is exact.
	n := 1 << 18 // long enough to be summed in chunks
	v := make([]float32, n)
	v[0] = 1 << 24
	for i := 1; i < n; i++ {
		v[i] = 1
	}
	x := shpMust(tensorx.New([]int{n}, v))
	out := registrytest.MustRun(t, "Sum", nil, 1, x, shpInt32s(0))[0]
	if got, want := out.Float32s()[0], float32(1<<24+n-1); got != want {
		t.Fatalf("float32 Sum = %v, want %v", got, want)
	}
	out = registrytest.MustRun(t, "Mean", nil, 1, x, shpInt32s(0))[0]
	if got, want := out.Float32s()[0], float32(float64(1<<24+n-1)/float64(n)); got != want {
		t.Fatalf("float32 Mean = %v, want %v", got, want)
	}
}

func TestSumInt(t *testing.T) {
	x := shpMust(tensorx.New([]int{2, 3}, []int32{1, 2, 3, 4, 5, 6}))
	out := registrytest.MustRun(t, "Sum", nil, 1, x, shpInt32s(1))[0]
	if fmt.Sprint(out.Int32s()) != "[6 15]" {
		t.Fatalf("int32 Sum = %v", out.Int32s())
	}
	// int32 wraps as in TensorFlow.
	w := shpMust(tensorx.New([]int{2}, []int32{math.MaxInt32, 1}))
	out = registrytest.MustRun(t, "Sum", nil, 1, w, shpInt32s(0))[0]
	if got := out.Int32s()[0]; got != math.MinInt32 {
		t.Fatalf("int32 overflow Sum = %v, want %v", got, int32(math.MinInt32))
	}
	y := shpMust(tensorx.New([]int{2, 2}, []int64{1, 2, 3, 4}))
	out = registrytest.MustRun(t, "Sum", SumAttrs{KeepDims: true}, 1, y, shpInt64s(0))[0]
	if fmt.Sprint(out.Int64s()) != "[4 6]" || !tensorx.SameShape(out.Shape(), []int{1, 2}) {
		t.Fatalf("int64 Sum = %v %v", out.Int64s(), out.Shape())
	}
	if _, err := registrytest.Run(t, "Mean", nil, 1, y, shpInt32s(0)); err == nil {
		t.Fatal("Mean of int64 should be refused")
	}
}

func TestSumErrors(t *testing.T) {
	x := SampleNormal(rand.New(rand.NewSource(13)), 2, 3)
	for _, op := range []string{"Sum", "Mean"} {
		cases := []struct {
			axes *tensor.Dense
			kind error
			frag string
		}{
			{shpInt32s(2), registry.ErrInvalidArgument, "Invalid reduction dimension (2 for input with 2 dimension(s)"},
			{shpInt32s(-3), registry.ErrInvalidArgument, "Invalid reduction dimension (-3 for input with 2 dimension(s)"},
			{shpInt32s(0, 0), registry.ErrInvalidArgument, "Invalid reduction arguments: Axes contains duplicate dimension: 0"},
			{shpInt32s(1, -1), registry.ErrInvalidArgument, "Axes contains duplicate dimension: 1"},
			{shpMust(tensorx.New([]int{1, 1}, []int32{0})), registry.ErrShape, "at most rank 1"},
			{SampleNormal(rand.New(rand.NewSource(14)), 1), registry.ErrDtype, "int32 or int64"},
		}
		for _, c := range cases {
			_, err := registrytest.Run(t, op, nil, 1, x, c.axes)
			testutil.WantErr(t, err, c.kind, op, c.frag)
		}
		// A scalar input has no axes to reduce.
		_, err := registrytest.Run(t, op, nil, 1, SampleNormal(rand.New(rand.NewSource(15))), shpInt32s(0))
		testutil.WantErr(t, err, registry.ErrInvalidArgument, "for input with 0 dimension(s)")
		// Unknown attrs.
		d, _ := registry.Lookup(op)
		if _, err := d.ParseAttrs(map[string]any{"keep_dims": true, "Tidx": "int32", "T": "float"}); err != nil {
			t.Fatalf("%s ParseAttrs: %v", op, err)
		}
		if _, err := d.ParseAttrs(map[string]any{"keepdims": true}); err == nil {
			t.Fatalf("%s ParseAttrs accepted an unknown attr", op)
		}
	}
}

func TestReducedShape(t *testing.T) {
	out := registrytest.MustRun(t, "tapegrad.ReducedShape", nil, 1, shpInt32s(2, 3, 4), shpInt32s(-1, 0))[0]
	if fmt.Sprint(out.Int32s()) != "[1 3 1]" {
		t.Fatalf("ReducedShape = %v", out.Int32s())
	}
	out = registrytest.MustRun(t, "tapegrad.ReducedShape", nil, 1, shpInt64s(5, 6), shpInt32Scalar(1))[0]
	if fmt.Sprint(out.Int64s()) != "[5 1]" {
		t.Fatalf("ReducedShape int64 = %v", out.Int64s())
	}
	out = registrytest.MustRun(t, "tapegrad.ReducedShape", nil, 1, shpInt32s(), shpInt32s())[0]
	if len(out.Int32s()) != 0 {
		t.Fatalf("ReducedShape of a scalar = %v", out.Int32s())
	}
	_, err := registrytest.Run(t, "tapegrad.ReducedShape", nil, 1, shpInt32s(2, 3), shpInt32s(2))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "tapegrad.ReducedShape", "Invalid reduction dimension")
	_, err = registrytest.Run(t, "tapegrad.ReducedShape", nil, 1, shpInt32Scalar(2), shpInt32s(0))
	testutil.WantErr(t, err, registry.ErrShape, "tapegrad.ReducedShape")
}
