package redkern

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// heap is a Scratch that allocates.
type heap[A Num] struct{}

func (heap[A]) Scratch(n int) ([]A, error) { return make([]A, n), nil }

// naive sums x over the dimensions set in red, in float64 and index order.
func naive(x []float64, shape []int, red []bool, mean bool) []float64 {
	var outShape []int
	count := 1
	for i, d := range shape {
		if red[i] {
			count *= d
		} else {
			outShape = append(outShape, d)
		}
	}
	n := 1
	for _, d := range outShape {
		n *= d
	}
	out := make([]float64, n)
	idx := make([]int, len(shape))
	for _, v := range x {
		o := 0
		for i, d := range shape {
			if !red[i] {
				o = o*d + idx[i]
			}
		}
		out[o] += v
		for i := len(shape) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	if mean {
		for i := range out {
			out[i] /= float64(count)
		}
	}
	return out
}

// TestIntoMatchesNaive compares Into with the naive float64 sums for every
// subset of axes of a few shapes (chunked long reductions included), for
// float64 and float32 inputs and 1 and 3 threads.
func TestIntoMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, shape := range [][]int{{7}, {3, 4}, {2, 1, 5}, {2, 3, 4, 5}, {3, 40000}, {70000, 2}, {0, 3}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x := make([]float64, n)
		x32 := make([]float32, n)
		for i := range x {
			x32[i] = float32(r.NormFloat64())
			x[i] = float64(x32[i])
		}
		for mask := 0; mask < 1<<len(shape); mask++ {
			var bitmap [tensorx.MaxRank]bool
			red := make([]bool, len(shape))
			for i := range shape {
				red[i] = mask&(1<<i) != 0
				bitmap[i] = red[i]
			}
			for _, mean := range []bool{false, true} {
				want := naive(x, shape, red, mean)
				for _, threads := range []int{1, 3} {
					what := fmt.Sprintf("%v red %v mean %v threads %d", shape, red, mean, threads)
					got := make([]float64, len(want))
					if err := Into(threads, heap[float64]{}, x, NewPlan(shape, bitmap), got, mean); err != nil {
						t.Fatal(err)
					}
					got32 := make([]float32, len(want))
					if err := Into(threads, heap[float64]{}, x32, NewPlan(shape, bitmap), got32, mean); err != nil {
						t.Fatal(err)
					}
					for i := range want {
						tol := 1e-12 * (1 + math.Abs(want[i]))
						if d := math.Abs(got[i] - want[i]); d > tol*float64(len(x)+1) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
							t.Fatalf("%s: float64 element %d = %v, want %v", what, i, got[i], want[i])
						}
						// float32 sums accumulate in float64, rounded once.
						if w := float32(want[i]); got32[i] != w && !(math.IsNaN(float64(got32[i])) && math.IsNaN(want[i])) &&
							math.Abs(float64(got32[i])-want[i]) > 1e-6*(1+math.Abs(want[i])) {
							t.Fatalf("%s: float32 element %d = %v, want %v", what, i, got32[i], w)
						}
					}
				}
			}
		}
	}
}
