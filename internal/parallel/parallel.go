// Package parallel splits loops across goroutines with chunk bounds that
// depend only on the problem size, never on the thread count, so reductions
// combined in chunk order are bit-identical for any number of threads.
//
// The goroutines come from a pool of persistent workers: a worker that
// finishes a job spins briefly before parking, so the next call's jobs
// start within microseconds instead of waiting for the scheduler to wake
// an idle thread. A job no worker has started yet when the caller is done
// with its own share is run by the caller itself, so nested calls never
// deadlock and a busy machine degrades to serial execution, not to a
// stall.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// For calls fn(lo, hi) over [0, n) cut into chunks of at least grain
// iterations, on up to threads goroutines (the caller's included). With
// threads <= 1, or a single chunk, everything runs on the caller's
// goroutine. fn must be safe to call concurrently on disjoint ranges.
// A panic in fn is re-raised on the caller's goroutine once every range
// has finished.
func For(threads, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	if threads <= 1 || chunks == 1 {
		fn(0, n)
		return
	}
	if threads > chunks {
		threads = chunks
	}
	// Contiguous, near-equal blocks of whole chunks: block 0 for the
	// caller, the others offered to workers.
	g := &group{fn: fn, jobs: make([]job, 0, threads-1), done: make(chan struct{}, 1)}
	for w := 1; w < threads; w++ {
		c0, c1 := chunks*w/threads, chunks*(w+1)/threads
		lo, hi := c0*grain, min(c1*grain, n)
		if lo < hi {
			g.jobs = append(g.jobs, job{g: g, lo: lo, hi: hi})
		}
	}
	g.pending.Store(int32(len(g.jobs)))
	for i := range g.jobs {
		submit(&g.jobs[i])
	}
	g.run(0, min((chunks/threads)*grain, n))
	// Jobs no worker has claimed yet run here, in order.
	for i := range g.jobs {
		if j := &g.jobs[i]; j.claim() {
			g.exec(j)
		}
	}
	g.wait()
	if g.panicked != nil {
		panic(g.panicked.v)
	}
}

// Each calls fn(w, i) once for every item i in [0, n), on up to threads
// goroutines that take the items in order, one at a time, as they become
// free: a goroutine that starts late or is descheduled holds up at most
// the item it is running. w in [0, threads) identifies the goroutine (for
// per-goroutine scratch); calls with the same w never overlap. Which
// goroutine runs which item varies from call to call, so fn's result must
// depend only on i. A panic in fn is re-raised on the caller's goroutine.
func Each(threads, n int, fn func(w, i int)) {
	if n <= 0 {
		return
	}
	threads = max(1, min(threads, n))
	if threads == 1 {
		for i := range n {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	For(threads, threads, 1, func(lo, hi int) {
		for w := lo; w < hi; w++ {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					break
				}
				fn(w, i)
			}
		}
	})
}

// Chunks returns the number of fixed-size chunks of grain iterations that
// cover [0, n); ForChunks visits them. Use them for deterministic
// reductions: partial results per chunk, combined in chunk order.
func Chunks(n, grain int) int {
	if n <= 0 {
		return 0
	}
	if grain < 1 {
		grain = 1
	}
	return (n + grain - 1) / grain
}

// ForChunks calls fn(c, lo, hi) for every chunk c of grain iterations over
// [0, n), spread over up to threads goroutines.
func ForChunks(threads, n, grain int, fn func(c, lo, hi int)) {
	nc := Chunks(n, grain)
	if grain < 1 {
		grain = 1
	}
	For(threads, nc, 1, func(c0, c1 int) {
		for c := c0; c < c1; c++ {
			fn(c, c*grain, min((c+1)*grain, n))
		}
	})
}

// ---------------------------------------------------------------------
// Groups and jobs.

// job is one range of a For call, run by whoever claims it first: the
// worker it was handed to or, if that worker has not started it by then,
// the caller. A group is never reused, so a worker that comes late to a
// job only finds it claimed.
type job struct {
	g       *group
	lo, hi  int
	claimed atomic.Bool
}

func (j *job) claim() bool { return !j.claimed.Load() && j.claimed.CompareAndSwap(false, true) }

// panicValue wraps a recovered value.
type panicValue struct{ v any }

// group is the state of one For call.
type group struct {
	fn       func(lo, hi int)
	jobs     []job
	pending  atomic.Int32  // jobs not finished
	done     chan struct{} // receives once when pending reaches 0
	mu       sync.Mutex
	panicked *panicValue // the first panic
}

// run calls fn on [lo, hi), recording a panic instead of propagating it.
func (g *group) run(lo, hi int) {
	defer func() {
		if r := recover(); r != nil {
			g.mu.Lock()
			if g.panicked == nil {
				g.panicked = &panicValue{r}
			}
			g.mu.Unlock()
		}
	}()
	if lo < hi {
		g.fn(lo, hi)
	}
}

// exec runs a claimed job and marks it finished (also when fn exits its
// goroutine with runtime.Goexit).
func (g *group) exec(j *job) {
	defer g.finish()
	g.run(j.lo, j.hi)
}

func (g *group) finish() {
	if g.pending.Add(-1) == 0 {
		g.done <- struct{}{}
	}
}

// wait returns once every job has finished: it spins for a while (the
// workers' ranges are as long as the caller's), then parks.
func (g *group) wait() {
	if len(g.jobs) == 0 {
		return
	}
	if spinning() {
		deadline := time.Now().Add(waitSpin)
		for i := 1; g.pending.Load() != 0; i++ {
			if i%256 == 0 {
				runtime.Gosched()
				if time.Now().After(deadline) {
					break
				}
			}
		}
	}
	<-g.done
}

// ---------------------------------------------------------------------
// Workers.

const (
	// idleSpin is how long a worker looks for a new job before parking.
	idleSpin = 100 * time.Microsecond
	// waitSpin is how long a caller spins for its workers before parking.
	waitSpin = 200 * time.Microsecond
)

// maxWorkers bounds the pool; jobs no worker takes are run by their
// callers. A variable so that tests can exhaust the pool.
var maxWorkers = 256

// Worker states.
const (
	stIdle   int32 = iota // looking for a job (spinning)
	stParked              // blocked on wake
	stBusy                // a job was handed over
)

type worker struct {
	state atomic.Int32
	job   *job
	wake  chan struct{}
}

var pool struct {
	mu    sync.Mutex
	idle  []*worker // LIFO: the most recently active worker first
	count int
}

// spinning reports whether waiting by spinning can help: with a single P
// the spinner would only delay the goroutine it waits for.
func spinning() bool { return runtime.GOMAXPROCS(0) > 1 }

// submit hands j to an idle worker, or a new one while the pool is below
// maxWorkers; otherwise j waits for its caller to run it.
func submit(j *job) {
	pool.mu.Lock()
	var w *worker
	if n := len(pool.idle); n > 0 {
		w = pool.idle[n-1]
		pool.idle = pool.idle[:n-1]
	} else if pool.count < maxWorkers {
		pool.count++
		pool.mu.Unlock()
		w = &worker{wake: make(chan struct{}, 1)}
		w.job = j
		w.state.Store(stBusy)
		go w.loop()
		return
	}
	pool.mu.Unlock()
	if w == nil {
		return
	}
	w.job = j
	if w.state.Swap(stBusy) == stParked {
		w.wake <- struct{}{}
	}
}

// loop runs handed-over jobs until a job ends the goroutine (Goexit).
func (w *worker) loop() {
	defer func() {
		pool.mu.Lock()
		pool.count--
		pool.mu.Unlock()
	}()
	for {
		j := w.job
		w.job = nil
		if j.claim() {
			j.g.exec(j)
		}
		w.state.Store(stIdle)
		pool.mu.Lock()
		pool.idle = append(pool.idle, w)
		pool.mu.Unlock()
		w.await()
	}
}

// await returns once a job has been handed over: it spins for idleSpin,
// then parks.
func (w *worker) await() {
	if spinning() {
		deadline := time.Now().Add(idleSpin)
		for i := 1; ; i++ {
			if w.state.Load() == stBusy {
				return
			}
			if i%256 == 0 {
				runtime.Gosched()
				if time.Now().After(deadline) {
					break
				}
			}
		}
	}
	if w.state.CompareAndSwap(stIdle, stParked) {
		<-w.wake
	}
}
