//go:build !race

package backward_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestConv2DInt32Allocations checks that steady-state int32 calls of
// Conv2D and Conv2DBackpropInput (recycled outputs, as the tape runs them)
// allocate nothing on one thread and, on two threads, no more than their
// one parallel loop costs (its closure, the geometry it copies, and what
// internal/parallel allocates for a loop). The shapes have thousands of
// positions, so an allocation per position breaks the bounds. (Excluded
// from -race builds, whose instrumentation allocates.)
func TestConv2DInt32Allocations(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	i32 := func(shape ...int) *tensor.Dense {
		return testutil.New(t, shape, randInt32s(r, testutil.Numel(shape), true))
	}
	same := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME"}
	s2 := forward.Conv2DAttrs{Strides: []int{1, 2, 2, 1}, Padding: "SAME"}
	calls := []struct {
		name, op string
		attrs    forward.Conv2DAttrs
		in       []*tensor.Dense
	}{
		{"fwd", "Conv2D", same, []*tensor.Dense{i32(4, 24, 24, 8), i32(3, 3, 8, 16)}},
		{"fwd-grouped", "Conv2D", same, []*tensor.Dense{i32(4, 24, 24, 8), i32(3, 3, 4, 16)}},
		{"input", "Conv2DBackpropInput", s2, []*tensor.Dense{testutil.Ints(t, 4, 24, 24, 8), i32(3, 3, 8, 16), i32(4, 12, 12, 16)}},
	}
	for _, c := range calls {
		run := registrytest.KernelRun(t, c.name, c.op, c.attrs, 1, c.in)
		run()
		if got := testing.AllocsPerRun(5, run); got != 0 {
			t.Errorf("%s on 1 thread: %v allocations per call", c.name, got)
		}
	}
	fn := func(w, i int) {}
	perLoop := testutil.MallocsPerCall(20, func() { parallel.Each(2, 8, fn) })
	const ownPerLoop = 2 // the closure and the geometry's copy
	bound := ownPerLoop + perLoop + 1
	for _, c := range calls {
		run := registrytest.KernelRun(t, c.name, c.op, c.attrs, 2, c.in)
		got := testutil.MallocsPerCall(5, run)
		for range 2 {
			got = min(got, testutil.MallocsPerCall(5, run))
		}
		if got > bound {
			t.Errorf("%s on 2 threads: %v allocations per call, want at most %v", c.name, got, bound)
		}
	}
}
