//go:build !race

package autodiff_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// TestOnGradReadyAllocations: with a hook set, a steady-state
// Reset-forward-Backward step allocates no more than without one (the
// hook's scratch is reused). (Excluded from -race builds, whose
// instrumentation allocates.)
func TestOnGradReadyAllocations(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	ws := []*autodiff.Param{randParam(t, r, "w1", 8, 8), randParam(t, r, "w2", 8, 8), randParam(t, r, "w3", 8, 8)}
	xd, err := tensorx.New([]int{4, 8}, make([]float64, 32))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	hook := func(*autodiff.Param, *tensor.Dense) { calls++ }
	measure := func(withHook bool) float64 {
		tape := autodiff.NewTape(autodiff.Threads(1))
		if withHook {
			tape.OnGradReady(hook)
		}
		step := func() {
			tape.Reset()
			h := tape.Constant(xd)
			for _, w := range ws {
				h = autodiff.Tanh(autodiff.MatMul(h, tape.Param(w), forward.MatMulAttrs{}))
			}
			if err := tape.Backward(autodiff.Sum(h, nil, false)); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			step()
		}
		return testing.AllocsPerRun(100, step)
	}
	without, with := measure(false), measure(true)
	t.Logf("allocations per step: %.2f without the hook, %.2f with it (%d hook calls)", without, with, calls)
	if with > without {
		t.Errorf("a step with the hook allocates %.2f objects, without it %.2f", with, without)
	}
	if calls == 0 {
		t.Error("hook never called")
	}
}
