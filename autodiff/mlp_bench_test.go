package autodiff_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// mlp is a 2-layer perceptron (784 → 128 → ReLU → 10) trained with plain
// SGD on a fixed batch: the smallest realistic training step.
type mlp struct {
	w1, b1, w2, b2 *autodiff.Param
	x, y           *tensor.Dense
	tape           *autodiff.Tape
}

func newParam(tb testing.TB, r *rand.Rand, name string, scale float64, shape ...int) *autodiff.Param {
	n, _ := tensorx.Numel(shape)
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64() * scale)
	}
	d, _ := tensorx.New(shape, s)
	p, err := autodiff.NewParam(name, d)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func newMLP(tb testing.TB, batch int) *mlp {
	r := rand.New(rand.NewSource(1))
	m := &mlp{
		w1: newParam(tb, r, "w1", 0.05, 784, 128), b1: newParam(tb, r, "b1", 0, 128),
		w2: newParam(tb, r, "w2", 0.1, 128, 10), b2: newParam(tb, r, "b2", 0, 10),
		tape: autodiff.NewTape(),
	}
	xs := make([]float32, batch*784)
	for i := range xs {
		xs[i] = r.Float32()
	}
	ys := make([]int32, batch)
	for i := range ys {
		ys[i] = int32(r.Intn(10))
	}
	m.x, _ = tensorx.New([]int{batch, 784}, xs)
	m.y, _ = tensorx.New([]int{batch}, ys)
	return m
}

// step runs forward, backward and an SGD update; it returns the loss.
func (m *mlp) step(tb testing.TB, lr float32) float64 {
	tp := m.tape
	tp.Reset()
	x := tp.Constant(m.x)
	h := autodiff.Relu(autodiff.BiasAdd(autodiff.MatMul(x, tp.Param(m.w1), forward.MatMulAttrs{}), tp.Param(m.b1), "NHWC"))
	logits := autodiff.BiasAdd(autodiff.MatMul(h, tp.Param(m.w2), forward.MatMulAttrs{}), tp.Param(m.b2), "NHWC")
	loss, _ := autodiff.SparseSoftmaxCrossEntropy(logits, tp.Constant(m.y))
	mean := autodiff.Mean(loss, []int{0}, false)
	if err := tp.Backward(mean); err != nil {
		tb.Fatal(err)
	}
	for _, p := range []*autodiff.Param{m.w1, m.b1, m.w2, m.b2} {
		w, g := p.Data.Float32s(), p.Grad.Float32s()
		for i := range w {
			w[i] -= lr * g[i]
		}
		p.MarkModified()
		p.ZeroGrad()
	}
	l, err := mean.Item()
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// TestMLPTrains checks that the step used by the benchmark learns (the loss
// on a fixed batch falls), so the benchmark measures real work.
func TestMLPTrains(t *testing.T) {
	m := newMLP(t, 32)
	first := m.step(t, 0.1)
	var last float64
	for i := 0; i < 30; i++ {
		last = m.step(t, 0.1)
	}
	if !(last < first*0.5) {
		t.Fatalf("loss %v -> %v: the MLP does not learn", first, last)
	}
}

// BenchmarkMLPStep is one training step of a 2-layer MLP (batch 64,
// 784→128→10, float32): forward, backward, SGD update, on a reused tape.
func BenchmarkMLPStep(b *testing.B) {
	m := newMLP(b, 64)
	m.step(b, 0.01)
	m.step(b, 0.01)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.step(b, 0.01)
	}
}
