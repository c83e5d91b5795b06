//go:build !race

package parallel

import (
	"runtime"
	"testing"
)

// TestCallsAllocateNothing checks that For, Each, Blocks and ForChunks
// allocate nothing in the steady state when they split their work: the
// groups come from the free list and the jobs are reused. The pool is
// warmed up, then capped at its size, so that no new worker (a goroutine
// and its state) is started during the measurement: a worker handed a job
// that its caller ran itself may come back to the idle list late, and
// with room left the pool would grow instead. Allocations are counted
// with runtime.MemStats, over all goroutines, at the process's
// GOMAXPROCS (testing.AllocsPerRun would run at one); a few are allowed
// for the runtime's own bookkeeping (a worker that parks on a channel may
// need a new sudog after a GC emptied the runtime's cache of them, and
// the scheduler may start an OS thread, with its own objects), far
// below the three per call a fresh group would cost. (Excluded from -race
// builds, whose instrumentation allocates.)
func TestCallsAllocateNothing(t *testing.T) {
	var sink [64]int64
	forFn := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sink[i%64]++
		}
	}
	eachFn := func(w, i int) { sink[w]++ }
	chunkFn := func(c, lo, hi int) { sink[c%64] += int64(hi - lo) }
	calls := []struct {
		name string
		f    func()
	}{
		{"For", func() { For(2, 64, 4, forFn) }},
		{"For3", func() { For(3, 64, 1, forFn) }},
		{"Each", func() { Each(2, 16, eachFn) }},
		{"Blocks", func() { Blocks(2, 64, 4, forFn) }},
		{"ForChunks", func() { ForChunks(2, 64, 8, chunkFn) }},
	}
	old := maxWorkers
	defer func() { maxWorkers = old }()
	maxWorkers = 4
	runtime.GC()
	for _, c := range calls {
		for range 200 {
			c.f()
		}
	}
	pool.mu.Lock()
	maxWorkers = pool.count
	pool.mu.Unlock()
	for _, c := range calls {
		const n = 1000
		for range 10 {
			c.f()
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range n {
			c.f()
		}
		runtime.ReadMemStats(&m1)
		a := m1.Mallocs - m0.Mallocs
		t.Logf("%s: %d allocations in %d calls", c.name, a, n)
		if a > n/50 {
			t.Errorf("%s: %d allocations in %d calls, want none (at most %d of the runtime's own)", c.name, a, n, n/50)
		}
	}
}

// BenchmarkForAllocs reports For's allocations per call on two threads.
func BenchmarkForAllocs(b *testing.B) {
	var sink [2]int64
	fn := func(lo, hi int) { sink[lo%2]++ }
	b.ReportAllocs()
	for b.Loop() {
		For(2, 2, 1, fn)
	}
}
