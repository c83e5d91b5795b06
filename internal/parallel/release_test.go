package parallel

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// workerFrame is the function every worker goroutine runs.
const workerFrame = "internal/parallel.(*worker).loop"

// workerStacks returns how many goroutines run a worker's loop.
func workerStacks() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte(workerFrame))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// noWorkerGoroutines waits until no goroutine runs a worker's loop (a
// worker that has left the pool's books still needs a moment to return)
// and fails if some still do after 5 s.
func noWorkerGoroutines(t *testing.T) {
	t.Helper()
	var n int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n = workerStacks(); n == 0 {
			return
		}
	}
	t.Fatalf("%d worker goroutines still running after Release", n)
}

// busyWork runs calls of every kind, nested ones too, on up to 8 threads,
// so that the pool holds several workers.
func busyWork() int64 {
	var sum atomic.Int64
	for range 50 {
		For(8, 64, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
		Each(4, 16, func(w, i int) { sum.Add(1) })
		Blocks(3, 30, 2, func(lo, hi int) {
			For(2, hi-lo, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
		})
		ForChunks(5, 40, 3, func(_, lo, hi int) { sum.Add(int64(hi - lo)) })
	}
	return sum.Load()
}

const busyWant = 50 * (64 + 16 + 30 + 40)

// TestReleaseStopsWorkers checks that Release leaves no worker behind,
// whether the workers are spinning (right after the calls) or parked
// (after a pause), and that later calls start new ones and cover their
// ranges.
func TestReleaseStopsWorkers(t *testing.T) {
	for _, pause := range []time.Duration{0, 20 * time.Millisecond} {
		if got := busyWork(); got != busyWant {
			t.Fatalf("covered %d, want %d", got, busyWant)
		}
		pool.mu.Lock()
		started := len(pool.all)
		pool.mu.Unlock()
		if started < 2 {
			t.Fatalf("pause %v: %d workers after the calls, want several", pause, started)
		}
		time.Sleep(pause)
		Release()
		pool.mu.Lock()
		count, live, idle := pool.count, len(pool.all), len(pool.idle)
		pool.mu.Unlock()
		if count != 0 || live != 0 || idle != 0 {
			t.Fatalf("pause %v: after Release %d workers counted, %d alive, %d idle; want none", pause, count, live, idle)
		}
		noWorkerGoroutines(t)
		// The pool restarts on demand.
		if got := busyWork(); got != busyWant {
			t.Fatalf("after Release: covered %d, want %d", got, busyWant)
		}
		pool.mu.Lock()
		count = pool.count
		pool.mu.Unlock()
		if count == 0 {
			t.Fatal("no worker started after Release")
		}
		Release()
		noWorkerGoroutines(t)
	}
}

// TestReleaseDuringCalls releases the pool again and again while other
// goroutines make calls: every call still covers its range once, and a
// final Release leaves no worker.
func TestReleaseDuringCalls(t *testing.T) {
	const callers, rounds = 3, 10
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if got := busyWork(); got != busyWant {
					errs <- "a call covered a wrong number of indices"
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	releases := 0
	for running := true; running; releases++ {
		select {
		case <-done:
			running = false
		default:
		}
		Release()
		runtime.Gosched()
	}
	t.Logf("%d releases during the calls", releases)
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	Release()
	noWorkerGoroutines(t)
}

// TestReleaseInsideCall calls Release from the ranges of a call, the
// caller's and the workers': it must not wait for the workers running
// them (itself among them), and the call completes.
func TestReleaseInsideCall(t *testing.T) {
	done := make(chan int64)
	go func() {
		var sum atomic.Int64
		For(4, 4, 1, func(lo, hi int) {
			Release()
			For(2, 10, 1, func(lo, hi int) { sum.Add(int64(hi - lo)) })
		})
		done <- sum.Load()
	}()
	select {
	case got := <-done:
		if got != 40 {
			t.Fatalf("covered %d, want 40", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Release inside a call deadlocked")
	}
	Release()
	noWorkerGoroutines(t)
}

// TestGOMAXPROCSReadRarely checks that waiting does not read GOMAXPROCS
// (which takes the scheduler's lock) on every call, and that a change of
// GOMAXPROCS is still seen.
func TestGOMAXPROCSReadRarely(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2 to tell spinning from not")
	}
	var reads atomic.Int64
	old := readProcs
	defer func() { readProcs = old }()
	readProcs = func() int { reads.Add(1); return runtime.GOMAXPROCS(0) }
	const calls = 2000
	start := time.Now()
	var sink atomic.Int64
	for range calls {
		For(2, 2, 1, func(lo, hi int) { sink.Add(1) })
	}
	// At most one read per procsRefresh of the run, and one more.
	elapsed := time.Since(start)
	if max := int64(elapsed/procsRefresh) + 2; reads.Load() > max {
		t.Fatalf("%d calls over %v read GOMAXPROCS %d times, want at most %d", calls, elapsed, reads.Load(), max)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	time.Sleep(2 * procsRefresh)
	For(2, 2, 1, func(lo, hi int) { sink.Add(1) })
	if n := procs.n.Load(); n != 1 {
		t.Fatalf("cached GOMAXPROCS %d after runtime.GOMAXPROCS(1), want 1", n)
	}
}
