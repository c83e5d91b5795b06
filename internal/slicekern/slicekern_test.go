package slicekern

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// naiveBox lists the big-array offsets of a box's elements in row-major
// order of the dense array (the definition, index by index).
func naiveBox(big, start, step, counts []int) []int {
	n := 1
	for _, c := range counts {
		n *= c
	}
	offs := make([]int, 0, n)
	idx := make([]int, len(counts))
	for k := 0; k < n; k++ {
		rem := k
		for d := len(counts) - 1; d >= 0; d-- {
			idx[d] = rem % counts[d]
			rem /= counts[d]
		}
		off := 0
		for d := range big {
			off = off*big[d] + start[d] + idx[d]*step[d]
		}
		offs = append(offs, off)
	}
	return offs
}

// randBox returns a random box (negative steps included) of a random big
// shape of rank 0 to 4.
func randBox(r *rand.Rand) (big, start, step, counts []int) {
	rank := r.Intn(5)
	for d := 0; d < rank; d++ {
		n := 1 + r.Intn(6)
		s := 1 + r.Intn(3)
		if r.Intn(3) == 0 {
			s = -s
		}
		c := r.Intn(n + 1)
		if c > 0 {
			c = 1 + r.Intn((n-1)/abs(s)+1)
		}
		b := 0
		if s > 0 {
			b = r.Intn(n - (c-1)*s)
		} else {
			b = (c-1)*(-s) + r.Intn(n-(c-1)*(-s))
		}
		big, start, step, counts = append(big, n), append(start, b), append(step, s), append(counts, c)
	}
	return
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestGatherScatterNaive(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for it := 0; it < 2000; it++ {
		big, start, step, counts := randBox(r)
		n := 1
		for _, d := range big {
			n *= d
		}
		src := make([]float64, n)
		for i := range src {
			src[i] = float64(i + 1)
		}
		offs := naiveBox(big, start, step, counts)
		for _, threads := range []int{1, 3} {
			dst := make([]float64, len(offs))
			Gather(threads, dst, src, big, start, step, counts)
			for k, o := range offs {
				if dst[k] != src[o] {
					t.Fatalf("Gather %v %v %v %v: element %d = %v, want %v", big, start, step, counts, k, dst[k], src[o])
				}
			}
			out := make([]float64, n)
			Scatter(threads, out, dst, big, start, step, counts)
			want := make([]float64, n)
			for k, o := range offs {
				want[o] = dst[k]
			}
			if !slices.Equal(out, want) {
				t.Fatalf("Scatter %v %v %v %v: %v, want %v", big, start, step, counts, out, want)
			}
		}
	}
}

// TestLargeThreads runs boxes large enough for the parallel path.
func TestLargeThreads(t *testing.T) {
	big, start, step, counts := []int{300, 400}, []int{299, 1}, []int{-1, 3}, []int{300, 133}
	src := make([]int32, 300*400)
	for i := range src {
		src[i] = int32(i)
	}
	offs := naiveBox(big, start, step, counts)
	dst := make([]int32, len(offs))
	Gather(4, dst, src, big, start, step, counts)
	for k, o := range offs {
		if dst[k] != src[o] {
			t.Fatalf("element %d = %d, want %d", k, dst[k], src[o])
		}
	}
	out := make([]int32, len(src))
	Scatter(4, out, dst, big, start, step, counts)
	for k, o := range offs {
		if out[o] != dst[k] {
			t.Fatalf("scatter element %d", k)
		}
	}
}

func TestCopyColumnsAndFill(t *testing.T) {
	for _, c := range []struct{ outer, w1, w2 int }{{3, 2, 4}, {1, 5, 0}, {5000, 7, 9}} {
		a := make([]int, c.outer*c.w1)
		b := make([]int, c.outer*c.w2)
		for i := range a {
			a[i] = i
		}
		for i := range b {
			b[i] = -i - 1
		}
		w := c.w1 + c.w2
		dst := make([]int, c.outer*w)
		CopyColumns(3, dst, w, 0, a, c.outer, c.w1)
		CopyColumns(3, dst, w, c.w1, b, c.outer, c.w2)
		for o := 0; o < c.outer; o++ {
			if !slices.Equal(dst[o*w:o*w+c.w1], a[o*c.w1:(o+1)*c.w1]) || !slices.Equal(dst[o*w+c.w1:(o+1)*w], b[o*c.w2:(o+1)*c.w2]) {
				t.Fatalf("%v: row %d = %v", c, o, dst[o*w:(o+1)*w])
			}
		}
	}
	f := make([]float32, 100000)
	Fill(3, f, 2.5)
	for i, v := range f {
		if v != 2.5 {
			t.Fatal(fmt.Sprint("Fill: element ", i, " = ", v))
		}
	}
}
