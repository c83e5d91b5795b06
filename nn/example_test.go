package nn_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// A small convolutional classifier: its parameters and buffers carry
// unique names, prefixed by the layer's index or given name.
func ExampleNewSequential() {
	r := rand.New(rand.NewSource(1))
	model := nn.NewSequential(
		nn.Named("conv", nn.NewConv2D(1, 4, 3, nn.ConvOpts{Padding: "SAME", Rand: r})),
		nn.Named("bn", nn.NewBatchNorm(4, nn.BatchNormOpts{})),
		nn.ReLU(),
		nn.GlobalAvgPool("NHWC"),
		nn.NewDense(4, 10, nn.DenseOpts{Rand: r}),
	)
	if err := model.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range model.Params() {
		fmt.Println("param ", p.Name, p.Data.Shape())
	}
	for _, b := range model.Buffers() {
		fmt.Println("buffer", b.Name, b.Data.Shape())
	}
	tape := autodiff.NewTape(autodiff.Training(false)) // evaluation mode
	x := tape.Full(tensor.Float32, []int{2, 8, 8, 1}, 0.5)
	y := model.Forward(tape, x)
	fmt.Println("output", y.Shape(), tape.Err())
	// Output:
	// param  conv.weight (3, 3, 1, 4)
	// param  conv.bias (4)
	// param  bn.scale (4)
	// param  bn.offset (4)
	// param  4.weight (4, 10)
	// param  4.bias (10)
	// buffer bn.moving_mean (4)
	// buffer bn.moving_variance (4)
	// output (2, 10) <nil>
}

// A training loop: forward on a reused tape, loss, backward, optimizer
// step.
func Example_training() {
	r := rand.New(rand.NewSource(1))
	model := nn.NewSequential(
		nn.NewDense(2, 16, nn.DenseOpts{Rand: r, KernelInit: nn.HeNormal}),
		nn.ReLU(),
		nn.NewDropout(0.1),
		nn.NewDense(16, 2, nn.DenseOpts{Rand: r}),
	)
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 0.05})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Two classes: is x0 + x1 positive?
	xs, ys := make([]float32, 64*2), make([]int32, 64)
	for i := range ys {
		a, b := r.Float32()*2-1, r.Float32()*2-1
		xs[2*i], xs[2*i+1] = a, b
		if a+b > 0 {
			ys[i] = 1
		}
	}
	x := tensor.New(tensor.WithShape(64, 2), tensor.WithBacking(xs))
	y := tensor.New(tensor.WithShape(64), tensor.WithBacking(ys))

	tape := autodiff.NewTape(autodiff.Training(true), autodiff.Seed(1))
	var first, last float64
	for step := 0; step < 100; step++ {
		tape.Reset()
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(tape, tape.Constant(x)), tape.Constant(y))
		if err := tape.Backward(loss); err != nil {
			fmt.Println(err)
			return
		}
		v, _ := loss.Item()
		if step == 0 {
			first = v
		}
		last = v
		if err := opt.Step(); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("loss fell below a quarter:", last < first/4)
	// Output:
	// loss fell below a quarter: true
}

// A bad configuration does not panic: the layer keeps the error, the
// Sequential reports it, and Forward records it on the tape.
func ExampleNewConv2D_error() {
	r := rand.New(rand.NewSource(1))
	model := nn.NewSequential(
		nn.NewConv2D(3, 8, 3, nn.ConvOpts{Padding: "FULL", Rand: r}),
		nn.ReLU(),
	)
	fmt.Println(model.Err())
	tape := autodiff.NewTape()
	out := model.Forward(tape, tape.Full(tensor.Float32, []int{1, 4, 4, 3}, 1))
	_, err := out.Float32s()
	fmt.Println(errors.Is(err, autodiff.ErrInvalidArgument))
	// Output:
	// nn.Sequential: layer 0 (Conv2D): nn.NewConv2D: padding must be VALID, SAME or EXPLICIT, got "FULL"
	// true
}

// Checkpoints hold the parameters, buffers, optimizer state and the
// trainer's own metadata.
func ExampleSaveCheckpoint() {
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.safetensors")

	build := func(seed int64) *nn.Sequential {
		r := rand.New(rand.NewSource(seed))
		return nn.NewSequential(nn.NewDense(3, 4, nn.DenseOpts{Rand: r}), nn.NewBatchNorm(4, nn.BatchNormOpts{Momentum: optim.Float(0.9)}))
	}
	model := build(1)
	opt, _ := optim.NewSGD(model.Params(), optim.SGDSettings{LR: 0.1, Momentum: 0.9})
	if err := nn.SaveCheckpoint(path, model, opt, map[string]string{"epoch": "3", "step": "1200"}); err != nil {
		fmt.Println(err)
		return
	}

	restored := build(2)
	opt2, _ := optim.NewSGD(restored.Params(), optim.SGDSettings{LR: 0.1, Momentum: 0.9})
	meta, err := nn.LoadCheckpoint(path, restored, opt2)
	fmt.Println(meta, err)
	fmt.Println(restored.Params()[0].Data.Float32s()[0] == model.Params()[0].Data.Float32s()[0])

	// A model of another shape is refused, with the names.
	_, err = nn.LoadCheckpoint(path, nn.NewSequential(nn.NewDense(3, 5, nn.DenseOpts{Rand: rand.New(rand.NewSource(1))})), nil)
	fmt.Println(strings.Contains(err.Error(), `param "0.weight" is float32 (3, 4) in the checkpoint, float32 (3, 5) in the model`))
	// Output:
	// map[epoch:3 step:1200] <nil>
	// true
	// true
}

// Quantisation-aware training: the convolution's kernel is fake-quantised
// per output channel, the activations per tensor; the ranges are buffers,
// saved in checkpoints.
func ExampleNewFakeQuantWeights() {
	r := rand.New(rand.NewSource(1))
	model := nn.NewSequential(
		nn.Named("conv", nn.NewFakeQuantWeights(nn.NewConv2D(1, 4, 3, nn.ConvOpts{Rand: r}), nn.WeightQuantOpts{})),
		nn.ReLU6(),
		nn.Named("act", nn.NewFakeQuantActivation(nn.ActQuantOpts{})),
	)
	tape := autodiff.NewTape(autodiff.Training(true))
	y := model.Forward(tape, tape.Full(tensor.Float32, []int{1, 5, 5, 1}, 1))
	fmt.Println(y.Shape(), tape.Err())
	for _, b := range model.Buffers() {
		fmt.Println(b.Name, b.Data.Shape())
	}
	// Output:
	// (1, 3, 3, 4) <nil>
	// conv.weight_min (4)
	// conv.weight_max (4)
	// act.min ()
	// act.max ()
}

// residual is a user-written module: y = x + f(x). Its parameters are its
// inner module's.
type residual struct{ f nn.Module }

func (r residual) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.Add(x, r.f.Forward(t, x))
}
func (r residual) Params() []*autodiff.Param { return r.f.Params() }
func (r residual) Buffers() []*nn.Buffer     { return r.f.Buffers() }

// Any type with Forward, Params and Buffers is a Module and can be part of
// a Sequential.
func ExampleModule() {
	r := rand.New(rand.NewSource(1))
	block := residual{nn.NewSequential(nn.NewDense(4, 4, nn.DenseOpts{Rand: r}), nn.ReLU())}
	model := nn.NewSequential(nn.Named("res", block), nn.NewDense(4, 2, nn.DenseOpts{Rand: r}))
	for _, p := range model.Params() {
		fmt.Println(p.Name)
	}
	tape := autodiff.NewTape()
	y := model.Forward(tape, tape.Full(tensor.Float32, []int{3, 4}, 1))
	fmt.Println(y.Shape())
	// Output:
	// res.0.weight
	// res.0.bias
	// 1.weight
	// 1.bias
	// (3, 2)
}

// The error of a layer points at the user's call of Forward.
func TestLayerErrorLocation(t *testing.T) {
	d := nn.NewDense(0, 1, nn.DenseOpts{})
	tape := autodiff.NewTape()
	d.Forward(tape, tape.Full(tensor.Float32, []int{1, 1}, 1))
	var oe *autodiff.OpError
	if !errors.As(tape.Err(), &oe) || !strings.HasPrefix(oe.Loc, "nn/example_test.go:") {
		t.Fatalf("error %v (%#v) does not locate the caller", tape.Err(), oe)
	}
}
