package autodiff_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gorgonia.org/tensor"

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

// A zero-value Tape refuses every use with an error naming NewTape and
// never panics (issue 15 item 8).
func TestZeroTapeRefuses(t *testing.T) {
	wantErr := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "NewTape") {
			t.Fatalf("%s: err = %v, want an error mentioning NewTape", what, err)
		}
	}
	var tp autodiff.Tape
	c := tp.Constant(vec(t, 1, 2))
	wantErr("Constant", c.Err())
	wantErr("Tape.Err", tp.Err())
	y := tp.Apply("tapetest.Double", nil, c)
	wantErr("Apply", y[0].Err())
	wantErr("Backward", tp.Backward(y[0]))

	var tp2 autodiff.Tape
	p, _ := autodiff.NewParam("w", vec(t, 1))
	wantErr("Param", tp2.Param(p).Err())
	var tp3 autodiff.Tape
	wantErr("Ints", tp3.Ints(1, 2).Err())
	var tp4 autodiff.Tape
	wantErr("Scalar", tp4.Scalar(tensor.Float64, 1).Err())
	var tp5 autodiff.Tape
	wantErr("Backward", tp5.Backward(autodiff.Value{}))
	var tp6 autodiff.Tape
	_, err := tp6.Grad(nil, nil, nil, autodiff.GradOpts{})
	wantErr("Grad", err)
	var tp7 autodiff.Tape
	e := tp7.Emitter()
	e.Apply("tapetest.Double", nil, e.Scalar(tensor.Float64, 1))
	wantErr("Emitter", e.Err())
	var tp8 autodiff.Tape
	tp8.Reseed(3)
	tp8.Reset()
	tp8.Release()
	wantErr("Watch after Reset", tp8.Watch(vec(t, 1)).Err())
}

// Ints records an error naming the value instead of truncating one that
// does not fit int32 (issue 15 item 8).
func TestIntsOverflow(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("every int fits int32")
	}
	var m int64 = math.MaxInt32
	for _, bad := range []int{int(m + 1), int(-m - 2)} {
		tp := autodiff.NewTape()
		v := tp.Ints(1, bad, 3)
		err := v.Err()
		if !errors.Is(err, autodiff.ErrInvalidArgument) || !strings.Contains(err.Error(), strconv.Itoa(bad)) {
			t.Fatalf("Ints(1, %d, 3): err = %v, want ErrInvalidArgument naming %d", bad, err, bad)
		}
		if tp.Err() == nil {
			t.Fatal("the error is not on the tape")
		}
	}
	tp := autodiff.NewTape()
	v := tp.Ints(math.MaxInt32, math.MinInt32)
	if err := v.Err(); err != nil {
		t.Fatalf("Ints at the int32 limits: %v", err)
	}
}

// Backward adds gradients all or nothing: a parameter whose Grad cannot
// take its gradient fails the call before any other parameter's Grad is
// changed (issue 15 item 8).
func TestBackwardAccumulatesAllOrNothing(t *testing.T) {
	q, _ := autodiff.NewParam("q", vec(t, 1, 2))
	p, _ := autodiff.NewParam("p", vec(t, 1, 2))
	q.Grad = vec(t, 10, 10)
	p.Grad = vec(t, 0, 0, 0) // wrong shape, set by the user
	tp := autodiff.NewTape()
	y := tp.Apply("AddN", nil, tp.Param(q), tp.Param(p))[0]
	err := tp.Backward(y)
	if !errors.Is(err, autodiff.ErrShape) || !strings.Contains(err.Error(), `"p"`) {
		t.Fatalf("Backward = %v, want ErrShape naming p", err)
	}
	if got := q.Grad.Float64s(); !eq(got, []float64{10, 10}) {
		t.Fatalf("q.Grad = %v after a failed Backward, want it untouched [10 10]", got)
	}
}
