package optim_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/optim"
)

// Minimize L2Loss(w) = Σw²/2 (gradient w) with SGD and momentum.
func ExampleNewSGD() {
	w, _ := autodiff.NewParam("w", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, -2})))
	opt, err := optim.NewSGD([]*autodiff.Param{w}, optim.SGDSettings{LR: 0.1, Momentum: 0.5})
	if err != nil {
		panic(err)
	}
	tape := autodiff.NewTape()
	for range 3 {
		tape.Reset()
		loss := autodiff.L2Loss(tape.Param(w))
		if err := tape.Backward(loss); err != nil {
			panic(err)
		}
		if err := opt.Step(); err != nil { // updates w, then zeroes its gradient
			panic(err)
		}
		fmt.Printf("%.4f\n", w.Data.Float64s())
	}
	// Output:
	// [0.9000 -1.8000]
	// [0.7600 -1.5200]
	// [0.6140 -1.2280]
}

func ExampleWarmup() {
	s := optim.Warmup{Steps: 2, Then: optim.Cosine{Base: 0.1, Min: 0.01, Steps: 4}}
	for t := range 7 {
		fmt.Printf("%.4f ", s.LR(t))
	}
	fmt.Println()
	// Output: 0.0000 0.0500 0.1000 0.0868 0.0550 0.0232 0.0100
}

func ExampleClipGradNorm() {
	w, _ := autodiff.NewParam("w", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0, 0})))
	w.Grad = tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{3, 4}))
	norm, _ := optim.ClipGradNorm([]*autodiff.Param{w}, 1)
	fmt.Printf("norm %.1f, clipped %.4f\n", norm, w.Grad.Float64s())
	// Output: norm 5.0, clipped [0.6000 0.8000]
}

// Save an optimizer's state and restore it into a new optimizer.
func ExampleAdam_State() {
	w, _ := autodiff.NewParam("w", tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{1})))
	opt, _ := optim.NewAdam([]*autodiff.Param{w}, optim.AdamSettings{LR: 0.01})
	w.Grad = tensor.New(tensor.WithShape(1), tensor.WithBacking([]float32{0.5}))
	_ = opt.Step()
	st, _ := opt.State()
	fmt.Println(st.Scalars["adam.step/w"], st.Tensors["adam.exp_avg/w"].Float32s())

	again, _ := optim.NewAdam([]*autodiff.Param{w}, optim.AdamSettings{LR: 0.01})
	if err := again.LoadState(st); err != nil {
		panic(err)
	}
	fmt.Println(again.Steps())
	// Output:
	// 1 [0.05]
	// 1
}
