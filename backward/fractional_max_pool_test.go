package backward_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestFractionalMaxPoolSecondOrderChain: y = FractionalMaxPool(tanh(x)),
// z = y·y, checked to second order away from ties (tanh keeps the inputs
// distinct).
func TestFractionalMaxPoolSecondOrderChain(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.7, 1.3, 1}, Overlapping: true, Deterministic: true, Seed: 9}
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y, _, _ := autodiff.FractionalMaxPool(autodiff.Tanh(in[0]), a)
		return []autodiff.Value{autodiff.Mul(y, y)}
	}
	x := fpSpread(t, r, 2, 6, 7, 2)
	checkOrders(t, "", f, []*tensor.Dense{x}, gradcheck.Options{Seed: 1}, gradcheck.Options{Seed: 2})
}

// TestFractionalMaxPool compares FractionalMaxPool, FractionalMaxPoolGrad
// and tapegrad.FractionalMaxPoolGradGrad with the naive references in
// every dtype, on inputs with many ties (small integers), where the
// gradient must go to the first maximum in row-major order, as in
// TensorFlow's kernel.
func TestFractionalMaxPool(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, c := range fpForwardGrid() {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		xv := make([]float64, n*h*w*ch)
		for i := range xv {
			xv[i] = float64(r.Intn(5) - 2) // many ties
		}
		name := fmt.Sprintf("%v/%v/pseudo=%v/ov=%v", c.shape, c.attrs.PoolingRatio, c.attrs.PseudoRandom, c.attrs.Overlapping)
		ga := forward.FractionalPoolGradAttrs{Overlapping: c.attrs.Overlapping}
		for _, threads := range []int{1, 3} {
			fpMaxCheck(t, name+"/f64", threads, c.attrs, ga, c.shape, xv, r)
			fpMaxCheck(t, name+"/f32", threads, c.attrs, ga, c.shape, testutil.Convert[float32](xv), r)
			fpMaxCheck(t, name+"/i32", threads, c.attrs, ga, c.shape, testutil.Convert[int32](xv), r)
			fpMaxCheck(t, name+"/i64", threads, c.attrs, ga, c.shape, testutil.Convert[int64](xv), r)
		}
	}
}

func fpMaxCheck[T fracpool.Num](t *testing.T, name string, threads int, a forward.FractionalPoolAttrs, ga forward.FractionalPoolGradAttrs, shape []int, xv []T, r *rand.Rand) {
	t.Helper()
	n, h, w, c := shape[0], shape[1], shape[2], shape[3]
	x := testutil.New(t, shape, xv)
	out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), "FractionalMaxPool", a, x)
	y, rows, cols := out[0], out[1], out[2]
	rs, cs := rows.Int64s(), cols.Int64s()
	am := testutil.FracPoolArgmax(xv, n, h, w, c, rs, cs, a.Overlapping)
	ys := tensorx.MustSlice[T](y)
	for i, p := range am {
		if ys[i] != xv[p] {
			t.Fatalf("%s: output %d = %v, want %v", name, i, ys[i], xv[p])
		}
	}
	dyv := make([]T, len(am))
	for i := range dyv {
		dyv[i] = T(r.Intn(19) - 9)
	}
	want := make([]T, len(xv))
	for i, p := range am { // scatter in output order, in T
		want[p] += dyv[i]
	}
	g := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), "FractionalMaxPoolGrad", ga, x, y, testutil.New(t, tensorx.Shape(y), dyv), rows, cols)
	testutil.SameBits(t, name+"/grad", tensorx.MustSlice[T](g[0]), want)
	gv := make([]T, len(xv))
	for i := range gv {
		gv[i] = T(r.Intn(19) - 9)
	}
	wantGG := make([]T, len(am))
	for i, p := range am {
		wantGG[i] = gv[p]
	}
	gg := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), "tapegrad.FractionalMaxPoolGradGrad", ga, x, y, testutil.New(t, shape, gv), rows, cols)
	testutil.SameBits(t, name+"/gradgrad", tensorx.MustSlice[T](gg[0]), wantGG)
}

// TestFractionalMaxPoolTies checks the tie rule directly: the first
// maximum in row-major order (rows outer, columns inner) gets the whole
// gradient, and NaN follows TensorFlow's gradient scan.
func TestFractionalMaxPoolTies(t *testing.T) {
	// One 2x2 cell with maxima at (0,1) and (1,0): (0,1) comes first.
	x := testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 5, 5, 2})
	y := testutil.New(t, []int{1, 1, 1, 1}, []float64{5})
	g := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalMaxPoolGrad", forward.FractionalPoolGradAttrs{}, x, y, testutil.New(t, []int{1, 1, 1, 1}, []float64{3}), fpInt64s(0, 2), fpInt64s(0, 2))
	if fmt.Sprint(g[0].Float64s()) != "[0 3 0 0]" {
		t.Fatalf("tie gradient %v, want [0 3 0 0]", g[0].Float64s())
	}
	// Overlapping cells sharing a maximum add both gradients there.
	x = testutil.New(t, []int{1, 1, 5, 1}, []float64{1, 2, 9, 3, 4})
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalMaxPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: true}, x, testutil.New(t, []int{1, 1, 2, 1}, []float64{9, 9}), testutil.New(t, []int{1, 1, 2, 1}, []float64{1, 10}), fpInt64s(0, 1), fpInt64s(0, 2, 5))
	if fmt.Sprint(out[0].Float64s()) != "[0 0 11 0 0]" {
		t.Fatalf("shared maximum gradient %v, want [0 0 11 0 0]", out[0].Float64s())
	}
	// NaN: a NaN first element is the maximum; a later NaN is skipped.
	nan := math.NaN()
	x = testutil.New(t, []int{1, 1, 4, 1}, []float64{nan, 7, 1, nan})
	p := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{}, x, fpInt64s(0, 1), fpInt64s(0, 2, 4))
	if v := p[0].Float64s(); !math.IsNaN(v[0]) || v[1] != 0.5*(1+nan) && !math.IsNaN(v[1]) {
		t.Fatalf("average with NaN: %v", v)
	}
	xm := testutil.New(t, []int{1, 1, 4, 1}, []float64{nan, 7, 1, nan})
	ym := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalMaxPool", forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1, 2, 1}, Deterministic: true, Seed: 1}, xm)
	if v := ym[0].Float64s(); !math.IsNaN(v[0]) || v[1] != 1 {
		t.Fatalf("max with NaN: %v, want [NaN 1]", v)
	}
	gm := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalMaxPoolGrad", forward.FractionalPoolGradAttrs{}, xm, ym[0], testutil.New(t, []int{1, 1, 2, 1}, []float64{2, 3}), ym[1], ym[2])
	if fmt.Sprint(gm[0].Float64s()) != "[2 0 3 0]" {
		t.Fatalf("max gradient with NaN: %v, want [2 0 3 0]", gm[0].Float64s())
	}
}
