package nn

import (
	"errors"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// randF32 returns a float32 tensor of the given shape, values in [-1, 1).
func randF32(t *testing.T, seed int64, shape ...int) *tensor.Dense {
	t.Helper()
	r := rnd(seed)
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(2*r.Float64() - 1)
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// livenessModel is a small CNN (layers returned separately, so the test
// can also apply them without a Sequential) with a Lambda that stashes its
// intermediate value, as a misbehaving layer could.
func livenessModel(stash *autodiff.Value) []Module {
	r := rnd(5)
	m := 0.9
	return []Module{
		NewConv2D(1, 4, 3, ConvOpts{Padding: "SAME", NoBias: true, Rand: r}),
		NewBatchNorm(4, BatchNormOpts{Momentum: &m}),
		ReLU(),
		NewLambda("stash", func(x autodiff.Value) autodiff.Value {
			*stash = autodiff.Tanh(x)
			return autodiff.Mul(*stash, x)
		}),
		NewDropout(0.25),
		Flatten(),
		NewDense(6*6*4, 3, DenseOpts{Rand: r}),
	}
}

func bitsEqual(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d and %d elements", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: %v, want %v", what, i, a[i], b[i])
		}
	}
}

// TestSequentialReleasesNoGrad: a Sequential evaluated on a NoGrad tape
// releases its layers' intermediates (a value a layer kept reports
// ErrReleased: never its reused buffer's data), keeps its input and output
// valid, and computes what the same layers give applied one by one.
func TestSequentialReleasesNoGrad(t *testing.T) {
	x := randF32(t, 1, 2, 6, 6, 1)
	var stash autodiff.Value
	layers := livenessModel(&stash)
	seq := NewSequential(layers...)
	if err := seq.Err(); err != nil {
		t.Fatal(err)
	}
	want := func() []float32 {
		tp := autodiff.NewTape(autodiff.NoGrad(), autodiff.Training(false))
		y := tp.Constant(x)
		for _, l := range layers {
			y = l.Forward(tp, y)
		}
		v, err := y.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if err := stash.Err(); err != nil {
			t.Fatalf("without a Sequential, the stashed value: %v", err)
		}
		return v
	}()
	tp := autodiff.NewTape(autodiff.NoGrad(), autodiff.Training(false))
	in := tp.Constant(x)
	y := seq.Forward(tp, in)
	got, err := y.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	bitsEqual(t, "output", got, want)
	if err := in.Err(); err != nil {
		t.Errorf("the input: %v", err)
	}
	if _, err := stash.Data(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("a layer's stashed intermediate after Forward: Data error %v, want an invalid-value error", err)
	}
	if err := stash.Err(); !errors.Is(err, autodiff.ErrReleased) {
		t.Errorf("stashed intermediate: %v, want ErrReleased", err)
	}
	// The tape holds the input, the output and nothing else.
	if got, want := tp.MemStats().InUse, int64(tensorx.Len(x)*4+2*3*4); got != want {
		t.Errorf("%d bytes in use after Forward, want %d (input and output)", got, want)
	}
}

// TestSequentialReleasesInBackward: in training, a Sequential's
// intermediates live until Backward, which releases them and computes the
// same gradients, bit for bit, as the same layers applied one by one
// (nothing released), on one thread and on two.
func TestSequentialReleasesInBackward(t *testing.T) {
	x := randF32(t, 2, 4, 6, 6, 1)
	labels, err := tensorx.New([]int{4}, []int32{0, 2, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		grads [][]float32
		peak  int64
	}
	step := func(useSeq bool, threads int) result {
		var stash autodiff.Value
		layers := livenessModel(&stash)
		seq := NewSequential(layers...)
		tp := autodiff.NewTape(autodiff.Seed(3), autodiff.Threads(threads))
		var logits autodiff.Value
		if useSeq {
			logits = seq.Forward(tp, tp.Constant(x))
		} else {
			logits = tp.Constant(x)
			for _, l := range layers {
				logits = l.Forward(tp, logits)
			}
		}
		loss := SparseSoftmaxCrossEntropy(logits, tp.Constant(labels))
		if err := stash.Err(); err != nil {
			t.Fatalf("sequential %v: a saved intermediate before Backward: %v", useSeq, err)
		}
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if _, err := loss.Item(); err != nil {
			t.Fatalf("the loss after Backward: %v", err)
		}
		if _, err := logits.Data(); err != nil {
			t.Fatalf("the Sequential's output after Backward: %v", err)
		}
		_, err := stash.Data()
		if useSeq && !errors.Is(err, autodiff.ErrInvalidValue) {
			t.Fatalf("a layer's stashed intermediate after Backward: Data error %v, want an invalid-value error", err)
		}
		if !useSeq && err != nil {
			t.Fatalf("without a Sequential, the stashed value after Backward: %v", err)
		}
		var r result
		for _, p := range seq.Params() {
			r.grads = append(r.grads, append([]float32(nil), p.Grad.Float32s()...))
		}
		r.peak = tp.MemStats().PeakInUse
		return r
	}
	ref := step(false, 1)
	for _, threads := range []int{1, 2} {
		got := step(true, threads)
		for i := range ref.grads {
			bitsEqual(t, "gradient", got.grads[i], ref.grads[i])
		}
		if got.peak >= ref.peak {
			t.Errorf("%d threads: peak in use %d bytes with release, %d without", threads, got.peak, ref.peak)
		}
	}
}

// TestSequentialRetainGraph: a Backward with RetainGraph releases none of
// the Sequential's saved values, so a second Backward of the recording
// works (and adds the same gradients again); a second Backward after one
// without RetainGraph is ErrBackwardTwice, not a released value's error.
func TestSequentialRetainGraph(t *testing.T) {
	x := randF32(t, 2, 4, 6, 6, 1)
	labels, err := tensorx.New([]int{4}, []int32{0, 2, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	var stash autodiff.Value
	seq := NewSequential(livenessModel(&stash)...)
	tp := autodiff.NewTape(autodiff.Seed(3))
	loss := SparseSoftmaxCrossEntropy(seq.Forward(tp, tp.Constant(x)), tp.Constant(labels))
	if err := tp.BackwardWith(loss, autodiff.BackwardOpts{RetainGraph: true}); err != nil {
		t.Fatal(err)
	}
	if err := stash.Err(); err != nil {
		t.Fatalf("a saved intermediate after Backward with RetainGraph: %v", err)
	}
	var once [][]float32
	for _, p := range seq.Params() {
		once = append(once, append([]float32(nil), p.Grad.Float32s()...))
	}
	if err := tp.Backward(loss); err != nil {
		t.Fatalf("second Backward after RetainGraph: %v", err)
	}
	for i, p := range seq.Params() {
		for j, g := range p.Grad.Float32s() {
			if want := once[i][j] + once[i][j]; g != want {
				t.Fatalf("%s[%d] after two passes: %v, want %v", p.Name, j, g, want)
			}
		}
	}
	if err := stash.Err(); !errors.Is(err, autodiff.ErrReleased) {
		t.Errorf("a saved intermediate after the last Backward: %v, want ErrReleased", err)
	}
	err = tp.Backward(loss)
	if !errors.Is(err, autodiff.ErrBackwardTwice) {
		t.Errorf("third Backward: %v, want ErrBackwardTwice", err)
	}
}
