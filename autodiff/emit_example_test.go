package autodiff_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Typed op builders apply any registered op on a tape: the op is a Go
// function (a misspelled one does not compile), its attrs are made once
// with their TensorFlow defaults.
func ExampleTape_Emitter() {
	tape := autodiff.NewTape()
	x := tape.Constant(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, -2, 3, -4, 5, -6})))
	keep := registry.NewAttrs(forward.SumAttrs{KeepDims: true}) // made once, reused

	e := tape.Emitter()
	relu := forward.Relu(e, tape.Ref(x))
	rows := forward.Sum(e, keep, relu, tape.Ref(tape.Ints(1)))
	y := autodiff.ValueOf(rows)

	data, err := y.Float64s()
	fmt.Println(y.Shape(), data, err)
	// Output: (2, 1) [4 5] <nil>
}
