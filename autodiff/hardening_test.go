package autodiff_test

import (
	"sync"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
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
