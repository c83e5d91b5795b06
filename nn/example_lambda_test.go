package nn_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// A layer without state made of tape ops: Swish, x·sigmoid(x), between two
// Dense layers. Its gradient comes from the ops it applies.
func ExampleNewLambda() {
	r := rand.New(rand.NewSource(1))
	swish := nn.NewLambda("Swish", func(x autodiff.Value) autodiff.Value {
		return autodiff.Mul(x, autodiff.Sigmoid(x))
	})
	model := nn.NewSequential(nn.NewDense(3, 8, nn.DenseOpts{Rand: r}), swish, nn.NewDense(8, 1, nn.DenseOpts{Rand: r}))
	fmt.Println(model)

	tape := autodiff.NewTape()
	y := model.Forward(tape, tape.Full(tensor.Float32, []int{4, 3}, 0.5))
	fmt.Println(y.Shape(), tape.Backward(autodiff.Sum(y, nil, false)))
	// Output:
	// Sequential(
	//   0: *nn.Dense 0.weight(3, 8) 0.bias(8)
	//   1: Swish
	//   2: *nn.Dense 2.weight(8, 1) 2.bias(1)
	// )
	// (4, 1) <nil>
}

// Resume training from a checkpoint: the model's parameters and buffers,
// the optimizer's state (its step count drives the schedule) and your own
// metadata come back, so the next step is the one the interrupted run
// would have taken.
func ExampleLoadCheckpoint() {
	dir, err := os.MkdirTemp("", "resume")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ckpt.safetensors")

	newRun := func(seed int64) (*nn.Sequential, optim.Optimizer) {
		r := rand.New(rand.NewSource(seed))
		model := nn.NewSequential(nn.NewDense(2, 4, nn.DenseOpts{Rand: r}), nn.ReLU(), nn.NewDense(4, 1, nn.DenseOpts{Rand: r}))
		opt, _ := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 0.01, Schedule: optim.Cosine{Base: 0.01, Steps: 10}})
		return model, opt
	}
	x := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float32{1, 2, -1, 0.5, 0, -2}))
	tape := autodiff.NewTape()
	step := func(model nn.Module, opt optim.Optimizer) float64 {
		tape.Reset()
		loss := autodiff.Mean(autodiff.Square(model.Forward(tape, tape.Constant(x))), nil, false)
		if err := tape.Backward(loss); err != nil {
			panic(err)
		}
		if err := opt.Step(); err != nil {
			panic(err)
		}
		v, _ := loss.Item()
		return v
	}

	// The interrupted run: 3 steps, a checkpoint, a 4th step.
	model, opt := newRun(1)
	for range 3 {
		step(model, opt)
	}
	if err := nn.SaveCheckpoint(path, model, opt, map[string]string{"step": "3"}); err != nil {
		fmt.Println(err)
		return
	}
	want := step(model, opt)

	// The resumed run: fresh objects (initialised differently), then the
	// checkpoint.
	model2, opt2 := newRun(2)
	meta, err := nn.LoadCheckpoint(path, model2, opt2)
	fmt.Println(meta["step"], opt2.Steps(), err)
	fmt.Println(step(model2, opt2) == want)
	// Output:
	// 3 3 <nil>
	// true
}
