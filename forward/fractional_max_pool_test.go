package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestFractionalMaxPoolForward compares FractionalMaxPool with the naive
// reference over the forward grid in every dtype, on inputs with many ties
// (small integers), for 1 and 3 threads: every output is the input at its
// cell's first maximum. (Package backward checks the gradient ops on the
// same grid.)
func TestFractionalMaxPoolForward(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, c := range fpForwardGrid() {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		xv := make([]float64, n*h*w*ch)
		for i := range xv {
			xv[i] = float64(r.Intn(5) - 2) // many ties
		}
		name := fmt.Sprintf("%v/%v/pseudo=%v/ov=%v", c.shape, c.attrs.PoolingRatio, c.attrs.PseudoRandom, c.attrs.Overlapping)
		for _, threads := range []int{1, 3} {
			fpMaxForwardCheck(t, name+"/f64", threads, c.attrs, c.shape, xv)
			fpMaxForwardCheck(t, name+"/f32", threads, c.attrs, c.shape, testutil.Convert[float32](xv))
			fpMaxForwardCheck(t, name+"/i32", threads, c.attrs, c.shape, testutil.Convert[int32](xv))
			fpMaxForwardCheck(t, name+"/i64", threads, c.attrs, c.shape, testutil.Convert[int64](xv))
		}
	}
}

// fpMaxForwardCheck runs FractionalMaxPool on xv and checks its output
// against the reference's first maxima.
func fpMaxForwardCheck[T fracpool.Num](t *testing.T, name string, threads int, a FractionalPoolAttrs, shape []int, xv []T) {
	t.Helper()
	n, h, w, c := shape[0], shape[1], shape[2], shape[3]
	out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpMaxName, a, testutil.New(t, shape, xv))
	ys := tensorx.MustSlice[T](out[0])
	am := testutil.FracPoolArgmax(xv, n, h, w, c, out[1].Int64s(), out[2].Int64s(), a.Overlapping)
	if len(ys) != len(am) {
		t.Fatalf("%s: %d outputs, want %d", name, len(ys), len(am))
	}
	for i, p := range am {
		if ys[i] != xv[p] {
			t.Fatalf("%s: output %d = %v, want %v", name, i, ys[i], xv[p])
		}
	}
}

// TestFractionalMaxPoolNaN checks the scan's NaN rule: a NaN first element
// is the maximum; a later NaN is skipped.
func TestFractionalMaxPoolNaN(t *testing.T) {
	nan := math.NaN()
	xm := testutil.New(t, []int{1, 1, 4, 1}, []float64{nan, 7, 1, nan})
	ym := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpMaxName, FractionalPoolAttrs{PoolingRatio: []float32{1, 1, 2, 1}, Deterministic: true, Seed: 1}, xm)
	if v := ym[0].Float64s(); !math.IsNaN(v[0]) || v[1] != 1 {
		t.Fatalf("max with NaN: %v, want [NaN 1]", v)
	}
}
