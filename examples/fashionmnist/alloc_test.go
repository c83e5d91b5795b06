//go:build !race

package main

import (
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// TestStepAllocations pins the heap allocations of the example model's
// steady-state training step and evaluation batch on one thread. The
// tape's arena serves its buffers from blocks that each serve values of
// several shapes in turn (liveness releases them within a step), with a
// header per block and shape cached: a step allocates nothing but a slab
// now and then, an evaluation batch nothing. (Excluded from -race builds,
// whose instrumentation allocates.)
func TestStepAllocations(t *testing.T) {
	const batch = 32
	model := newModel(1, false)
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 1e-3, Eps: optim.Float(1e-7)})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(1))
	xs := make([]float32, batch*28*28)
	for i := range xs {
		xs[i] = r.Float32()
	}
	ys := make([]int32, batch)
	for i := range ys {
		ys[i] = int32(r.Intn(10))
	}
	x, err := tensorx.New([]int{batch, 28, 28, 1}, xs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensorx.New([]int{batch}, ys)
	if err != nil {
		t.Fatal(err)
	}
	tape := autodiff.NewTape(autodiff.Seed(1), autodiff.Threads(1))
	step := func() {
		tape.Reset()
		logits := model.Forward(tape, tape.Constant(x))
		loss := nn.SparseSoftmaxCrossEntropy(logits, tape.Constant(y))
		if err := tape.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
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
