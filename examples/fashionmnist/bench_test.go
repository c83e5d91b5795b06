package main

import "testing"

// benchStep times one training step of the example's model (batch 64,
// forward, backward, Adam) on a random batch, as the training loop runs
// it. Profile with -cpuprofile to see where an epoch goes.
func benchStep(b *testing.B, qat bool) {
	const batch = 64
	tr := newTrainer(b, qat, batch)
	for range 3 {
		tr.step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		tr.step()
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "examples/s")
}

func BenchmarkTrainStep(b *testing.B)    { benchStep(b, false) }
func BenchmarkTrainStepQAT(b *testing.B) { benchStep(b, true) }
