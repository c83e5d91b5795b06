package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// onnxOptions describe the exported model's interface: float32 input
// [N, 28, 28, 1] named "input" (pixels in [0, 1], as the Go model takes
// them), float32 logits [N, 10] named "logits".
var onnxOptions = onnx.Options{
	InputShape: []int{28, 28, 1}, InputName: "input", OutputName: "logits",
	DocString: "tapegrad examples/fashionmnist: input [N,28,28,1] float32 pixels in [0,1] (NHWC), output logits [N,10]",
}

// exportONNX writes model (float32, or with qat the QDQ model with int8
// kernels) to path and reports the file's size and the time taken.
func exportONNX(path string, model nn.Module, qat bool, stdout io.Writer) error {
	t0 := time.Now()
	data, err := onnx.Marshal(model, onnxOptions)
	if err != nil {
		return fmt.Errorf("-export: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("-export: %w", err)
	}
	kind := "float32"
	if qat {
		kind = "int8 QDQ"
	}
	fmt.Fprintf(stdout, "exported %s (ONNX, %s, input [N,28,28,1] \"input\", output [N,10] \"logits\"): %d bytes in %.0f ms\n",
		path, kind, len(data), time.Since(t0).Seconds()*1000)
	return nil
}
