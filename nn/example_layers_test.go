package nn_test

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
)

// scale is a user's layer with one parameter: y = x·Gain, Gain [features].
type scale struct{ gain *autodiff.Param }

func newScale(features int) (*scale, error) {
	g, err := nn.NewParam("gain", []int{features}, tensor.Float32, nn.Ones, nil)
	if err != nil {
		return nil, err
	}
	return &scale{gain: g}, nil
}

func (s *scale) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.Mul(x, t.Param(s.gain))
}
func (s *scale) Params() []*autodiff.Param { return []*autodiff.Param{s.gain} }
func (s *scale) Buffers() []*nn.Buffer     { return nil }

// A user's layer creates its parameters with NewParam; in a Sequential
// they are named, trained and checkpointed like the library's.
func ExampleNewParam() {
	s, err := newScale(3)
	if err != nil {
		fmt.Println(err)
		return
	}
	model := nn.NewSequential(nn.Named("scale", s), nn.Tanh())
	tape := autodiff.NewTape()
	loss := autodiff.Sum(model.Forward(tape, tape.Full(tensor.Float32, []int{2, 3}, 0.5)), nil, false)
	if err := tape.Backward(loss); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.gain.Name, s.gain.Data.Shape(), s.gain.Grad.Shape())
	// Output: scale.gain (3) (3)
}

// A small CNN with the pooling and normalisation layers.
func ExampleMaxPool2D() {
	r := rand.New(rand.NewSource(1))
	model := nn.NewSequential(
		nn.NewConv2D(1, 4, 3, nn.ConvOpts{Padding: "SAME", Rand: r}),
		nn.ReLU(),
		nn.MaxPool2D(2, 2, nn.PoolOpts{}),
		nn.AvgPool2D(3, 3, nn.PoolOpts{Strides: [2]int{1, 1}, Padding: "SAME"}),
		nn.Flatten(),
		nn.NewLayerNorm(7*7*4, nn.LayerNormOpts{}),
		nn.NewDense(7*7*4, 10, nn.DenseOpts{Rand: r}),
	)
	fmt.Println(model.Err())
	tape := autodiff.NewTape()
	y := model.Forward(tape, tape.Full(tensor.Float32, []int{2, 14, 14, 1}, 1))
	fmt.Println(y.Shape(), tape.Err())
	// Output:
	// <nil>
	// (2, 10) <nil>
}

// The data loader's position goes into the checkpoint with the model, and
// comes back with it: the resumed run sees the batches the first run
// would have seen next.
func ExampleSaveCheckpoint_loader() {
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.safetensors")

	x := tensor.New(tensor.WithShape(6, 1), tensor.WithBacking([]float32{0, 1, 2, 3, 4, 5}))
	opts := data.LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 7}
	loader, _ := data.NewLoader(x, nil, opts)
	model := nn.NewDense(1, 1, nn.DenseOpts{Rand: rand.New(rand.NewSource(1))})
	loader.Next() // one batch done
	if err := nn.SaveCheckpoint(path, model, nil, nil, loader); err != nil {
		fmt.Println(err)
		return
	}
	loader.Next()
	fmt.Println("next batch:", loader.Batch().Indices)

	resumed, _ := data.NewLoader(x, nil, opts)
	if _, err := nn.LoadCheckpoint(path, model, nil, resumed); err != nil {
		fmt.Println(err)
		return
	}
	resumed.Next()
	fmt.Println("after resuming:", resumed.Batch().Indices)
	// Output:
	// next batch: [3 0]
	// after resuming: [3 0]
}
