package parallel

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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

func TestCallerRangePanicReachesCaller(t *testing.T) {
	defer func() {
		if r := recover(); r != "first" {
			t.Fatalf("recovered %v, want first", r)
		}
	}()
	For(3, 90, 1, func(lo, hi int) {
		if lo == 0 {
			panic("first")
		}
	})
	t.Fatal("panic in the caller's range was lost")
}

// TestWorkersSurvivePanics checks that later calls still run on workers
// and cover everything after jobs panicked.
func TestWorkersSurvivePanics(t *testing.T) {
	for range 20 {
		func() {
			defer func() { _ = recover() }()
			For(4, 40, 1, func(lo, hi int) { panic(lo) })
		}()
	}
	var sum atomic.Int64
	For(4, 1000, 7, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sum.Add(int64(i))
		}
	})
	if got := sum.Load(); got != 999*1000/2 {
		t.Fatalf("sum %d after panics", got)
	}
}

// waitIdle waits until every worker of the pool is back in the idle list
// (workers handed a job their caller ran itself come back late).
func waitIdle(t *testing.T) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		pool.mu.Lock()
		quiet := len(pool.idle) == pool.count
		pool.mu.Unlock()
		if quiet {
			return
		}
	}
	t.Fatal("workers did not come back to the idle list")
}

// TestRangesRunConcurrently checks that the ranges really run on
// different goroutines at the same time: each range waits for all the
// others to start.
func TestRangesRunConcurrently(t *testing.T) {
	const threads = 3
	for attempt := 0; attempt < 3; attempt++ {
		waitIdle(t)
		var arrived atomic.Int32
		var all atomic.Bool
		deadline := time.Now().Add(2 * time.Second)
		For(threads, threads, 1, func(lo, hi int) {
			arrived.Add(1)
			for arrived.Load() < threads && time.Now().Before(deadline) {
				runtime.Gosched()
			}
			if arrived.Load() == threads {
				all.Store(true)
			}
		})
		if all.Load() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the ranges never ran concurrently")
}

// TestNestedCallsDoNotDeadlock runs nested For calls from many goroutines
// at once, with the default pool and with a pool too small for them (the
// callers then run the jobs themselves), and checks full coverage.
func TestNestedCallsDoNotDeadlock(t *testing.T) {
	for _, limit := range []int{maxWorkers, 2, 0} {
		old := maxWorkers
		maxWorkers = limit
		var wg sync.WaitGroup
		var total atomic.Int64
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				For(3, 6, 1, func(lo, hi int) {
					for range hi - lo {
						For(4, 5, 1, func(lo, hi int) {
							for range hi - lo {
								For(2, 10, 3, func(lo, hi int) { total.Add(int64(hi - lo)) })
							}
						})
					}
				})
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("maxWorkers %d: nested calls deadlocked", limit)
		}
		maxWorkers = old
		if want := int64(8 * 6 * 5 * 10); total.Load() != want {
			t.Fatalf("maxWorkers %d: covered %d, want %d", limit, total.Load(), want)
		}
	}
}

// TestForBoundsIndependentOfThreads checks For's ranges: whole chunks of
// grain, the same chunk boundaries whatever the thread count.
func TestForBoundsIndependentOfThreads(t *testing.T) {
	const n, grain = 1001, 10
	for _, threads := range []int{1, 2, 3, 7, 200} {
		var mu sync.Mutex
		var ranges [][2]int
		For(threads, n, grain, func(lo, hi int) {
			mu.Lock()
			ranges = append(ranges, [2]int{lo, hi})
			mu.Unlock()
		})
		if len(ranges) > threads {
			t.Fatalf("threads %d: %d ranges", threads, len(ranges))
		}
		for _, r := range ranges {
			if r[0]%grain != 0 || (r[1]%grain != 0 && r[1] != n) {
				t.Fatalf("threads %d: range %v is not whole chunks", threads, r)
			}
		}
	}
}

// BenchmarkForLatency measures For calls on two threads with little
// work: the cost of handing a range to a worker and joining it.
func BenchmarkForLatency(b *testing.B) {
	var sink [2][16]int64
	for b.Loop() {
		For(2, 2, 1, func(lo, hi int) {
			x := sink[lo][0]
			for i := 0; i < 5000; i++ {
				x = x*3 + int64(i)
			}
			sink[lo][0] = x
		})
	}
}

// TestEach checks that Each visits every item once, with goroutine ids
// in range and never used by two calls at once.
func TestEach(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		for _, n := range []int{0, 1, 2, 7, 100} {
			hits := make([]int32, n)
			busy := make([]atomic.Int32, threads)
			Each(threads, n, func(w, i int) {
				if w < 0 || w >= threads {
					panic("worker id out of range")
				}
				if busy[w].Add(1) != 1 {
					panic("worker id used concurrently")
				}
				atomic.AddInt32(&hits[i], 1)
				busy[w].Add(-1)
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("threads %d n %d: item %d visited %d times", threads, n, i, h)
				}
			}
		}
	}
	defer func() {
		if r := recover(); r != "item" {
			t.Fatalf("recovered %v, want item", r)
		}
	}()
	Each(3, 50, func(w, i int) {
		if i == 37 {
			panic("item")
		}
	})
	t.Fatal("panic in Each was lost")
}

// TestGoexitInWorker checks that a range ending its goroutine with
// runtime.Goexit does not hang the call, and that the pool recovers.
func TestGoexitInWorker(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		For(2, 2, 1, func(lo, hi int) {
			if lo == 1 {
				runtime.Goexit()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("For hung after runtime.Goexit in a range")
	}
	waitIdle(t)
	var n atomic.Int32
	For(3, 30, 1, func(lo, hi int) { n.Add(int32(hi - lo)) })
	if n.Load() != 30 {
		t.Fatalf("covered %d of 30 after Goexit", n.Load())
	}
}

// TestBlocks checks that Blocks visits every index once, in blocks of
// grain aligned to multiples of grain (the last one shorter).
func TestBlocks(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		for _, n := range []int{0, 1, 5, 17, 100} {
			for _, grain := range []int{0, 1, 4, 64} {
				hits := make([]int32, n)
				g := max(grain, 1)
				Blocks(threads, n, grain, func(lo, hi int) {
					if (threads > 1 && lo%g != 0) || (hi != n && hi-lo != g && threads > 1) {
						panic("block not aligned to grain")
					}
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
	defer func() {
		if r := recover(); r != "block" {
			t.Fatalf("recovered %v, want block", r)
		}
	}()
	Blocks(3, 100, 7, func(lo, hi int) {
		if lo == 49 {
			panic("block")
		}
	})
	t.Fatal("panic in Blocks was lost")
}

// TestReuseUnderContention runs many short calls of every kind from
// several goroutines at once, so that groups are reused while workers
// handed a job of an earlier call come late to it, and checks that every
// call covers its range exactly once.
func TestReuseUnderContention(t *testing.T) {
	const callers, calls = 4, 300
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range calls {
				n := 1 + (k*7+c)%40
				var sum atomic.Int64
				switch k % 4 {
				case 0:
					For(3, n, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
				case 1:
					Each(3, n, func(w, i int) { sum.Add(1) })
				case 2:
					Blocks(3, n, 2, func(lo, hi int) { sum.Add(int64(hi - lo)) })
				case 3:
					ForChunks(3, n, 3, func(_, lo, hi int) { sum.Add(int64(hi - lo)) })
				}
				if got := sum.Load(); got != int64(n) {
					errs <- "call covered a wrong number of indices"
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestSharesFirst checks that in Each and Blocks every goroutine starts
// on its own share, the w-th contiguous part of the items: each item
// waits until threads items have arrived, so the first threads items are
// the goroutines' first ones, and they must be the shares' first items
// n·w/threads (with one shared counter they would be 0, 1, 2).
func TestSharesFirst(t *testing.T) {
	const threads, n = 3, 30
	for _, kind := range []string{"Each", "Blocks"} {
		ok := false
		for attempt := 0; attempt < 5 && !ok; attempt++ {
			waitIdle(t)
			var arrived atomic.Int32
			var mu sync.Mutex
			var firsts []int
			deadline := time.Now().Add(2 * time.Second)
			visit := func(i int) {
				if arrived.Load() >= threads {
					return
				}
				mu.Lock()
				if len(firsts) < threads {
					firsts = append(firsts, i)
					arrived.Add(1)
				}
				mu.Unlock()
				for arrived.Load() < threads && time.Now().Before(deadline) {
					runtime.Gosched()
				}
			}
			switch kind {
			case "Each":
				Each(threads, n, func(_, i int) { visit(i) })
			case "Blocks":
				Blocks(threads, n, 1, func(lo, _ int) { visit(lo) })
			}
			if arrived.Load() < threads || time.Now().After(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue // a goroutine did not start in time: try again
			}
			ok = true
			slices.Sort(firsts)
			for w, got := range firsts {
				if want := n * w / threads; got != want {
					t.Fatalf("%s: the goroutines' first items are %v, want their shares' first items %d, %d, %d", kind, firsts, 0, n/threads, 2*n/threads)
				}
			}
		}
		if !ok {
			t.Fatalf("%s: the %d goroutines never ran at once", kind, threads)
		}
	}
}
