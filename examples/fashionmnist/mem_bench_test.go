package main

import (
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/nn/data"
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
		if _, err := evaluate(model, tape, l, false); err != nil {
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
	tr := newTrainer(b, false, batch)
	for range 3 {
		tr.step()
	}
	p := testutil.StartMemProbe()
	b.ResetTimer()
	for b.Loop() {
		tr.step()
	}
	b.StopTimer()
	p.Report(b)
	reportTape(b, tr.tape)
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "examples/s")
}

func BenchmarkTrainStepMemory64(b *testing.B)  { benchStepMemory(b, 64) }
func BenchmarkTrainStepMemory256(b *testing.B) { benchStepMemory(b, 256) }
