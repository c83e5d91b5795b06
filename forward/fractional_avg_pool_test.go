package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestFractionalAvgPoolSpecVectors checks FAP2, FAP3 and FAP7 (FAP4 and
// FAP5, of the gradient op, are checked in package backward).
func TestFractionalAvgPoolSpecVectors(t *testing.T) {
	x := testutil.New(t, []int{1, 4, 4, 1}, testutil.Convert[float32](testutil.Arange(16)))
	for _, pseudo := range []bool{false, true} {
		for _, seed := range []int64{1, 77} {
			a := FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}, PseudoRandom: pseudo, Deterministic: true, Seed: seed, Seed2: 1}
			out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, x) // FAP2
			testutil.Near(t, "FAP2", testutil.Float64s(t, out[0]), []float64{3.5, 5.5, 11.5, 13.5}, 0)
			if fmt.Sprint(out[1].Int64s(), out[2].Int64s()) != "[0 2 4] [0 2 4]" {
				t.Fatalf("FAP2 sequences %v %v", out[1].Int64s(), out[2].Int64s())
			}
			a.Overlapping = true
			out = registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, x) // FAP3
			testutil.Near(t, "FAP3", testutil.Float64s(t, out[0]), []float64{6, 7.5, 12, 13.5}, 0)
		}
	}
	// FAP7: int input, float32 size arithmetic (6/√3 → 3, 6/√2 → 4).
	for _, dt := range []tensor.Dtype{tensor.Int32, tensor.Int64} {
		var xi *tensor.Dense
		if dt == tensor.Int32 {
			xi = testutil.New(t, []int{1, 6, 6, 1}, testutil.Convert[int32](testutil.Arange(36)))
		} else {
			xi = testutil.New(t, []int{1, 6, 6, 1}, testutil.Convert[int64](testutil.Arange(36)))
		}
		a := FractionalPoolAttrs{PoolingRatio: []float32{1, float32(math.Sqrt(3)), float32(math.Sqrt(2)), 1},
			PseudoRandom: true, Overlapping: true, Deterministic: true, Seed: 5}
		out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, xi)
		if out[0].Dtype() != dt || fmt.Sprint(out[0].Shape()) != "(1, 3, 4, 1)" ||
			fmt.Sprint(out[1].Shape()) != "(4)" || fmt.Sprint(out[2].Shape()) != "(5)" {
			t.Fatalf("FAP7 %v: shapes %v %v %v", dt, out[0].Shape(), out[1].Shape(), out[2].Shape())
		}
		if err := testutil.FracPoolSeqProps(out[1].Int64s(), 6, 3); err != nil {
			t.Fatal(err)
		}
		if err := testutil.FracPoolSeqProps(out[2].Int64s(), 6, 4); err != nil {
			t.Fatal(err)
		}
	}
}

// fpForwardCase is one configuration of the forward grid.
type fpForwardCase struct {
	shape []int
	attrs FractionalPoolAttrs
}

// fpForwardGrid is testutil.FracPoolGrid with its attrs.
func fpForwardGrid() []fpForwardCase {
	var cs []fpForwardCase
	for _, c := range testutil.FracPoolGrid() {
		cs = append(cs, fpForwardCase{c.Shape, FractionalPoolAttrs{PoolingRatio: c.Ratio, PseudoRandom: c.PseudoRandom, Overlapping: c.Overlapping,
			Deterministic: true, Seed: c.Seed, Seed2: c.Seed * 3}})
	}
	return cs
}

// TestFractionalAvgPoolForward compares FractionalAvgPool with the naive
// reference over the grid: float64 and float32 bit-identical to
// TensorFlow's order of operations, int32/int64 exact (truncating
// division), for 1 and 3 threads. (Package backward checks
// tapegrad.FractionalAvgPoolWithSequences against it over the same grid.)
func TestFractionalAvgPoolForward(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, c := range fpForwardGrid() {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		xv := make([]float64, n*h*w*ch)
		for i := range xv {
			xv[i] = r.NormFloat64() * 10
		}
		name := fmt.Sprintf("%v/%v/pseudo=%v/ov=%v", c.shape, c.attrs.PoolingRatio, c.attrs.PseudoRandom, c.attrs.Overlapping)
		for _, threads := range []int{1, 3} {
			out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xv))
			rows, cols := out[1].Int64s(), out[2].Int64s()
			if err := testutil.FracPoolSeqProps(rows, h, fracpool.OutputSize(h, c.attrs.PoolingRatio[1])); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := testutil.FracPoolSeqProps(cols, w, fracpool.OutputSize(w, c.attrs.PoolingRatio[2])); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			testutil.SameBits(t, name+"/f64", out[0].Float64s(), testutil.FracPoolAvg(xv, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			x32 := testutil.Convert[float32](xv)
			o32 := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, x32))
			testutil.SameBits(t, name+"/f32", o32[0].Float32s(), testutil.FracPoolAvg(x32, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			xi := testutil.Convert[int32](xv)
			oi := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xi))
			testutil.SameBits(t, name+"/i32", oi[0].Int32s(), testutil.FracPoolAvg(xi, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			xl := testutil.Convert[int64](xv)
			ol := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xl))
			testutil.SameBits(t, name+"/i64", ol[0].Int64s(), testutil.FracPoolAvg(xl, n, h, w, ch, rows, cols, c.attrs.Overlapping))
		}
	}
}
