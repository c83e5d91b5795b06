package autodiff_test

import (
	"errors"
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// A chain of steps (as nn.Sequential runs its layers) declares each
// step's values dead once the next step has run: on a NoGrad tape their
// buffers serve the next steps at once, so the chain holds about two
// steps' values, not all of them. A declared value reports ErrReleased.
func ExampleTape_Intermediates() {
	tape := autodiff.NewTape(autodiff.NoGrad())
	x := tape.Constant(tensor.New(tensor.WithShape(1000), tensor.WithBacking(make([]float32, 1000))))
	y := x
	var first autodiff.Value
	m := tape.Mark()
	for i := range 100 {
		y = autodiff.Sigmoid(y)
		if i == 0 {
			first = y
		}
		m = tape.Intermediates(m, y)
	}
	out, _ := y.Float32s()
	fmt.Printf("output %.4f\n", out[0])
	fmt.Println("first step's output released:", errors.Is(first.Err(), autodiff.ErrReleased))
	ms := tape.MemStats()
	fmt.Printf("peak %d KB for 100 steps of 4 KB\n", ms.PeakInUse/1000)
	// Output:
	// output 0.6590
	// first step's output released: true
	// peak 12 KB for 100 steps of 4 KB
}
