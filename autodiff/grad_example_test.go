package autodiff_test

import (
	"errors"
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// Gradients of gradients: with CreateGraph the first Grad records its own
// backward pass, so its result can be differentiated again. For y = x³:
// dy/dx = 3x², d²y/dx² = 6x.
func ExampleTape_Grad() {
	tape := autodiff.NewTape()
	x := tape.Watch(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{-1, 0.5, 2})))
	y := autodiff.Mul(x, autodiff.Square(x))
	dy, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	d2y, err := tape.Grad(dy, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	first, _ := dy[0].Float64s()
	second, _ := d2y[0].Float64s()
	fmt.Println(first, second)
	// Output:
	// [3 0.75 12] [-6 3 12]
}

// Backward adds the gradient of a loss into the parameters' Grad, once per
// recording: a second Backward through the same ops would add it again,
// and is refused unless the first one retained the graph.
func ExampleTape_BackwardWith() {
	w, _ := autodiff.NewParam("w", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	tape := autodiff.NewTape()
	loss := autodiff.Sum(autodiff.Square(tape.Param(w)), nil, false) // Σ w², gradient 2w

	err := tape.BackwardWith(loss, autodiff.BackwardOpts{RetainGraph: true})
	fmt.Println(err, w.Grad.Float64s())
	err = tape.Backward(loss) // on purpose: the gradient is added again
	fmt.Println(err, w.Grad.Float64s())
	err = tape.Backward(loss) // the last pass spent the graph
	fmt.Println(errors.Is(err, autodiff.ErrBackwardTwice), w.Grad.Float64s())

	// A loss that reaches no trainable parameter is an error too.
	tape.Reset()
	loss = autodiff.Sum(autodiff.Square(tape.Constant(w.Data)), nil, false) // should be tape.Param(w)
	fmt.Println(errors.Is(tape.Backward(loss), autodiff.ErrNoGradient))
	// Output:
	// <nil> [2 4]
	// <nil> [4 8]
	// true [4 8]
	// true
}
