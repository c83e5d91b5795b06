package autodiff_test

import (
	"errors"
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// Anomaly detection finds the first op that makes a NaN or an infinity.
// Here the forward pass is finite (sqrt(0) = 0) but the gradient of Sqrt
// at 0 is +Inf: Backward fails in the gradient op SqrtGrad, naming the
// line of the Sqrt call, and leaves w.Grad untouched.
func ExampleDetectAnomaly() {
	w, _ := autodiff.NewParam("w", tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{4, 1, 0})))
	tape := autodiff.NewTape(autodiff.DetectAnomaly())
	y := autodiff.Sqrt(tape.Param(w))
	loss := autodiff.Sum(y, nil, false)
	err := tape.Backward(loss)
	fmt.Println(err)

	var ae *autodiff.AnomalyError
	if errors.As(err, &ae) {
		fmt.Println("output", ae.Output, "+Inf:", ae.PosInf, "first at", ae.First)
	}
	fmt.Println(errors.Is(err, autodiff.ErrNonFinite), w.Grad == nil)
	// Output:
	// tapegrad: SqrtGrad (gradient of Sqrt at autodiff/anomaly_example_test.go:19): output 0 (float64 (3)) has 1 +Inf (first at flat index 2), its inputs were finite: non-finite value (anomaly detection)
	// output 0 +Inf: 1 first at 2
	// true true
}
