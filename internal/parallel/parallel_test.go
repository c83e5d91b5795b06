package parallel

import (
	"sync/atomic"
	"testing"
)

func TestForCoversEveryIndexOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		for _, n := range []int{0, 1, 5, 17, 100} {
			for _, grain := range []int{0, 1, 4, 64} {
				hits := make([]int32, n)
				For(threads, n, grain, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("threads %d n %d grain %d: index %d visited %d times", threads, n, grain, i, h)
					}
				}
			}
		}
	}
}

func TestForChunksBoundsIndependentOfThreads(t *testing.T) {
	const n, grain = 103, 10
	var ref [][2]int
	for _, threads := range []int{1, 2, 5} {
		got := make([][2]int, Chunks(n, grain))
		ForChunks(threads, n, grain, func(c, lo, hi int) { got[c] = [2]int{lo, hi} })
		if ref == nil {
			ref = got
			continue
		}
		for i := range ref {
			if got[i] != ref[i] {
				t.Fatalf("threads %d: chunk %d = %v, want %v", threads, i, got[i], ref[i])
			}
		}
	}
	if ref[len(ref)-1][1] != n {
		t.Fatalf("last chunk ends at %d", ref[len(ref)-1][1])
	}
}

func TestWorkerPanicReachesCaller(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Fatalf("recovered %v, want boom", r)
		}
	}()
	For(4, 100, 1, func(lo, hi int) {
		if lo > 0 {
			panic("boom")
		}
	})
	t.Fatal("panic in a worker was lost")
}
