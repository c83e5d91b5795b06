package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/safetensors"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// randomBatch returns n random examples drawn from the seed: images
// [n, 28, 28, 1] with pixels in [0, 1), then labels [n] in [0, 10).
func randomBatch(tb testing.TB, seed int64, n int) (x, y *tensor.Dense) {
	tb.Helper()
	r := rand.New(rand.NewSource(seed))
	xs := make([]float32, n*28*28)
	for i := range xs {
		xs[i] = r.Float32()
	}
	ys := make([]int32, n)
	for i := range ys {
		ys[i] = int32(r.Intn(10))
	}
	x, err := tensorx.New([]int{n, 28, 28, 1}, xs)
	if err != nil {
		tb.Fatal(err)
	}
	y, err = tensorx.New([]int{n}, ys)
	if err != nil {
		tb.Fatal(err)
	}
	return x, y
}

// trainer runs training steps of the example's model (newModel(1, qat))
// on one random batch (randomBatch with seed 1) as the training loop
// does: forward, softmax cross-entropy, Backward, an Adam step (lr 1e-3,
// ε 1e-7), on a tape seeded 1.
type trainer struct {
	model *nn.Sequential
	tape  *autodiff.Tape
	x, y  *tensor.Dense
	opt   *optim.Adam
	tb    testing.TB
}

// newTrainer returns a trainer over a batch of the given size; opts are
// added to the tape's options (e.g. autodiff.Threads(1)).
func newTrainer(tb testing.TB, qat bool, batch int, opts ...autodiff.Option) *trainer {
	tb.Helper()
	tr := &trainer{model: newModel(1, qat), tb: tb}
	if err := tr.model.Err(); err != nil {
		tb.Fatal(err)
	}
	var err error
	if tr.opt, err = optim.NewAdam(tr.model.Params(), optim.AdamSettings{LR: 1e-3, Eps: optim.Float(1e-7)}); err != nil {
		tb.Fatal(err)
	}
	tr.x, tr.y = randomBatch(tb, 1, batch)
	tr.tape = autodiff.NewTape(append([]autodiff.Option{autodiff.Seed(1)}, opts...)...)
	return tr
}

// step runs one training step.
func (tr *trainer) step() {
	tr.tape.Reset()
	logits := tr.model.Forward(tr.tape, tr.tape.Constant(tr.x))
	loss := nn.SparseSoftmaxCrossEntropy(logits, tr.tape.Constant(tr.y))
	if err := tr.tape.Backward(loss); err != nil {
		tr.tb.Fatal(err)
	}
	if err := tr.opt.Step(); err != nil {
		tr.tb.Fatal(err)
	}
}

// mustRun runs the example with c and returns the last line it printed
// (the test accuracy); an error fails the test.
func mustRun(t *testing.T, c config) string {
	t.Helper()
	var out, errs bytes.Buffer
	if err := run(c, &out, &errs); err != nil {
		t.Fatal(err)
	}
	return lastLine(out.String())
}

// sameCheckpoints checks that the checkpoints at paths a and b hold the
// same tensors (parameters, buffers, optimizer state), bit for bit; what
// names the comparison in the messages.
func sameCheckpoints(t *testing.T, what, a, b string) {
	t.Helper()
	ta, _, err := safetensors.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := safetensors.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ta) != len(tb) || len(ta) == 0 {
		t.Fatalf("%s: checkpoints hold %d and %d tensors", what, len(ta), len(tb))
	}
	names := make([]string, 0, len(ta))
	for name := range ta {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		x := ta[name]
		y, ok := tb[name]
		switch {
		case !ok:
			t.Errorf("%s: tensor %s missing from the second checkpoint", what, name)
		case x.Dtype() != y.Dtype() || (x.Dtype() == tensor.Float32 && !bytes.Equal(rawBytes(x.Float32s()), rawBytes(y.Float32s()))) ||
			(x.Dtype() != tensor.Float32 && fmt.Sprint(x.Data()) != fmt.Sprint(y.Data())):
			t.Errorf("%s: tensor %s differs", what, name)
		}
	}
}
