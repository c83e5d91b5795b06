// Package parallel splits loops across goroutines with chunk bounds that
// depend only on the problem size, never on the thread count, so reductions
// combined in chunk order are bit-identical for any number of threads.
package parallel

import "sync"

// For calls fn(lo, hi) over [0, n) cut into chunks of at least grain
// iterations, on up to threads goroutines (the caller's included). With
// threads <= 1, or a single chunk, everything runs on the caller's
// goroutine. fn must be safe to call concurrently on disjoint ranges.
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
	// Contiguous, near-equal blocks of whole chunks per worker. A panic in a
	// worker is re-raised on the caller's goroutine after all workers are
	// done, so the caller's recover (registry.Run's) sees it.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var panicked any
	for w := 1; w < threads; w++ {
		c0, c1 := chunks*w/threads, chunks*(w+1)/threads
		lo, hi := c0*grain, min(c1*grain, n)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					if panicked == nil {
						panicked = r
					}
					mu.Unlock()
				}
			}()
			fn(lo, hi)
		}()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if panicked == nil {
					panicked = r
				}
				mu.Unlock()
			}
		}()
		fn(0, min((chunks/threads)*grain, n))
	}()
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
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
