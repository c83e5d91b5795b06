package main

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/orttest"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

func swishModel() *nn.Sequential {
	r := rand.New(rand.NewSource(1))
	return nn.NewSequential(
		nn.Named("conv", nn.NewConv2D(2, 4, 3, nn.ConvOpts{Padding: "SAME", Rand: r})),
		nn.Named("swish", NewSwishLayer(1.5)),
		nn.GlobalAvgPool("NHWC"),
		nn.Named("fc", nn.NewDense(4, 3, nn.DenseOpts{Rand: r})),
		NewSwishLayer(1),
	)
}

// TestSwishLayerONNX exports a model with the user-defined layer (its
// rule registered in layer.go) and runs it in ONNX Runtime: the outputs
// match the Go model's.
func TestSwishLayerONNX(t *testing.T) {
	ort := orttest.Get(t)
	m := swishModel()
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	shape := []int{5, 6, 2}
	data, err := onnx.Marshal(m, onnx.Options{InputShape: shape})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(2))
	xs := make([]float32, 3*5*6*2)
	for i := range xs {
		xs[i] = float32(4*r.Float64() - 2)
	}
	x := tensor.New(tensor.WithShape(3, 5, 6, 2), tensor.WithBacking(xs))
	tape := autodiff.NewTape(autodiff.Training(false), autodiff.NoGrad())
	want, err := m.Forward(tape, tape.Constant(x)).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ort.Run(t, data, map[string]orttest.Tensor{"input": {Shape: x.Shape(), Data: xs}}, orttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := out["output"].Data
	if len(got) != len(want) {
		t.Fatalf("ORT gave %d values, Go %d", len(got), len(want))
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*(1+math.Abs(float64(want[i]))) {
			t.Errorf("output %d: ORT %v, Go %v", i, got[i], want[i])
		}
	}
}

// TestSwishLayerWithoutRule: without its rule the export fails, naming
// the layer.
func TestSwishLayerWithoutRule(t *testing.T) {
	onnx.Register[*SwishLayer](nil)
	defer onnx.Register(swishONNX)
	_, err := onnx.Marshal(swishModel(), onnx.Options{InputShape: []int{5, 6, 2}})
	if !errors.Is(err, onnx.ErrNoRule) || !strings.Contains(err.Error(), `layer "swish" (*main.SwishLayer)`) {
		t.Fatalf("error %v: want ErrNoRule naming layer \"swish\" (*main.SwishLayer)", err)
	}
}
