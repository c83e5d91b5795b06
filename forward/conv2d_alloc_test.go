//go:build !race

package forward

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestConv2DAllocations checks that steady-state calls of Conv2D, through
// registry.RunNormalized with recycled buffers as the tape runs them,
// allocate nothing on one thread, and on two threads no more than a few
// objects per parallel loop (a closure and the state it shares, plus
// whatever internal/parallel itself allocates for a loop). The shapes have
// thousands of output positions and many GEMM blocks, so an allocation
// per row or block breaks the bound. (Excluded from -race builds, whose instrumentation
// allocates.)
func TestConv2DAllocations(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	type shape struct {
		name                 string
		n, h, w, c, k, cf, o int
		s                    int
		padding              string
	}
	type call struct {
		name, op string
		attrs    any
		in       []*tensor.Dense
	}
	var calls []call
	for _, sh := range []shape{
		{"3x3", 4, 24, 24, 16, 3, 16, 32, 1, "SAME"},    // 2304 positions, in-place rows
		{"3x3s2", 4, 24, 24, 16, 3, 16, 32, 2, "SAME"},  // strided
		{"grouped", 2, 20, 20, 16, 3, 8, 8, 1, "VALID"}, // two groups
		{"1x1", 4, 16, 16, 32, 1, 32, 16, 1, "VALID"},   // direct GEMMs
		{"W1", 32, 32, 32, 16, 3, 16, 32, 1, "SAME"},    // cmd/bench/README.md W1
	} {
		for _, format := range []string{"NHWC", "NCHW"} {
			for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				if sh.name == "W1" && (format != "NHWC" || dt != tensor.Float32) {
					continue
				}
				l := convLayoutOf(format)
				xs := l.shape(sh.n, sh.h, sh.w, sh.c)
				fs := []int{sh.k, sh.k, sh.cf, sh.o}
				x := testutil.Dense(t, dt, xs, testutil.Normal(r, testutil.Numel(xs)))
				f := testutil.Dense(t, dt, fs, testutil.Normal(r, testutil.Numel(fs)))
				attrs := Conv2DAttrs{Strides: l.shape(1, sh.s, sh.s, 1), Padding: sh.padding, DataFormat: format}
				for _, c := range []struct {
					op string
					in []*tensor.Dense
				}{
					{"Conv2D", []*tensor.Dense{x, f}},
				} {
					calls = append(calls, call{fmt.Sprintf("%s/%s/%s/%v", c.op, sh.name, format, dt), c.op, attrs, c.in})
				}
			}
		}
	}
	runner := func(c call, threads int) func() {
		return registrytest.KernelRun(t, c.name, c.op, c.attrs, threads, c.in)
	}
	// One thread first, before this test starts any parallel loop.
	for _, c := range calls {
		run := runner(c, 1)
		run()
		if got := testing.AllocsPerRun(5, run); got != 0 {
			t.Errorf("%s on 1 thread: %v allocations per call", c.name, got)
		}
	}
	// Two threads: Conv2D runs at most two parallel loops (the GEMMs of
	// its groups). Measured at the process's GOMAXPROCS
	// (testing.AllocsPerRun sets it to 1, which makes internal/parallel
	// start and park extra workers), with one allocation of slack for the
	// runtime's own (a parking worker may need a new sudog after a
	// collection).
	fn := func(w, i int) {}
	perLoop := testutil.MallocsPerCall(20, func() { parallel.Each(2, 8, fn) })
	const loops, ownPerLoop = 2, 2
	bound := loops*(ownPerLoop+perLoop) + 1
	for _, c := range calls {
		// The least of three measurements: a worker's start-up allocates
		// depending on timing (a loaded machine saw 5.4 against 5 once).
		run := runner(c, 2)
		got := testutil.MallocsPerCall(5, run)
		for range 2 {
			got = min(got, testutil.MallocsPerCall(5, run))
		}
		if got > bound {
			t.Errorf("%s on 2 threads: %v allocations per call, want at most %v", c.name, got, bound)
		}
	}
}
