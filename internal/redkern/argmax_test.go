package redkern

import (
	"math"
	"math/rand"
	"testing"
)

// naiveArg is the first index of the maximum (minimum) of v, skipping NaNs,
// 0 when every element is NaN (the definition in ArgMax's doc).
func naiveArg(v []float64, min bool) int {
	at := -1
	for k, x := range v {
		if math.IsNaN(x) {
			continue
		}
		if at < 0 || (!min && x > v[at]) || (min && x < v[at]) {
			at = k
		}
	}
	return max(at, 0)
}

func TestArgMaxNaive(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for it := 0; it < 500; it++ {
		outer, n, inner := r.Intn(4), 1+r.Intn(6), r.Intn(4)
		if it == 0 {
			outer, n, inner = 2000, 5, 7 // parallel path
		}
		x := make([]float64, outer*n*inner)
		for i := range x {
			x[i] = float64(r.Intn(5)) // ties
			if r.Intn(15) == 0 {
				x[i] = math.NaN()
			}
		}
		for _, min := range []bool{false, true} {
			want := make([]int64, outer*inner)
			col := make([]float64, n)
			for o := 0; o < outer; o++ {
				for i := 0; i < inner; i++ {
					for k := range col {
						col[k] = x[(o*n+k)*inner+i]
					}
					want[o*inner+i] = int64(naiveArg(col, min))
				}
			}
			for _, threads := range []int{1, 3} {
				got := make([]int64, outer*inner)
				ArgMax(threads, got, x, outer, n, inner, min)
				got32 := make([]int32, outer*inner)
				x32 := make([]float32, len(x))
				for i, v := range x {
					x32[i] = float32(v)
				}
				ArgMax(threads, got32, x32, outer, n, inner, min)
				for j := range want {
					if got[j] != want[j] || int64(got32[j]) != want[j] {
						t.Fatalf("%d,%d,%d min=%v: output %d = %d (float32 %d), want %d", outer, n, inner, min, j, got[j], got32[j], want[j])
					}
				}
			}
		}
	}
	// Integer extremes: the first index even for the most negative values.
	xi := []int64{math.MinInt64, math.MinInt64, 3, 3}
	got := make([]int32, 1)
	ArgMax(1, got, xi, 1, 4, 1, false)
	if got[0] != 2 {
		t.Fatalf("int64 argmax = %d, want 2", got[0])
	}
	ArgMax(1, got, xi, 1, 4, 1, true)
	if got[0] != 0 {
		t.Fatalf("int64 argmin = %d, want 0", got[0])
	}
}
