package forward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// fpRefAvg is average pooling in T with TensorFlow's order: per output
// element a T accumulator from 0, rows outer, columns inner, then a
// division by the count in T.
func fpRefAvg[T fracpool.Num](x []T, n, h, w, c int, rows, cols []int64, overlapping bool) []T {
	oh, ow := len(rows)-1, len(cols)-1
	out := make([]T, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := fpRefCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := fpRefCell(cols, j, w, overlapping)
				for ch := 0; ch < c; ch++ {
					var acc, cnt T
					for r := r0; r <= r1; r++ {
						for cc := c0; cc <= c1; cc++ {
							acc += x[((b*h+r)*w+cc)*c+ch]
							cnt++
						}
					}
					out[((b*oh+a)*ow+j)*c+ch] = acc / cnt
				}
			}
		}
	}
	return out
}

// TestFractionalAvgPoolSpecVectors checks FAP2, FAP3 and FAP7 (FAP4 and
// FAP5, of the gradient op, are checked in package backward).
func TestFractionalAvgPoolSpecVectors(t *testing.T) {
	x := testutil.New(t, []int{1, 4, 4, 1}, testutil.Convert[float32](testutil.Arange(16)))
	for _, pseudo := range []bool{false, true} {
		for _, seed := range []int64{1, 77} {
			a := FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}, PseudoRandom: pseudo, Deterministic: true, Seed: seed, Seed2: 1}
			out := testutil.MustRunKC(t, testutil.SeededKC(1, 1), fpAvgName, a, x) // FAP2
			testutil.Near(t, "FAP2", testutil.Float64s(t, out[0]), []float64{3.5, 5.5, 11.5, 13.5}, 0)
			if fmt.Sprint(out[1].Int64s(), out[2].Int64s()) != "[0 2 4] [0 2 4]" {
				t.Fatalf("FAP2 sequences %v %v", out[1].Int64s(), out[2].Int64s())
			}
			a.Overlapping = true
			out = testutil.MustRunKC(t, testutil.SeededKC(1, 1), fpAvgName, a, x) // FAP3
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
		out := testutil.MustRunKC(t, testutil.SeededKC(1, 1), fpAvgName, a, xi)
		if out[0].Dtype() != dt || fmt.Sprint(out[0].Shape()) != "(1, 3, 4, 1)" ||
			fmt.Sprint(out[1].Shape()) != "(4)" || fmt.Sprint(out[2].Shape()) != "(5)" {
			t.Fatalf("FAP7 %v: shapes %v %v %v", dt, out[0].Shape(), out[1].Shape(), out[2].Shape())
		}
		if err := fpSeqProps(out[1].Int64s(), 6, 3); err != nil {
			t.Fatal(err)
		}
		if err := fpSeqProps(out[2].Int64s(), 6, 4); err != nil {
			t.Fatal(err)
		}
	}
}

// fpForwardCase is one configuration of the forward grid.
type fpForwardCase struct {
	shape []int
	attrs FractionalPoolAttrs
}

func fpForwardGrid() []fpForwardCase {
	var cs []fpForwardCase
	shapes := [][]int{{1, 5, 5, 1}, {2, 7, 9, 3}, {3, 10, 6, 5}, {1, 32, 32, 8}, {2, 3, 11, 4}}
	ratios := [][]float32{{1, 1.44, 1.44, 1}, {1, 2, 1.5, 1}, {1, 1, 3, 1}, {1, 2.7, 1.1, 1}, {1, 3, 3, 1}}
	seed := int64(1)
	for _, s := range shapes {
		for _, r := range ratios {
			if float32(s[1]) < r[1] || float32(s[2]) < r[2] {
				continue
			}
			for _, pseudo := range []bool{false, true} {
				for _, ov := range []bool{false, true} {
					seed++
					cs = append(cs, fpForwardCase{s, FractionalPoolAttrs{PoolingRatio: r, PseudoRandom: pseudo, Overlapping: ov,
						Deterministic: true, Seed: seed, Seed2: seed * 3}})
				}
			}
		}
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
			out := testutil.MustRunKC(t, testutil.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xv))
			rows, cols := out[1].Int64s(), out[2].Int64s()
			if err := fpSeqProps(rows, h, fracpool.OutputSize(h, c.attrs.PoolingRatio[1])); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := fpSeqProps(cols, w, fracpool.OutputSize(w, c.attrs.PoolingRatio[2])); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fpCheckAvg(t, name+"/f64", out[0].Float64s(), fpRefAvg(xv, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			x32 := testutil.Convert[float32](xv)
			o32 := testutil.MustRunKC(t, testutil.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, x32))
			fpCheckAvg(t, name+"/f32", o32[0].Float32s(), fpRefAvg(x32, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			xi := testutil.Convert[int32](xv)
			oi := testutil.MustRunKC(t, testutil.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xi))
			fpCheckAvg(t, name+"/i32", oi[0].Int32s(), fpRefAvg(xi, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			xl := testutil.Convert[int64](xv)
			ol := testutil.MustRunKC(t, testutil.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xl))
			fpCheckAvg(t, name+"/i64", ol[0].Int64s(), fpRefAvg(xl, n, h, w, ch, rows, cols, c.attrs.Overlapping))
		}
	}
}
