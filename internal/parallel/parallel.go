// Package parallel splits loops across goroutines with chunk bounds that
// depend only on the problem size, never on the thread count, so reductions
// combined in chunk order are bit-identical for any number of threads.
//
// The goroutines come from a pool of workers: a worker that finishes a
// job spins for idleSpin (tens of microseconds) before parking, so the
// next call's jobs start within microseconds instead of waiting for the
// scheduler to wake an idle thread, while an idle process stops using CPU
// within a fraction of a millisecond. A job no worker has started yet when the caller is done
// with its own share is run by the caller itself, so nested calls never
// deadlock and a busy machine degrades to serial execution, not to a
// stall.
//
// A call allocates nothing in the steady state: its bookkeeping (a group
// of jobs and the channel its caller parks on) comes from a free list and
// is reused by later calls. What remains is the caller's: a closure
// passed as fn is allocated where it is built, so hot callers test for
// the serial case (threads <= 1, or a single chunk or block) first and
// call their loop directly. The pool starts a worker (a goroutine and its
// state) only when no idle one is left, at most maxWorkers at a time.
// Release stops them (autodiff.ReleaseWorkers for users); later calls
// start new ones.
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
// has finished. A call allocates nothing: its bookkeeping comes from a
// free list (fn itself, if it is a closure, is the caller's allocation).
func For(threads, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if threads <= 1 || chunks == 1 {
		fn(0, n)
		return
	}
	g := getGroup()
	g.kind, g.fn = kindFor, fn
	g.launch(threads, n, grain)
}

// Each calls fn(w, i) once for every item i in [0, n), on up to threads
// goroutines that take the items one at a time, as they become free: a
// goroutine that starts late or is descheduled holds up at most the item
// it is running. Goroutine w first takes, in order, the items of its own
// share, the w-th of threads contiguous near-equal parts of [0, n), then
// helps with the others' (see "Shares" below). w in [0, threads)
// identifies the goroutine (for per-goroutine scratch); calls with the
// same w never overlap. Which goroutine runs which item varies from call
// to call, so fn's result must depend only on i. A panic in fn is
// re-raised on the caller's goroutine.
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
	g := getGroup()
	g.kind, g.each, g.n = kindEach, fn, n
	g.share(n, threads)
	g.launch(threads, threads, 1)
}

// Blocks calls fn(lo, hi) over [0, n) cut into blocks of grain iterations
// (the last one shorter), which up to threads goroutines take one at a
// time: each first the blocks of its own share (a contiguous part of the
// blocks, in ascending order), then the rest of the others' (see
// "Shares" below), so that a goroutine that starts late (waking an idle
// CPU) or runs on a busy CPU takes fewer blocks. Blocks must be
// independent (reductions write per-block partials), so results do not
// depend on the thread count or on which goroutine runs which block.
// With threads <= 1, or a single block, fn(0, n) runs on the caller's
// goroutine. A panic in fn is re-raised on the caller's goroutine.
func Blocks(threads, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	blocks := (n + grain - 1) / grain
	if threads <= 1 || blocks <= 1 {
		fn(0, n)
		return
	}
	workers := min(threads, blocks)
	g := getGroup()
	g.kind, g.fn, g.n, g.grain = kindBlocks, fn, n, grain
	g.share(blocks, workers)
	g.launch(workers, workers, 1)
}

// Shares. Each and Blocks give goroutine w (the caller is 0) the w-th of
// their contiguous, near-equal parts of the items first, as For does with
// its ranges, and let a goroutine done with its own share take the
// remaining items of the next shares. Consecutive calls over the same
// data (an elementwise pass after the pass that wrote its input, the
// GEMM after the normalisation) then give each goroutine mostly the same
// part of the data, which its CPU's caches still hold when the goroutine
// stays on that CPU, as it mostly does: on a machine whose cores do not
// share a cache level, a core reads lines another core wrote at half its
// own cache's speed or less (measured on the project's 2-vCPU Zen 5
// machine: 4 MiB written by the other core read at 33 GB/s, by the same
// core at 67 GB/s). Handing the items out from one shared counter instead
// interleaved them between the goroutines; W7's batch-norm forward took
// 1.26 ms instead of 0.82 at two threads.

// share is one goroutine's part [next, end) of the items of an Each or
// Blocks call, padded to a cache line so that the goroutines' counters do
// not share one.
type share struct {
	next atomic.Int64
	end  int64
	_    [48]byte
}

// share cuts the items [0, n) into parts contiguous, near-equal shares.
func (g *group) share(n, parts int) {
	if cap(g.shares) < parts {
		g.shares = make([]share, parts)
	}
	g.shares = g.shares[:parts]
	for r := range g.shares {
		g.shares[r].end = int64(n * (r + 1) / parts)
		g.shares[r].next.Store(int64(n * r / parts))
	}
}

// take returns the next item for goroutine w: from its own share while it
// lasts, then from the following shares in turn; ok is false when every
// share is done. k is the caller's cursor (0 on the first call): the
// number of shares it has found done.
func (g *group) take(w int, k *int) (i int, ok bool) {
	parts := len(g.shares)
	for ; *k < parts; *k++ {
		sh := &g.shares[(w+*k)%parts]
		if next := sh.next.Add(1) - 1; next < sh.end {
			return int(next), true
		}
	}
	return 0, false
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
	if nc == 0 {
		return
	}
	grain = max(grain, 1)
	if threads <= 1 || nc == 1 {
		for c := range nc {
			fn(c, c*grain, min((c+1)*grain, n))
		}
		return
	}
	g := getGroup()
	g.kind, g.chunk, g.n, g.grain = kindChunks, fn, n, grain
	g.launch(threads, nc, 1)
}

// ---------------------------------------------------------------------
// Groups and jobs.

// job is one range of a call, run by whoever claims it first: the worker
// it was handed to or, if that worker has not started it by then, the
// caller. Groups (and so jobs) are reused from a free list, and a call
// returns only once all its jobs are claimed and finished, so a worker
// that comes late to a job finds it claimed or, if a later call of the
// group has re-armed it, runs that call's range: either way a job runs
// exactly once per call. Its fields are written before claimed is reset
// and read only after claimed is won, which orders the two.
type job struct {
	g       *group
	lo, hi  int
	claimed atomic.Bool
}

func (j *job) claim() bool { return !j.claimed.Load() && j.claimed.CompareAndSwap(false, true) }

// panicValue wraps a recovered value.
type panicValue struct{ v any }

// What a group runs.
const (
	kindFor    = iota // fn on each range
	kindEach          // each on items taken from the shares, per goroutine id
	kindBlocks        // fn on blocks of grain taken from the shares
	kindChunks        // chunk on each chunk of grain in the range
)

// group is the state of one call of For, Each, Blocks or ForChunks.
type group struct {
	kind     int
	fn       func(lo, hi int)    // For, Blocks
	each     func(w, i int)      // Each
	chunk    func(c, lo, hi int) // ForChunks
	n, grain int                 // Each, Blocks, ForChunks
	shares   []share             // Each, Blocks: the goroutines' parts of the items
	jobs     []job
	pending  atomic.Int32  // jobs not finished
	done     chan struct{} // receives once when pending reaches 0
	mu       sync.Mutex
	panicked *panicValue // the first panic
}

// groups is the free list of groups: a call takes one and gives it back
// when it returns (not when it panics or its caller's goroutine exits).
var groups struct {
	mu   sync.Mutex
	free []*group
}

func getGroup() *group {
	groups.mu.Lock()
	if n := len(groups.free); n > 0 {
		g := groups.free[n-1]
		groups.free[n-1] = nil
		groups.free = groups.free[:n-1]
		groups.mu.Unlock()
		return g
	}
	groups.mu.Unlock()
	return &group{done: make(chan struct{}, 1)}
}

// putGroup returns a finished group to the free list, dropping its
// function so that the closure (and what it holds) can be collected.
func putGroup(g *group) {
	g.fn, g.each, g.chunk = nil, nil, nil
	groups.mu.Lock()
	groups.free = append(groups.free, g)
	groups.mu.Unlock()
}

// launch runs the group's work over the units [0, n) (indices, items'
// goroutine ids or chunks) cut into chunks of grain, on up to threads
// goroutines, threads > 1 and n > grain: contiguous, near-equal blocks of
// whole chunks, block 0 for the caller, the others offered to workers.
// It returns the group to the free list, then re-raises a panic of the
// work.
func (g *group) launch(threads, n, grain int) {
	chunks := (n + grain - 1) / grain
	threads = min(threads, chunks)
	njobs := 0
	for w := 1; w < threads; w++ {
		if c0 := chunks * w / threads; c0*grain < n {
			njobs++
		}
	}
	if cap(g.jobs) < njobs {
		g.jobs = make([]job, njobs)
	}
	g.jobs = g.jobs[:njobs]
	// pending first: a late worker may claim a job as soon as it is
	// re-armed, before submit.
	g.pending.Store(int32(njobs))
	k := 0
	for w := 1; w < threads; w++ {
		c0, c1 := chunks*w/threads, chunks*(w+1)/threads
		lo, hi := c0*grain, min(c1*grain, n)
		if lo >= n {
			continue
		}
		j := &g.jobs[k]
		k++
		j.g, j.lo, j.hi = g, lo, hi
		j.claimed.Store(false)
	}
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
	p := g.panicked
	g.panicked = nil
	putGroup(g)
	if p != nil {
		panic(p.v)
	}
}

// run does the work of the units [lo, hi), recording a panic instead of
// propagating it.
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
	if lo >= hi {
		return
	}
	switch g.kind {
	case kindFor:
		g.fn(lo, hi)
	case kindEach:
		for w := lo; w < hi; w++ {
			k := 0
			for {
				i, ok := g.take(w, &k)
				if !ok {
					break
				}
				g.each(w, i)
			}
		}
	case kindBlocks:
		k := 0
		for {
			b, ok := g.take(lo, &k)
			if !ok {
				return
			}
			b *= g.grain
			g.fn(b, min(b+g.grain, g.n))
		}
	case kindChunks:
		for c := lo; c < hi; c++ {
			g.chunk(c, c*g.grain, min((c+1)*g.grain, g.n))
		}
	}
}

// exec runs a claimed job and marks it finished (also when the work exits
// its goroutine with runtime.Goexit).
func (g *group) exec(j *job) {
	defer g.finish()
	g.run(j.lo, j.hi)
}

// execWorker runs a job claimed by a worker, marking it finished only if
// the work exits the goroutine with runtime.Goexit: otherwise the worker
// marks it finished itself, after going back to the idle list.
func (g *group) execWorker(j *job) {
	exited := true
	defer func() {
		if exited {
			g.finish()
		}
	}()
	g.run(j.lo, j.hi)
	exited = false
}

func (g *group) finish() {
	if g.pending.Add(-1) == 0 {
		g.done <- struct{}{}
	}
}

// wait returns once every job has finished: it spins for up to waitSpin
// (the workers' ranges are as long as the caller's), then parks.
func (g *group) wait() {
	if len(g.jobs) == 0 {
		return
	}
	if t := now(); spinning(t) {
		deadline := t + int64(waitSpin)
		for i := 1; g.pending.Load() != 0; i++ {
			if i%256 == 0 {
				runtime.Gosched()
				if now() > deadline {
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
	// idleSpin is how long a worker looks for a new job before parking:
	// long enough to span the gap between two calls of a sequence of
	// small ops, short enough that an idle process stops using CPU within
	// a fraction of a millisecond.
	idleSpin = 50 * time.Microsecond
	// waitSpin is how long a caller spins for its workers before parking.
	waitSpin = 100 * time.Microsecond
	// procsRefresh is how often spinning reads GOMAXPROCS again (it can
	// change: runtime.GOMAXPROCS, or the runtime's own updates to a
	// changed CPU limit).
	procsRefresh = 10 * time.Millisecond
)

// maxWorkers bounds the pool; jobs no worker takes are run by their
// callers. A variable so that tests can exhaust the pool.
var maxWorkers = 256

// Worker states.
const (
	stIdle    int32 = iota // looking for a job (spinning)
	stParked               // blocked on wake
	stBusy                 // a job was handed over
	stRunning              // running a job's work (user code)
	stExit                 // released: exit
)

type worker struct {
	state atomic.Int32
	job   *job
	wake  chan struct{}
	gen   uint64 // the pool generation the worker belongs to
	dead  bool   // exited (guarded by pool.mu)
}

var pool struct {
	mu    sync.Mutex
	idle  []*worker // LIFO: the most recently active worker first
	count int       // live workers of the current generation
	gen   uint64    // incremented by Release
	all   []*worker // live workers of every generation
	exits sync.Cond // broadcast when a worker exits (L = &mu)
}

func init() { pool.exits.L = &pool.mu }

// clock0 is the origin of now.
var clock0 = time.Now()

// now returns the monotonic time in nanoseconds since clock0: one read of
// the runtime's clock, cheaper than time.Now.
func now() int64 { return int64(time.Since(clock0)) }

// procs caches runtime.GOMAXPROCS(0), which takes the scheduler's lock:
// n as read at time at (now's clock), 0 before the first read.
var procs struct {
	n  atomic.Int32
	at atomic.Int64
}

// readProcs reads GOMAXPROCS; a variable so that tests can count reads.
var readProcs = func() int { return runtime.GOMAXPROCS(0) }

// spinning reports whether waiting by spinning can help: with a single P
// the spinner would only delay the goroutine it waits for. t is now().
// GOMAXPROCS is read again at most every procsRefresh.
func spinning(t int64) bool {
	at := procs.at.Load()
	if n := procs.n.Load(); n != 0 && t-at < int64(procsRefresh) {
		return n > 1
	}
	if procs.at.CompareAndSwap(at, t) {
		procs.n.Store(int32(readProcs()))
	}
	return procs.n.Load() > 1
}

// submit hands j to an idle worker, or a new one while the pool is below
// maxWorkers; otherwise j waits for its caller to run it.
func submit(j *job) {
	pool.mu.Lock()
	var w *worker
	if n := len(pool.idle); n > 0 {
		w = pool.idle[n-1]
		pool.idle[n-1] = nil
		pool.idle = pool.idle[:n-1]
	} else if pool.count < maxWorkers {
		pool.count++
		w = &worker{wake: make(chan struct{}, 1), gen: pool.gen}
		pool.all = append(pool.all, w)
		pool.mu.Unlock()
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

// loop runs handed-over jobs until the worker is released, or a job ends
// the goroutine (Goexit).
func (w *worker) loop() {
	defer w.exit()
	for {
		j := w.job
		w.job = nil
		var g *group
		if j.claim() {
			g = j.g
			w.state.Store(stRunning)
			g.execWorker(j)
		}
		// Back to the idle list before the job counts as finished, so
		// that the caller's next call finds this worker there instead of
		// starting a new one; unless the pool was released meanwhile.
		w.state.Store(stIdle)
		pool.mu.Lock()
		keep := w.gen == pool.gen
		if keep {
			pool.idle = append(pool.idle, w)
		}
		pool.mu.Unlock()
		if g != nil {
			g.finish()
		}
		if !keep || !w.await() {
			return
		}
	}
}

// exit takes the exiting worker out of the pool's books.
func (w *worker) exit() {
	pool.mu.Lock()
	if w.gen == pool.gen {
		// Only a Goexit in a job ends a worker of the current
		// generation; it is not in the idle list (it was running).
		pool.count--
	}
	for i, v := range pool.all {
		if v == w {
			last := len(pool.all) - 1
			pool.all[i] = pool.all[last]
			pool.all[last] = nil
			pool.all = pool.all[:last]
			break
		}
	}
	w.dead = true
	pool.exits.Broadcast()
	pool.mu.Unlock()
}

// await waits for a job to be handed over, spinning for up to idleSpin
// before it parks. It reports false if the worker was released instead.
func (w *worker) await() bool {
	if t := now(); spinning(t) {
		deadline := t + int64(idleSpin)
		for i := 1; ; i++ {
			if s := w.state.Load(); s != stIdle {
				return s == stBusy
			}
			if i%256 == 0 {
				runtime.Gosched()
				if now() > deadline {
					break
				}
			}
		}
	}
	if w.state.CompareAndSwap(stIdle, stParked) {
		<-w.wake
	}
	return w.state.Load() == stBusy
}

// Release stops the pool's workers, so that an idle process keeps no
// goroutines of this package (goroutine-leak checkers find none) and the
// memory of the calls' bookkeeping can be collected. It returns once every
// worker has exited, except a worker running a job of a call still in
// progress (in another goroutine, or the call of which Release is part),
// which exits when its job is done. Later calls start new workers as
// they need them. Release is safe to call at any time, from any
// goroutine; calls in progress complete normally.
func Release() {
	pool.mu.Lock()
	pool.gen++
	for _, w := range pool.idle {
		if w.state.Swap(stExit) == stParked {
			w.wake <- struct{}{}
		}
	}
	clear(pool.idle)
	pool.idle = pool.idle[:0]
	pool.count = 0
	// Wait for the workers not running a job now: idle ones exit at
	// once; ones handed a job that their caller ran itself, or about to
	// start one, exit once they are back.
	var waitFor []*worker
	for _, w := range pool.all {
		if w.state.Load() != stRunning {
			waitFor = append(waitFor, w)
		}
	}
	for _, w := range waitFor {
		for !w.dead {
			pool.exits.Wait()
		}
	}
	pool.mu.Unlock()
	groups.mu.Lock()
	clear(groups.free)
	groups.free = groups.free[:0]
	groups.mu.Unlock()
}
