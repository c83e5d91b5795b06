package main

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// TestSmoothLoss checks the label-smoothed loss against a float64 naive
// reference, and that ε = 0 is the sparse cross-entropy.
func TestSmoothLoss(t *testing.T) {
	const n, classes = 5, 10
	r := rand.New(rand.NewSource(1))
	z := make([]float32, n*classes)
	for i := range z {
		z[i] = float32(r.NormFloat64() * 3)
	}
	ys := []int32{0, 9, 3, 3, 7}
	logits := tensor.New(tensor.WithShape(n, classes), tensor.WithBacking(z))
	labels := tensor.New(tensor.WithShape(n), tensor.WithBacking(ys))
	tape := autodiff.NewTape()
	for _, eps := range []float64{0, 0.1, 0.5} {
		// reference: mean over rows of -Σ_j q_j log softmax(z)_j,
		// q = (1-ε)·onehot + ε/classes
		want := 0.0
		for i := range n {
			row := z[i*classes : (i+1)*classes]
			m := math.Inf(-1)
			for _, v := range row {
				m = math.Max(m, float64(v))
			}
			s := 0.0
			for _, v := range row {
				s += math.Exp(float64(v) - m)
			}
			for j, v := range row {
				q := eps / classes
				if int32(j) == ys[i] {
					q += 1 - eps
				}
				want -= q * (float64(v) - m - math.Log(s)) / n
			}
		}
		sl, err := newSmoothLoss(eps, classes)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time through the reused buffer
			tape.Reset()
			loss, err := sl.loss(tape, tape.Constant(logits), labels)
			if err != nil {
				t.Fatal(err)
			}
			got, err := loss.Item()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-want) > 1e-5*math.Abs(want) {
				t.Errorf("ε=%v: loss %v, want %v", eps, got, want)
			}
			if eps == 0 {
				sparse, err := nn.SparseSoftmaxCrossEntropy(tape.Constant(logits), tape.Constant(labels)).Item()
				if err != nil || sparse != got {
					t.Errorf("ε=0: loss %v, sparse cross-entropy %v (%v)", got, sparse, err)
				}
			}
		}
	}
	if _, err := newSmoothLoss(1, classes); err == nil {
		t.Error("label smoothing 1 accepted")
	}
	if _, err := newSmoothLoss(math.NaN(), classes); err == nil {
		t.Error("label smoothing NaN accepted")
	}
	sl, _ := newSmoothLoss(0.1, classes)
	tape.Reset()
	bad := tensor.New(tensor.WithShape(n), tensor.WithBacking([]int32{0, 1, 10, 2, 3}))
	if _, err := sl.loss(tape, tape.Constant(logits), bad); err == nil || !strings.Contains(err.Error(), "label 10 of example 2") {
		t.Errorf("label 10: error %v", err)
	}
}

// TestTrainResumeAugmented: with the default augmentation and label
// smoothing, a run interrupted after epoch 1 and resumed ends with the
// same weights and accuracy as a straight run.
func TestTrainResumeAugmented(t *testing.T) {
	ca := smallConfig(t.TempDir(), 2)
	ca.pad, ca.flip, ca.smooth = 2, true, 0.1
	la := mustRun(t, ca)
	cb := smallConfig(t.TempDir(), 2)
	cb.pad, cb.flip, cb.smooth = 2, true, 0.1
	cb.stopAfter = 1
	mustRun(t, cb)
	cb.stopAfter, cb.resume = 0, true
	if lb := mustRun(t, cb); la != lb || !strings.HasPrefix(la, "test accuracy: 0.") {
		t.Fatalf("straight run %q, resumed run %q", la, lb)
	}
	sameCheckpoints(t, "resumed", ca.checkpoint, cb.checkpoint)
}
