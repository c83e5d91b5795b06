// Command customop shows the "write your own op" story end to end: an op
// registered from outside tapegrad (myproject.Swish, in swish.go) with its
// gradient built from registered ops, used on a tape for first and second
// derivatives. swish_test.go verifies the gradient with gradcheck, as a
// user's own go test would. layer.go makes the op a layer of one's own
// with its ONNX export rule (package nn/onnx); layer_test.go runs the
// exported model in ONNX Runtime.
package main

import (
	"fmt"
	"os"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "customop:", err)
		os.Exit(1)
	}
}

func run() error {
	xs := []float64{-2, -0.5, 0, 0.5, 2}
	d := tensor.New(tensor.WithShape(len(xs)), tensor.WithBacking(xs))
	tape := autodiff.NewTape()
	x := tape.Watch(d)
	y := Swish(x, 1)
	// First derivative, recorded so that it can be differentiated again.
	g, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		return err
	}
	// Second derivative (elementwise, since Swish is elementwise).
	g2, err := tape.Grad([]autodiff.Value{g[0]}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		return err
	}
	ys, err := y.Float64s()
	if err != nil {
		return err
	}
	d1, err := g[0].Float64s()
	if err != nil {
		return err
	}
	d2, err := g2[0].Float64s()
	if err != nil {
		return err
	}
	fmt.Println("     x    swish(x)   swish'(x)  swish''(x)")
	for i, v := range xs {
		fmt.Printf("%6.2f  %10.6f  %10.6f  %10.6f\n", v, ys[i], d1[i], d2[i])
	}
	return nil
}
