package autodiff

import "github.com/tapegrad/tapegrad/internal/parallel"

// ReleaseWorkers stops the goroutines that kernels run their threads on
// (tapes with Threads(n), n > 1, or the default GOMAXPROCS), so that a
// process done with tapegrad keeps none of them: goroutine-leak checkers
// (goleak and the like) in your tests then find nothing, and their memory
// can be collected.
//
// The workers are started on demand and kept for the next op; an idle one
// spins for a few tens of microseconds after its last job, then sleeps
// without using CPU. They need no releasing for speed or CPU; release them
// when you want the goroutines gone, e.g. at the end of a test or of a
// TestMain. ReleaseWorkers returns once they have exited (a worker still
// running an op of another goroutine exits when that op is done). Ops run
// afterwards, on any tape, start new workers as they need them: releasing
// changes no result.
func ReleaseWorkers() { parallel.Release() }
