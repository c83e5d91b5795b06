package main

import (
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// benchStep times one training step of the example's model (batch 64,
// forward, backward, Adam) on a random batch, as the training loop runs
// it. Profile with -cpuprofile to see where an epoch goes.
func benchStep(b *testing.B, qat bool) {
	const batch = 64
	model := newModel(1, qat)
	if err := model.Err(); err != nil {
		b.Fatal(err)
	}
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
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "examples/s")
}

func BenchmarkTrainStep(b *testing.B)    { benchStep(b, false) }
func BenchmarkTrainStepQAT(b *testing.B) { benchStep(b, true) }
