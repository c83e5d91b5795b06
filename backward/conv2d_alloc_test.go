//go:build !race

package backward_test

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestConv2DBackpropAllocations checks that steady-state calls of
// Conv2DBackpropInput and Conv2DBackpropFilter, through
// registry.RunNormalized with recycled buffers as the tape runs them,
// allocate nothing on one thread, and on two threads no more than a few
// objects per parallel loop (a closure and the state it shares, plus
// whatever internal/parallel itself allocates for a loop). The shapes have
// thousands of output positions, many GEMM blocks and several
// filter-gradient chunks, so an allocation per row, chunk or block breaks
// the bound. (Excluded from -race builds, whose instrumentation
// allocates.)
func TestConv2DBackpropAllocations(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	type call struct {
		name, op string
		attrs    any
		in       []*tensor.Dense
	}
	var calls []call
	testutil.ConvAllocCases(func(sh testutil.ConvAllocShape, format string, dt tensor.Dtype) {
		l := conv2DLayoutOf(format)
		oh, ow := (sh.H+sh.S-1)/sh.S, (sh.W+sh.S-1)/sh.S
		if sh.Padding == "VALID" {
			oh, ow = (sh.H-sh.K)/sh.S+1, (sh.W-sh.K)/sh.S+1
		}
		xs, ys := l.shape(sh.N, sh.H, sh.W, sh.C), l.shape(sh.N, oh, ow, sh.O)
		fs := []int{sh.K, sh.K, sh.CF, sh.O}
		x := testutil.Dense(t, dt, xs, testutil.Normal(r, testutil.Numel(xs)))
		f := testutil.Dense(t, dt, fs, testutil.Normal(r, testutil.Numel(fs)))
		dy := testutil.Dense(t, dt, ys, testutil.Normal(r, testutil.Numel(ys)))
		attrs := forward.Conv2DAttrs{Strides: l.shape(1, sh.S, sh.S, 1), Padding: sh.Padding, DataFormat: format}
		for _, c := range []struct {
			op string
			in []*tensor.Dense
		}{
			{"Conv2DBackpropInput", []*tensor.Dense{testutil.Ints(t, xs...), f, dy}},
			{"Conv2DBackpropFilter", []*tensor.Dense{x, testutil.Ints(t, fs...), dy}},
		} {
			calls = append(calls, call{fmt.Sprintf("%s/%s/%s/%v", c.op, sh.Name, format, dt), c.op, attrs, c.in})
		}
	})
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
	// Two threads: each op runs at most two parallel loops (its GEMMs' or
	// its chunks', and the filter gradient's sum). Measured at the
	// process's GOMAXPROCS (testing.AllocsPerRun sets it to 1, which makes
	// internal/parallel start and park extra workers), with one allocation
	// of slack for the runtime's own (a parking worker may need a new
	// sudog after a collection).
	fn := func(w, i int) {}
	perLoop := testutil.MallocsPerCall(20, func() { parallel.Each(2, 8, fn) })
	const loops, ownPerLoop = 2, 2
	bound := loops*(ownPerLoop+perLoop) + 1
	for _, c := range calls {
		if got := testutil.MallocsPerCall(5, runner(c, 2)); got > bound {
			t.Errorf("%s on 2 threads: %v allocations per call, want at most %v", c.name, got, bound)
		}
	}
}
