package autodiff_test

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
)

// workerGoroutines counts the goroutines of tapegrad's worker pool.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("internal/parallel.(*worker)"))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// parallelStep runs a forward and backward pass big enough for the
// kernels to split it across threads, and returns the raw bits of the
// loss and of the gradient.
func parallelStep(t *testing.T, threads int) []uint64 {
	t.Helper()
	const n = 256
	a := make([]float64, n*n)
	for i := range a {
		a[i] = math.Sin(float64(i))
	}
	tape := autodiff.NewTape(autodiff.Threads(threads))
	w, err := autodiff.NewParam("w", tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a)))
	if err != nil {
		t.Fatal(err)
	}
	x := tape.Constant(tensor.New(tensor.WithShape(n, n), tensor.WithBacking(a)))
	loss := autodiff.Sum(autodiff.Relu(autodiff.MatMul(x, tape.Param(w), forward.MatMulAttrs{})), nil, false)
	if err := tape.Backward(loss); err != nil {
		t.Fatal(err)
	}
	l, err := loss.Item()
	if err != nil {
		t.Fatal(err)
	}
	out := []uint64{math.Float64bits(l)}
	for _, g := range w.Grad.Data().([]float64) {
		out = append(out, math.Float64bits(g))
	}
	return out
}

// TestReleaseWorkers checks that ReleaseWorkers leaves no worker
// goroutine behind after multi-threaded ops, and that ops after it give
// bit-identical results (on new workers).
func TestReleaseWorkers(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	before := parallelStep(t, 2)
	if workerGoroutines() == 0 {
		t.Fatal("no worker goroutine after a 2-thread step: the test does not exercise the pool")
	}
	autodiff.ReleaseWorkers()
	var n int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if n = workerGoroutines(); n == 0 {
			break
		}
	}
	if n != 0 {
		t.Fatalf("%d worker goroutines after ReleaseWorkers", n)
	}
	after := parallelStep(t, 2)
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("result %d changed after ReleaseWorkers: %x, was %x", i, after[i], before[i])
		}
	}
	if one := parallelStep(t, 1); fmt.Sprint(one) != fmt.Sprint(before) {
		t.Fatal("2-thread result differs from the 1-thread one")
	}
	autodiff.ReleaseWorkers()
}

// ReleaseWorkers stops the goroutines of the kernels' threads, e.g. at the
// end of a test that checks for leaked goroutines; later ops start new
// ones.
func ExampleReleaseWorkers() {
	tape := autodiff.NewTape(autodiff.Threads(2))
	x := tape.Constant(tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1, 2, 3, 4})))
	y := autodiff.Sum(autodiff.MatMul(x, x, forward.MatMulAttrs{}), nil, false)
	v, err := y.Item()
	fmt.Println(v, err)

	autodiff.ReleaseWorkers()
	// Output: 54 <nil>
}
