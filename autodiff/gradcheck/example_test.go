package gradcheck_test

import (
	"errors"
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
)

// Check the first- and second-order gradients of a function built from
// registered ops.
func ExampleCheck() {
	x := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{0.5, -1.2, 2.0, 0.7}))
	y := tensor.New(tensor.WithShape(2, 2), tensor.WithBacking([]float64{1.5, 0.3, -0.4, 1.1}))
	f := func(t *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		s := t.Apply("AddN", nil, in[0], in[1], in[0])[0] // 2x + y
		return []autodiff.Value{s, t.Apply("Identity", nil, in[1])[0]}
	}
	fmt.Println(gradcheck.Check(f, []*tensor.Dense{x, y}, gradcheck.Options{}))
	fmt.Println(gradcheck.CheckSecondOrder(f, []*tensor.Dense{x, y}, gradcheck.Options{}))
	// Output:
	// <nil>
	// <nil>
}

// A wrong gradient is reported with the output, the input and the worst
// element.
func ExampleFailure() {
	x := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.5, -1.5, 1.0}))
	// gradchecktest.BadSquare computes x² but claims the gradient 2.5·x.
	err := gradcheck.Check(gradcheck.Op("gradchecktest.BadSquare", nil), []*tensor.Dense{x}, gradcheck.Options{Seed: 1})
	var fl *gradcheck.Failure
	if errors.As(err, &fl) {
		fmt.Printf("output %d, input %d, element %v, %d of %d elements wrong\n", fl.Output, fl.Input, fl.Index, fl.Bad, fl.Total)
		fmt.Printf("analytical/numerical = %.2f\n", fl.Analytical/fl.Numerical)
	}
	// Output:
	// output 0, input 0, element [0], 3 of 3 elements wrong
	// analytical/numerical = 1.25
}

// Check a straight-through estimator against its exact rule: the
// gradient of Identity is the upstream gradient.
func ExampleCheckSurrogate() {
	x := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{0.5, -1.5, 1.0}))
	rule := func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
		return []*tensor.Dense{up[0]}, nil
	}
	fmt.Println(gradcheck.CheckSurrogate(gradcheck.Op("Identity", nil), []*tensor.Dense{x}, rule, gradcheck.Options{}))
	// Output: <nil>
}
