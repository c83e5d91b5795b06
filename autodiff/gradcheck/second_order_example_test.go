package gradcheck_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
)

// Check the gradient of the gradient of your own function in a go test:
// here f(x, w) = tanh(x·w) summed over rows, whose gradients (built from
// Tanh's and MatMul's gradients) must be differentiable again, as training
// with a gradient penalty needs.
func ExampleCheckSecondOrder() {
	x := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{0.3, -0.8, 1.1, 0.5, 0.2, -0.4}))
	w := tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{0.7, -0.2, 0.1, 0.9, -0.6, 0.4}))
	f := func(t *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		h := autodiff.Tanh(autodiff.MatMul(in[0], in[1], forward.MatMulAttrs{}))
		return []autodiff.Value{autodiff.Sum(h, []int{1}, false)}
	}
	fmt.Println(gradcheck.CheckSecondOrder(f, []*tensor.Dense{x, w}, gradcheck.Options{Seed: 1}))
	// Output:
	// <nil>
}
