//go:build !race

package main

import (
	"math"
	"runtime"
	"testing"
)

// w10StepAllocBound is the most heap allocations a steady-state W10 step
// may make on one thread. Every op of the step (Conv2D, FusedBatchNormV3,
// DepthwiseConv2dNative, Relu, Mean, MatMul, BiasAdd, softmax cross
// entropy, and their gradient ops) allocates nothing on one thread: the
// tape recycles their buffers and hands out their small slices from
// slabs, which leaves a slab every dozen steps or so (about 0.1 per
// step). The step runs some 45 kernels, so an op that starts to allocate
// per call shows up as at least one more per step.
const w10StepAllocBound = 1

// w10StepAllocBound2 is the bound on two threads, where each loop that
// splits across goroutines allocates its closure (two objects for the
// depthwise assembly paths, a closure and a heap copy of its state):
// about 35 per step (12 for the three batch norms' forward and gradient
// passes, 6 for the depthwise ops, the rest for Conv2D, Relu and the
// broadcasting ops). internal/parallel itself allocates nothing per call;
// a group and its channel per call, as it used to, would add three per
// loop, some 60 per step.
const w10StepAllocBound2 = 48

// TestW10StepAllocations pins the heap allocations of W10's steady-state
// training step, the least of 10 steps after warm-up (a step may also
// see the worker pool of internal/parallel start a goroutine, once per
// worker for the life of the process). Counts are runtime.MemStats
// deltas, over every goroutine. (Excluded from -race builds, whose
// instrumentation allocates.)
func TestW10StepAllocations(t *testing.T) {
	if p := runtime.GOMAXPROCS(0); p < 2 {
		// Two threads need two Ps for the workers to run at all.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	for _, c := range []struct {
		threads int
		bound   float64
	}{{1, w10StepAllocBound}, {2, w10StepAllocBound2}} {
		m, err := newW10(c.threads)
		if err != nil {
			t.Fatal(err)
		}
		step := func() {
			if err := m.step(); err != nil {
				t.Fatal(err)
			}
		}
		for range 5 {
			step()
		}
		least := math.Inf(1)
		var m0, m1 runtime.MemStats
		for range 10 {
			runtime.ReadMemStats(&m0)
			step()
			runtime.ReadMemStats(&m1)
			least = min(least, float64(m1.Mallocs-m0.Mallocs))
		}
		avg := testing.AllocsPerRun(10, step) // at GOMAXPROCS 1
		t.Logf("threads=%d: %v allocations per step (least of 10), %.2f on average (testing.AllocsPerRun)", c.threads, least, avg)
		if least > c.bound {
			t.Errorf("threads=%d: a W10 step allocates %v objects, want at most %v", c.threads, least, c.bound)
		}
		if c.threads == 1 && avg > c.bound {
			t.Errorf("threads=1: a W10 step allocates %.2f objects on average, want at most %v", avg, c.bound)
		}
	}
}
