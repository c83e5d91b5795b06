//go:build !race

package gemm

import (
	"runtime"
	"testing"

	"github.com/tapegrad/tapegrad/internal/parallel"
)

// rowMap is an Offsetter kept between calls: row i's segment s starts at
// (i*3+s*5) % span, every seventh segment is zero.
type rowMap struct{ span int }

func (m *rowMap) Offsets(i0, n int, dst []int, ld int) {
	for s := 0; s*ld < len(dst); s++ {
		for r := range n {
			i := i0 + r
			o := (i*3 + s*5) % m.span
			if (i+s)%7 == 0 {
				o = -1
			}
			dst[s*ld+r] = o
		}
	}
}

// TestNoAllocSteadyState checks that steady-state Gemm, GemmRowsA and
// GemmRowsB calls allocate nothing on one thread and, split across
// threads, nothing beyond what internal/parallel itself allocates for one
// parallel loop: the problem copy, the grid and the goroutines' function
// live in the workspace, and a Rows operand's Offsetter is the caller's.
func TestNoAllocSteadyState(t *testing.T) {
	const m, n, k, seg = 300, 96, 288, 16
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	c := make([]float32, m*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) - 2
	}
	data := make([]float32, 4096)
	rm := &rowMap{span: len(data) - seg}
	ra := Rows[float32]{Data: data, Seg: seg, Map: rm}
	rb := Rows[float32]{Data: data, Seg: seg, First: 17, Map: rm}
	cases := func(threads int) []struct {
		name string
		f    func()
	} {
		return []struct {
			name string
			f    func()
		}{
			{"Gemm", func() { Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n, threads) }},
			{"Gemm transA", func() { Gemm(true, false, n, n, k, 1, b, n, b, n, 0, c, n, threads) }},
			{"GemmRowsA", func() { GemmRowsA(m, n, k, ra, false, b, n, 0, c, n, threads) }},
			{"GemmRowsB", func() { GemmRowsB(true, n, n, m, a, k, rb, 0, c, n, threads) }},
		}
	}
	// One thread first, before this test starts any parallel loop.
	for _, tc := range cases(1) {
		tc.f()
		if got := testing.AllocsPerRun(20, tc.f); got != 0 {
			t.Errorf("%s on 1 thread: %v allocations per call", tc.name, got)
		}
	}
	// Two threads: at most what a bare parallel loop allocates (measured
	// the same way, at the process's GOMAXPROCS: testing.AllocsPerRun sets
	// it to 1, which makes the pool start and park extra workers), plus
	// one for the runtime's own (a parking worker may need a new sudog
	// after a collection).
	// Worker start-up and parking allocate now and then depending on
	// timing, so each figure is the least of several measurements.
	fn := func(w, i int) {}
	base := leastMallocsPerCall(10, 20, func() { parallel.Each(2, 8, fn) })
	for _, tc := range cases(2) {
		if got := leastMallocsPerCall(10, 20, tc.f); got > base+1 {
			t.Errorf("%s on 2 threads: %v allocations per call, want at most %v (a bare parallel loop) + 1", tc.name, got, base)
		}
	}
}

// leastMallocsPerCall returns the least of tries measurements of
// mallocsPerCall(runs, f).
func leastMallocsPerCall(tries, runs int, f func()) float64 {
	least := mallocsPerCall(runs, f)
	for range tries - 1 {
		least = min(least, mallocsPerCall(runs, f))
	}
	return least
}

// mallocsPerCall returns the heap allocations per call of f over runs
// calls, after a few untimed ones, at the current GOMAXPROCS.
func mallocsPerCall(runs int, f func()) float64 {
	for range 3 {
		f()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}
