package onnx_test

import (
	"fmt"
	"math/rand"

	pb "github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// printGraph prints the nodes of a serialised model.
func printGraph(data []byte) {
	var m pb.ModelProto
	if err := proto.Unmarshal(data, &m); err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range m.Graph.Node {
		fmt.Println(n.OpType, n.Output[0])
	}
}

// A small NHWC CNN: one Transpose after the input (the convolution and
// batch norm run in NCHW), one before Flatten.
func ExampleMarshal() {
	r := rand.New(rand.NewSource(1))
	model := nn.NewSequential(
		nn.Named("conv", nn.NewConv2D(1, 4, 3, nn.ConvOpts{Padding: "SAME", Rand: r})),
		nn.Named("bn", nn.NewBatchNorm(4, nn.BatchNormOpts{})),
		nn.ReLU(),
		nn.Flatten(),
		nn.Named("fc", nn.NewDense(8*8*4, 10, nn.DenseOpts{Rand: r})),
	)
	data, err := onnx.Marshal(model, onnx.Options{InputShape: []int{8, 8, 1}, OutputName: "logits"})
	if err != nil {
		fmt.Println(err)
		return
	}
	printGraph(data)
	// Output:
	// Transpose conv/Transpose
	// Conv conv/Conv
	// BatchNormalization bn/BatchNormalization
	// Relu 2/Relu
	// Transpose 3/Transpose
	// Flatten 3/Flatten
	// Gemm logits
}

// hardSwish is a layer of one's own: x·relu6(x + 3)/6.
type hardSwish struct{}

func (hardSwish) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	three := t.Scalar(x.Dtype(), 3)
	return autodiff.Div(autodiff.Mul(x, autodiff.Relu6(autodiff.Add(x, three))), t.Scalar(x.Dtype(), 6))
}
func (hardSwish) Params() []*autodiff.Param { return nil }
func (hardSwish) Buffers() []*nn.Buffer     { return nil }

// Registering the export rule of a layer type of one's own (ONNX's
// HardSwish op came in opset 14, so the rule builds it from opset-13 ops).
// The rule is elementwise: it takes its input in whatever layout it comes
// and keeps it.
func ExampleRegister() {
	onnx.Register(func(b *onnx.Builder, _ hardSwish, x onnx.Value) (onnx.Value, error) {
		three := b.Float32("three", nil, []float32{3})
		zero := b.Float32("zero", nil, []float32{0})
		six := b.Float32("six", nil, []float32{6})
		r6 := b.Node("Clip", []string{b.Node("Add", []string{x.Name(), three}), zero, six})
		y := b.Node("Div", []string{b.Node("Mul", []string{x.Name(), r6}), six})
		return b.OutPerm(y, x.Perm()), nil
	})
	defer onnx.Register[hardSwish](nil)

	model := nn.NewSequential(nn.Named("act", hardSwish{}))
	data, err := onnx.Marshal(model, onnx.Options{InputShape: []int{4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	printGraph(data)
	// Output:
	// Add act/Add
	// Clip act/Clip
	// Mul act/Mul
	// Div output
}
