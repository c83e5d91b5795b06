package autodiff_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/registry"
)

// Separate tapes may run in separate goroutines (issue 15 item 1): run
// under -race, creating tapes concurrently and using each one.
func TestTapesInParallelGoroutines(t *testing.T) {
	const workers = 8
	var wg sync.WaitGroup
	errs := make([]error, workers)
	grads := make([][]float64, workers)
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			p, err := autodiff.NewParam("w", vec(t, 1, 2, 3))
			if err != nil {
				errs[g] = err
				return
			}
			for step := 0; step < 20; step++ {
				tp := autodiff.NewTape(autodiff.Threads(1))
				w := tp.Param(p)
				c := tp.Constant(vec(t, 1, 1, 1))
				y := tp.Apply("AddN", nil, tp.Apply("tapetest.Double", nil, w)[0], w, c)[0]
				if err := tp.Backward(y); err != nil {
					errs[g] = err
					return
				}
			}
			grads[g] = p.Grad.Float64s()
		}(g)
	}
	wg.Wait()
	for g := 0; g < workers; g++ {
		if errs[g] != nil {
			t.Fatalf("goroutine %d: %v", g, errs[g])
		}
		if !eq(grads[g], []float64{60, 60, 60}) {
			t.Fatalf("goroutine %d: grad = %v, want [60 60 60]", g, grads[g])
		}
	}
}

// An unknown op name never panics, whatever output the caller indexes
// (issue 15 item 5): each value reports the not-registered error.
func TestApplyUnknownOpAnyIndex(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Constant(vec(t, 1, 2))
	outs := tp.Apply("Unqiue", nil, x) // misspelled two-output op
	if len(outs) < 6 {
		t.Fatalf("len(outs) = %d, want at least 6", len(outs))
	}
	for i := 0; i < 6; i++ {
		err := outs[i].Err()
		if !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), `"Unqiue"`) {
			t.Fatalf("outs[%d].Err() = %v, want the not-registered error naming Unqiue", i, err)
		}
	}
	if err := tp.Backward(outs[1]); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Backward = %v, want the not-registered error", err)
	}

	tp = autodiff.NewTape()
	e := tp.Emitter()
	x = tp.Constant(vec(t, 1, 2))
	routs := e.Apply("Unqiue", nil, tp.Ref(x))
	if len(routs) < 6 {
		t.Fatalf("emitter: len(outs) = %d, want at least 6", len(routs))
	}
	for i := 0; i < 6; i++ {
		if routs[i] == nil {
			t.Fatalf("emitter: outs[%d] is nil", i)
		}
	}
	if err := e.Err(); !errors.Is(err, registry.ErrNotFound) || !strings.Contains(err.Error(), `"Unqiue"`) {
		t.Fatalf("emitter Err() = %v, want the not-registered error naming Unqiue", err)
	}
	if err := tp.Err(); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("tape Err() = %v", err)
	}
}
