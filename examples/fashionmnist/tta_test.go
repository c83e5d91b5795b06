package main

import (
	"bytes"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
)

// TestMirrorNHWC: every pixel and channel lands at the mirrored column.
func TestMirrorNHWC(t *testing.T) {
	const n, h, w, c = 2, 3, 5, 2
	src := make([]float32, n*h*w*c)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, len(src))
	mirrorNHWC(dst, src, n, h, w, c)
	for b := range n {
		for y := range h {
			for x := range w {
				for k := range c {
					got := dst[((b*h+y)*w+x)*c+k]
					want := src[((b*h+y)*w+(w-1-x))*c+k]
					if got != want {
						t.Fatalf("[%d,%d,%d,%d] = %v, want %v", b, y, x, k, got, want)
					}
				}
			}
		}
	}
}

// TestEvaluateMirror: with mirror, evaluate counts the argmax of the sum
// of each test image's logits and its mirror's, computed here apart with
// two plain forward passes of the whole set.
func TestEvaluateMirror(t *testing.T) {
	test, err := data.LoadMNISTDir("data", "test")
	if err != nil {
		t.Fatal(err)
	}
	// A dense layer of random weights: not mirror-symmetric, so images
	// change class with their mirror.
	model := nn.NewSequential(nn.Flatten(), nn.NewDense(28*28, 10, nn.DenseOpts{Rand: rand.New(rand.NewSource(1))}))
	x, ys, err := firstRows(test.Images, test.Labels, 200)
	if err != nil {
		t.Fatal(err)
	}
	l, err := data.NewLoader(x, ys, data.LoaderOptions{BatchSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	tape := autodiff.NewTape(autodiff.NoGrad(), autodiff.Training(false))
	got, err := evaluate(model, tape, l, true)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := evaluate(model, tape, l, false)
	if err != nil {
		t.Fatal(err)
	}

	// The reference: the whole test set at once, mirrored with index
	// arithmetic of its own.
	y := ys.Int32s()
	sh := x.Shape()
	n, h, w := sh[0], sh[1], sh[2]
	xs := x.Float32s()
	mx := make([]float32, len(xs))
	for i := range n * h {
		for j := range w {
			mx[i*w+j] = xs[i*w+w-1-j]
		}
	}
	logitsOf := func(v []float32) []float32 {
		tape.Reset()
		d, err := model.Forward(tape, tape.Constant(tensor.New(tensor.WithShape(n, h, w, 1), tensor.WithBacking(v)))).Data()
		if err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), d.Float32s()...)
	}
	a, b := logitsOf(xs), logitsOf(mx)
	correct, differ := 0, 0
	for i := range n {
		best, bestPlain := 0, 0
		for k := range 10 {
			if a[i*10+k]+b[i*10+k] > a[i*10+best]+b[i*10+best] {
				best = k
			}
			if a[i*10+k] > a[i*10+bestPlain] {
				bestPlain = k
			}
		}
		if int32(best) == y[i] {
			correct++
		}
		if best != bestPlain {
			differ++
		}
	}
	if want := float64(correct) / float64(n); got != want {
		t.Errorf("evaluate with mirror: accuracy %v, want %v", got, want)
	}
	if differ == 0 {
		t.Errorf("no test image changed class with its mirror: the test cannot tell mirror from plain (plain accuracy %v)", plain)
	}
}

// TestTTAFlag: -tta reaches the evaluation of every epoch.
func TestTTAFlag(t *testing.T) {
	defer func(f func(nn.Module, *autodiff.Tape, *data.Loader, bool) (float64, error)) { evaluateFn = f }(evaluateFn)
	for _, tta := range []bool{false, true} {
		var seen []bool
		evaluateFn = func(m nn.Module, tp *autodiff.Tape, l *data.Loader, mirror bool) (float64, error) {
			seen = append(seen, mirror)
			return evaluate(m, tp, l, mirror)
		}
		c := smallConfig(t.TempDir(), 2)
		c.tta = tta
		var out, errs bytes.Buffer
		if err := run(c, &out, &errs); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 2 || seen[0] != tta || seen[1] != tta {
			t.Errorf("-tta=%v: the evaluations got mirror %v", tta, seen)
		}
	}
}
