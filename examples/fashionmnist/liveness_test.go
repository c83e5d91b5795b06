package main

import (
	"math"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// TestLivenessSameResults: the example model's training step computes the
// same loss and gradients, bit for bit, with the Sequential releasing its
// intermediates during Backward as with the same layers applied one by one
// (nothing released), and its evaluation on a NoGrad tape the same
// logits; with and without QAT. Its tape then holds less at its peak.
func TestLivenessSameResults(t *testing.T) {
	const batch = 8
	x, y := randomBatch(t, 4, batch)
	type result struct {
		loss   float32
		grads  [][]float32
		logits []float32
		peak   int64
	}
	run := func(qat, seq bool) result {
		model := newModel(1, qat)
		forward := func(tp *autodiff.Tape, v autodiff.Value) autodiff.Value {
			if seq {
				return model.Forward(tp, v)
			}
			for _, l := range model.Layers() {
				v = l.Forward(tp, v)
			}
			return v
		}
		var res result
		tp := autodiff.NewTape(autodiff.Seed(7))
		loss := nn.SparseSoftmaxCrossEntropy(forward(tp, tp.Constant(x)), tp.Constant(y))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		l, err := loss.Item()
		if err != nil {
			t.Fatal(err)
		}
		res.loss, res.peak = float32(l), tp.MemStats().PeakInUse
		for _, p := range model.Params() {
			res.grads = append(res.grads, append([]float32(nil), p.Grad.Float32s()...))
		}
		ev := autodiff.NewTape(autodiff.NoGrad(), autodiff.Training(false))
		if res.logits, err = forward(ev, ev.Constant(x)).Float32s(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	same := func(what string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s[%d]: %v released, %v kept", what, i, a[i], b[i])
			}
		}
	}
	for _, qat := range []bool{false, true} {
		rel, keep := run(qat, true), run(qat, false)
		same("loss", []float32{rel.loss}, []float32{keep.loss})
		for i := range rel.grads {
			same("gradient", rel.grads[i], keep.grads[i])
		}
		same("logits", rel.logits, keep.logits)
		if rel.peak >= keep.peak {
			t.Errorf("qat %v: peak %d bytes with release, %d without", qat, rel.peak, keep.peak)
		}
		t.Logf("qat %v: training step peak %d bytes with release, %d without", qat, rel.peak, keep.peak)
	}
}
