package forward

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// shpClose compares got with want elementwise (NaN equal to NaN).
func shpClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	testutil.Close(t, what, got, want, testutil.Tol{Abs: tol, Rel: tol, NaN: true})
}

// shpStrides returns row-major strides.
func shpStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// shpPerms returns every permutation of 0..n-1.
func shpPerms(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range shpPerms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// shpRandShape returns a random shape of the given rank with sizes in
// 1..maxDim (and size 1 often, to exercise the simplifications).
func shpRandShape(r *rand.Rand, rank, maxDim int) []int {
	s := make([]int, rank)
	for i := range s {
		if r.Intn(4) == 0 {
			s[i] = 1
		} else {
			s[i] = 1 + r.Intn(maxDim)
		}
	}
	return s
}

func TestReshape(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	cases := []struct {
		in, shape, want []int
	}{
		{[]int{2, 3, 4}, []int{4, -1}, []int{4, 6}},
		{[]int{2, 3, 4}, []int{-1}, []int{24}},
		{[]int{6}, []int{2, 3}, []int{2, 3}},
		{[]int{}, []int{1, 1}, []int{1, 1}},
		{[]int{1, 1}, []int{}, []int{}},
		{[]int{0, 3}, []int{3, 0}, []int{3, 0}},
		{[]int{0, 3}, []int{-1, 0}, []int{3, 0}},       // zero sizes skipped: -1 inferred from the rest
		{[]int{0, 4}, []int{2, -1, 0}, []int{2, 2, 0}}, // 4 / 2
		{[]int{0}, []int{5, -1}, []int{5, 0}},
		{[]int{3, 1, 2}, []int{-1, 1}, []int{6, 1}},
	}
	for _, c := range cases {
		x := SampleNormal(r, c.in...)
		for _, mk := range []func(...int) *tensor.Dense{shpInt32s, shpInt64s} {
			for _, conv := range []bool{false, true} {
				xx := x
				if conv {
					xx = testutil.To32(t, x)
				}
				out := registrytest.MustRun(t, "Reshape", nil, 1, xx, mk(c.shape...))[0]
				testutil.ShapeIs(t, fmt.Sprint("Reshape", c.in, c.shape), out, c.want...)
				shpClose(t, "Reshape", testutil.Float64s(t, out), testutil.Float64s(t, xx), 0)
			}
		}
	}
	// Integer and bool tensors, and a scalar shape input (TF's legacy form).
	xi := shpMust(tensorx.New([]int{2, 2}, []int32{1, 2, 3, 4}))
	out := registrytest.MustRun(t, "Reshape", nil, 1, xi, shpInt32s(4))[0]
	if got := out.Int32s(); fmt.Sprint(got) != "[1 2 3 4]" || out.Dtype() != tensor.Int32 {
		t.Fatalf("int32 reshape = %v", got)
	}
	xb := shpMust(tensorx.New([]int{2}, []bool{true, false}))
	out = registrytest.MustRun(t, "Reshape", nil, 1, xb, shpInt32Scalar(2))[0]
	if got := out.Bools(); !got[0] || got[1] {
		t.Fatalf("bool reshape = %v", got)
	}
	// The output is a copy.
	x := SampleNormal(r, 4)
	out = registrytest.MustRun(t, "Reshape", nil, 1, x, shpInt32s(2, 2))[0]
	out.Float64s()[0] = 42
	if x.Float64s()[0] == 42 {
		t.Fatal("Reshape output aliases its input")
	}
}

func TestReshapeErrors(t *testing.T) {
	x := SampleNormal(rand.New(rand.NewSource(2)), 2, 3)
	cases := []struct {
		shape *tensor.Dense
		kind  error
		frag  string
	}{
		{shpInt32s(-1, -1), registry.ErrInvalidArgument, "Only one input size may be -1, not both 0 and 1"},
		{shpInt32s(2, -2), registry.ErrInvalidArgument, "Size 1 must be non-negative, not -2"},
		{shpInt32s(4, 2), registry.ErrInvalidArgument, "Input to reshape is a tensor with 6 values, but the requested shape has 8"},
		{shpInt32s(4, -1), registry.ErrInvalidArgument, "Input to reshape is a tensor with 6 values, but the requested shape requires a multiple of 4"},
		{shpInt32s(0, -1), registry.ErrInvalidArgument, "Input to reshape is a tensor with 6 values, but the requested shape has 0"},
		{shpMust(tensorx.New([]int{1, 2}, []int32{2, 3})), registry.ErrShape, "sizes input must be 1-D, not [1,2]"},
		{SampleNormal(rand.New(rand.NewSource(3)), 2), registry.ErrDtype, "Reshape"},
	}
	for _, c := range cases {
		_, err := registrytest.Run(t, "Reshape", nil, 1, x, c.shape)
		testutil.WantErr(t, err, c.kind, "Reshape", c.frag)
	}
}

// shpNaiveTranspose transposes in float64 by index arithmetic.
func shpNaiveTranspose(x []float64, shape, perm []int) []float64 {
	out := make([]float64, len(x))
	os := make([]int, len(perm))
	for i, a := range perm {
		os[i] = shape[a]
	}
	ist := shpStrides(shape)
	ost := shpStrides(os)
	for o := range out {
		src := 0
		for i := range os {
			idx := o / ost[i] % os[i]
			src += idx * ist[perm[i]]
		}
		out[o] = x[src]
	}
	return out
}

func TestTranspose(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	shapes := [][]int{{}, {5}, {3, 4}, {1, 7}, {2, 3, 4}, {2, 1, 3}, {3, 1, 1, 2}, {2, 3, 4, 5}, {2, 0, 3}, {1, 1, 1}}
	for i := 0; i < 6; i++ {
		shapes = append(shapes, shpRandShape(r, 1+r.Intn(4), 5))
	}
	for _, s := range shapes {
		x := SampleNormal(r, s...)
		for _, perm := range shpPerms(len(s)) {
			want := shpNaiveTranspose(x.Float64s(), s, perm)
			wantShape := make([]int, len(perm))
			for i, a := range perm {
				wantShape[i] = s[a]
			}
			for _, threads := range []int{1, 3} {
				name := fmt.Sprintf("Transpose %v perm %v threads %d", s, perm, threads)
				out := registrytest.MustRun(t, "Transpose", nil, threads, x, shpInt32s(perm...))[0]
				testutil.ShapeIs(t, name, out, wantShape...)
				shpClose(t, name, out.Float64s(), want, 0)
				out32 := registrytest.MustRun(t, "Transpose", nil, threads, testutil.To32(t, x), shpInt64s(perm...))[0]
				shpClose(t, name+" float32", testutil.Float64s(t, out32), testutil.Float64s(t, shpMust(tensorx.New(wantShape, want))), 1e-7)
			}
		}
	}
}

// TestTransposeLarge covers the tiled path and the general strided path
// on sizes that are not multiples of the tile, with several threads.
func TestTransposeLarge(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	cases := []struct{ shape, perm []int }{
		{[]int{67, 45}, []int{1, 0}},
		{[]int{3, 70, 33}, []int{0, 2, 1}},
		{[]int{4, 9, 11, 40}, []int{0, 3, 1, 2}}, // NHWC -> NCHW
		{[]int{4, 40, 9, 11}, []int{0, 2, 3, 1}}, // NCHW -> NHWC
		{[]int{5, 6, 7, 8}, []int{3, 1, 0, 2}},
		{[]int{130, 129}, []int{1, 0}},
	}
	for _, c := range cases {
		x := SampleNormal(r, c.shape...)
		want := shpNaiveTranspose(x.Float64s(), c.shape, c.perm)
		for _, threads := range []int{1, 2, 4} {
			out := registrytest.MustRun(t, "Transpose", nil, threads, x, shpInt32s(c.perm...))[0]
			shpClose(t, fmt.Sprint(c.shape, c.perm, threads), out.Float64s(), want, 0)
		}
	}
	// Integer and bool element types share the generic kernel.
	xi := shpMust(tensorx.New([]int{2, 3}, []int64{1, 2, 3, 4, 5, 6}))
	out := registrytest.MustRun(t, "Transpose", nil, 1, xi, shpInt32s(1, 0))[0]
	if fmt.Sprint(out.Int64s()) != "[1 4 2 5 3 6]" {
		t.Fatalf("int64 transpose = %v", out.Int64s())
	}
	xb := shpMust(tensorx.New([]int{2, 2}, []bool{true, true, false, false}))
	out = registrytest.MustRun(t, "Transpose", nil, 1, xb, shpInt32s(1, 0))[0]
	if fmt.Sprint(out.Bools()) != "[true false true false]" {
		t.Fatalf("bool transpose = %v", out.Bools())
	}
}

func TestTransposeErrors(t *testing.T) {
	x := SampleNormal(rand.New(rand.NewSource(6)), 2, 3, 4)
	cases := []struct {
		perm *tensor.Dense
		kind error
		frag string
	}{
		{shpInt32s(0, 1), registry.ErrInvalidArgument, "transpose expects a vector of size 3. But input(1) is a vector of size 2"},
		{shpInt32s(0, 1, 3), registry.ErrInvalidArgument, "3 is out of range [0 .. 3)"},
		{shpInt32s(0, -1, 2), registry.ErrInvalidArgument, "-1 is out of range [0 .. 3)"},
		{shpInt32s(0, 1, 1), registry.ErrInvalidArgument, "2 is missing from {0,1,1}."},
		{shpMust(tensorx.New([]int{1, 3}, []int32{0, 1, 2})), registry.ErrShape, "perm must be rank 1, got shape [1,3]"},
		{SampleNormal(rand.New(rand.NewSource(7)), 3), registry.ErrDtype, "Transpose"},
	}
	for _, c := range cases {
		_, err := registrytest.Run(t, "Transpose", nil, 1, x, c.perm)
		testutil.WantErr(t, err, c.kind, "Transpose", c.frag)
	}
}

func TestFill(t *testing.T) {
	for _, dims := range [][]int{{2, 3}, {}, {4, 0}, {1, 5, 1}} {
		n := 1
		for _, d := range dims {
			n *= d
		}
		for _, mk := range []func(...int) *tensor.Dense{shpInt32s, shpInt64s} {
			v := shpMust(tensorx.New(nil, []float64{2.5}))
			out := registrytest.MustRun(t, "Fill", nil, 2, mk(dims...), v)[0]
			testutil.ShapeIs(t, "Fill", out, dims...)
			want := make([]float64, n)
			for i := range want {
				want[i] = 2.5
			}
			shpClose(t, "Fill", out.Float64s(), want, 0)
			out = registrytest.MustRun(t, "Fill", nil, 1, mk(dims...), shpMust(tensorx.New([]int{1}, []float32{-1.5})))[0]
			if out.Dtype() != tensor.Float32 {
				t.Fatalf("Fill dtype %v", out.Dtype())
			}
			for i := range want {
				want[i] = -1.5
			}
			shpClose(t, "Fill float32", testutil.Float64s(t, out), want, 0)
		}
	}
	out := registrytest.MustRun(t, "Fill", nil, 1, shpInt32s(3), shpMust(tensorx.New(nil, []int64{7})))[0]
	if fmt.Sprint(out.Int64s()) != "[7 7 7]" {
		t.Fatalf("int64 Fill = %v", out.Int64s())
	}
	out = registrytest.MustRun(t, "Fill", nil, 1, shpInt32Scalar(2), shpMust(tensorx.New(nil, []bool{false})))[0]
	if fmt.Sprint(out.Bools()) != "[false false]" {
		t.Fatalf("bool Fill = %v", out.Bools())
	}
	out = registrytest.MustRun(t, "Fill", nil, 1, shpInt32s(2), shpMust(tensorx.New(nil, []int32{-3})))[0]
	if fmt.Sprint(out.Int32s()) != "[-3 -3]" {
		t.Fatalf("int32 Fill = %v", out.Int32s())
	}
}

func TestFillErrors(t *testing.T) {
	v := shpMust(tensorx.New(nil, []float64{1}))
	cases := []struct {
		dims, value *tensor.Dense
		kind        error
		frag        string
	}{
		{shpInt32s(2, -1), v, registry.ErrInvalidArgument, "Dimension -1 must be >= 0"},
		{shpMust(tensorx.New([]int{1, 2}, []int32{1, 2})), v, registry.ErrShape, "dims must represent a vector, got shape [1,2]"},
		{shpInt32s(2), shpMust(tensorx.New([]int{2}, []float64{1, 2})), registry.ErrShape, "value must represent a scalar, got shape [2]"},
		{SampleNormal(rand.New(rand.NewSource(8)), 2), v, registry.ErrDtype, "Fill"},
	}
	for _, c := range cases {
		_, err := registrytest.Run(t, "Fill", nil, 1, c.dims, c.value)
		testutil.WantErr(t, err, c.kind, "Fill", c.frag)
	}
}

func TestInvertPermutation(t *testing.T) {
	out := registrytest.MustRun(t, "InvertPermutation", nil, 1, shpInt32s(2, 0, 3, 1))[0]
	if fmt.Sprint(out.Int32s()) != "[1 3 0 2]" {
		t.Fatalf("InvertPermutation = %v", out.Int32s())
	}
	out = registrytest.MustRun(t, "InvertPermutation", nil, 1, shpInt64s())[0]
	if len(out.Int64s()) != 0 {
		t.Fatalf("empty InvertPermutation = %v", out.Int64s())
	}
	_, err := registrytest.Run(t, "InvertPermutation", nil, 1, shpInt32s(0, 2))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "InvertPermutation", "2 is not between 0 and 2")
	_, err = registrytest.Run(t, "InvertPermutation", nil, 1, shpInt32s(1, 1))
	testutil.WantErr(t, err, registry.ErrInvalidArgument, "InvertPermutation", "1 is duplicated in the input.")
	_, err = registrytest.Run(t, "InvertPermutation", nil, 1, shpInt32Scalar(0))
	testutil.WantErr(t, err, registry.ErrShape, "InvertPermutation", "1D vector")
}

// TestShapeSamples runs every sample generator of this family through its
// op, so a generator producing invalid inputs fails here.
func TestShapeSamples(t *testing.T) {
	for _, op := range []string{"Reshape", "Transpose", "Fill", "Sum", "Mean", "MatMul", "BiasAdd"} {
		d, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		if d.Samples == nil {
			t.Fatalf("%s has no sample generator", op)
		}
		ss := d.Samples(rand.New(rand.NewSource(9)))
		if len(ss) < 3 {
			t.Fatalf("%s: only %d samples", op, len(ss))
		}
		for _, s := range ss {
			if _, err := registrytest.Run(t, op, s.Attrs, 1, s.Inputs...); err != nil {
				t.Errorf("%s sample %s: %v", op, s.Name, err)
			}
		}
	}
}
