//go:build !race

package main

import (
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
)

// TestStepAllocations pins the heap allocations of the example model's
// steady-state training step and evaluation batch on one thread. The
// tape's arena serves its buffers from blocks that each serve values of
// several shapes in turn (liveness releases them within a step), with a
// header per block and shape cached: a step allocates nothing but a slab
// now and then, an evaluation batch nothing. (Excluded from -race builds,
// whose instrumentation allocates.)
func TestStepAllocations(t *testing.T) {
	tr := newTrainer(t, false, 32, autodiff.Threads(1))
	model, x, step := tr.model, tr.x, tr.step
	evalTape := autodiff.NewTape(autodiff.NoGrad(), autodiff.Training(false), autodiff.Threads(1))
	eval := func() {
		evalTape.Reset()
		if err := model.Forward(evalTape, evalTape.Constant(x)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		step()
		eval()
	}
	if n := testing.AllocsPerRun(20, step); n > 3 {
		t.Errorf("a training step allocates %.2f objects, want at most 3", n)
	}
	if n := testing.AllocsPerRun(20, eval); n != 0 {
		t.Errorf("an evaluation batch allocates %.2f objects, want 0", n)
	}
}
