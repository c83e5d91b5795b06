//go:build !race

package nn_test

import (
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// TestTrainingStepAllocations pins the heap allocations of a steady-state
// training step (Reset, forward, loss, Backward, optimizer Step) of a small
// model on one thread: buffers come from the tape's arena, and the small
// per-op slices and boxes from its slabs, so what is left is one object per
// step (Dropout's attrs, boxed on each Forward as its Rate may change) and
// a slab every hundred steps or so. The step runs some twenty ops forward
// and backward, so a regression that allocates per op or per value shows
// up as dozens more. (Excluded from -race builds, whose instrumentation
// allocates.)
func TestTrainingStepAllocations(t *testing.T) {
	const batch = 8
	r := rand.New(rand.NewSource(3))
	model := nn.NewSequential(
		nn.Flatten(),
		nn.NewDense(16, 32, nn.DenseOpts{Rand: r}), nn.ReLU(),
		nn.NewDropout(0.25),
		nn.NewDense(32, 4, nn.DenseOpts{Rand: r}),
	)
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, batch*16)
	for i := range xs {
		xs[i] = r.Float32()
	}
	ys := make([]int32, batch)
	for i := range ys {
		ys[i] = int32(r.Intn(4))
	}
	x, err := tensorx.New([]int{batch, 4, 4, 1}, xs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := tensorx.New([]int{batch}, ys)
	if err != nil {
		t.Fatal(err)
	}
	tape := autodiff.NewTape(autodiff.Threads(1), autodiff.Seed(1))
	ops := 0
	step := func() {
		tape.Reset()
		logits := model.Forward(tape, tape.Constant(x))
		loss := nn.SparseSoftmaxCrossEntropy(logits, tape.Constant(y))
		if err := tape.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		ops = tape.NumOps()
	}
	for range 3 {
		step()
	}
	allocs := testing.AllocsPerRun(200, step)
	t.Logf("%.2f allocations per step (%d ops recorded by the forward pass)", allocs, ops)
	if allocs > 3 {
		t.Errorf("a training step allocates %.2f objects, want at most 3", allocs)
	}
}

// TestNewLayersStepAllocations: a training step of a model with the
// pooling, normalisation and activation layers of issue 18 (MaxPool2D,
// AvgPool2D, LayerNorm, Tanh, Sigmoid) allocates next to nothing on one
// thread either: their ops take their attrs, made once, and their buffers
// from the tape's arena; the broadcast gradients of LayerNorm's Sub, Mul
// and AddV2 reduce over cached axis lists.
func TestNewLayersStepAllocations(t *testing.T) {
	const batch = 4
	r := rand.New(rand.NewSource(4))
	model := nn.NewSequential(
		nn.MaxPool2D(2, 2, nn.PoolOpts{}),
		nn.AvgPool2D(3, 3, nn.PoolOpts{Strides: [2]int{1, 1}, Padding: "SAME"}),
		nn.Flatten(),
		nn.NewLayerNorm(4*2, nn.LayerNormOpts{}), nn.Tanh(),
		nn.NewDense(8, 4, nn.DenseOpts{Rand: r}), nn.Sigmoid(),
	)
	if err := model.Err(); err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float32, batch*4*4*2)
	for i := range xs {
		xs[i] = r.Float32()
	}
	x, err := tensorx.New([]int{batch, 4, 4, 2}, xs)
	if err != nil {
		t.Fatal(err)
	}
	tape := autodiff.NewTape(autodiff.Threads(1), autodiff.Seed(1))
	step := func() {
		tape.Reset()
		loss := autodiff.Mean(model.Forward(tape, tape.Constant(x)), allAxes2, false)
		if err := tape.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		step()
	}
	allocs := testing.AllocsPerRun(200, step)
	t.Logf("%.2f allocations per step", allocs)
	if allocs > 1 {
		t.Errorf("a training step allocates %.2f objects, want at most 1", allocs)
	}
}

// allAxes2 are the axes of a rank-2 value, made once.
var allAxes2 = []int{0, 1}
