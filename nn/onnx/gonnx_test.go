package onnx_test

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/advancedclimatesystems/gonnx"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/nn/onnx"
)

// TestGonnxRuntime runs the layer cases whose ops gonnx's pure-Go runtime
// implements (Conv without groups, Gemm, MatMul, Div, Flatten, Transpose,
// Relu, ...) in it: a second, independent reading of the exported graphs.
func TestGonnxRuntime(t *testing.T) {
	supported := []string{"conv_same_bias", "conv_valid_stride2_nobias", "conv_same_stride2_even",
		"conv_explicit_dilated_rect", "fracpool_pseudo", "fracpool_random_rect",
		"fracpool_overlapping_after_conv", "flatten_dense", "conv_flatten_dense_nobias", "dense_tanh_sigmoid"}
	ran := 0
	for _, c := range layerCases {
		if !slices.Contains(supported, c.name) {
			continue
		}
		ran++
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewSource(int64(len(c.name))))
			m := c.build(r)
			prepare(t, m, c.shape, r)
			data, err := onnx.Marshal(m, onnx.Options{InputShape: c.shape, BatchSize: 3})
			if err != nil {
				t.Fatal(err)
			}
			g, err := gonnx.NewModelFromBytes(data)
			if err != nil {
				t.Fatal(err)
			}
			x := randInput(r, append([]int{3}, c.shape...))
			out, err := g.Run(gonnx.Tensors{"input": x})
			if err != nil {
				t.Fatal(err)
			}
			y, ok := out["output"].(*tensor.Dense)
			if !ok {
				t.Fatalf("gonnx output %T", out["output"])
			}
			want := goEval(t, m, x)
			compare(t, c, y.Float32s(), want, "gonnx", false)
		})
	}
	if ran != len(supported) {
		t.Errorf("ran %d of the %d cases", ran, len(supported))
	}
}
