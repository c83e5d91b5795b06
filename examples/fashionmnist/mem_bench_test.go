package main

import (
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
	"github.com/tapegrad/tapegrad/optim"
)

// Memory benchmarks: each reports, besides time, peak-live-MB and
// peak-RSS-MB (testutil.MemProbe: the peak live heap, everything the
// process keeps reachable, the data set included; the peak resident set,
// meaningful when the benchmark runs alone in its process:
// go test -run '^$' -bench '^BenchmarkEvalMemory$' -benchtime 1x).

// BenchmarkEvalMemory evaluates the example's model on the test set (the
// full one if installed, else the bundled subset) in batches of 500 on a
// no-grad tape, as the example does after every epoch.
func BenchmarkEvalMemory(b *testing.B) {
	test, err := data.LoadMNISTDir(defaultDataDir(), "test")
	if err != nil {
		b.Fatal(err)
	}
	l, err := data.NewLoader(test.Images, test.Labels, data.LoaderOptions{BatchSize: 500})
	if err != nil {
		b.Fatal(err)
	}
	model := newModel(1, false)
	tape := autodiff.NewTape(autodiff.NoGrad(), autodiff.Training(false))
	p := testutil.StartMemProbe()
	b.ResetTimer()
	for b.Loop() {
		if _, err := evaluate(model, tape, l); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	p.Report(b)
	reportTape(b, tape)
	b.ReportMetric(float64(test.Len()*b.N)/b.Elapsed().Seconds(), "examples/s")
}

// reportTape reports the tape's buffer memory: the most in use at once
// during the last step (tape-peak-MB) and all it holds (tape-pooled-MB).
func reportTape(b *testing.B, t *autodiff.Tape) {
	m := t.MemStats()
	b.ReportMetric(float64(m.PeakInUse)/1e6, "tape-peak-MB")
	b.ReportMetric(float64(m.Pooled)/1e6, "tape-pooled-MB")
}

// benchStepMemory runs training steps of the example's model at the given
// batch size on a random batch.
func benchStepMemory(b *testing.B, batch int) {
	model := newModel(1, false)
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 1e-3, Eps: optim.Float(1e-7)})
	if err != nil {
		b.Fatal(err)
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
		b.Fatal(err)
	}
	y, err := tensorx.New([]int{batch}, ys)
	if err != nil {
		b.Fatal(err)
	}
	tape := autodiff.NewTape(autodiff.Seed(1))
	step := func() {
		tape.Reset()
		logits := model.Forward(tape, tape.Constant(x))
		loss := nn.SparseSoftmaxCrossEntropy(logits, tape.Constant(y))
		if err := tape.Backward(loss); err != nil {
			b.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			b.Fatal(err)
		}
	}
	for range 3 {
		step()
	}
	p := testutil.StartMemProbe()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	b.StopTimer()
	p.Report(b)
	reportTape(b, tape)
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "examples/s")
}

func BenchmarkTrainStepMemory64(b *testing.B)  { benchStepMemory(b, 64) }
func BenchmarkTrainStepMemory256(b *testing.B) { benchStepMemory(b, 256) }
