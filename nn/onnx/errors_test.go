package onnx_test

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// plain is a layer type without an export rule.
type plain struct{}

func (plain) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value { return x }
func (plain) Params() []*autodiff.Param                                 { return nil }
func (plain) Buffers() []*nn.Buffer                                     { return nil }

// TestExportErrors: what cannot be exported is an error naming the layer
// by its path and type, wrapping ErrNoRule or ErrUnsupported.
func TestExportErrors(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	twelveBits := nn.NewFakeQuantActivation(nn.ActQuantOpts{NumBits: 12})
	cases := []struct {
		name  string
		m     nn.Module
		shape []int
		is    error
		want  []string
	}{
		{"no rule", nn.NewSequential(nn.ReLU(), plain{}), []int{3}, onnx.ErrNoRule,
			[]string{`layer "1"`, "(onnx_test.plain)", "no export rule", "onnx.Register"}},
		{"no rule, nested and named", nn.NewSequential(nn.Named("block", nn.NewSequential(nn.ReLU(), nn.Named("mine", plain{})))), []int{3}, onnx.ErrNoRule,
			[]string{`layer "block.mine"`, "(onnx_test.plain)"}},
		{"lambda of an unregistered function", nn.NewSequential(nn.NewLambda("double", func(x autodiff.Value) autodiff.Value { return autodiff.Add(x, x) })), []int{3}, onnx.ErrNoRule,
			[]string{`layer "0"`, `(*nn.Lambda "double")`, "onnx.RegisterFunc"}},
		{"model without rule", plain{}, []int{3}, onnx.ErrNoRule, []string{`layer "(model)"`}},
		{"float64 parameters", nn.NewDense(3, 2, nn.DenseOpts{Rand: r, Dtype: tensor.Float64}), []int{3}, onnx.ErrUnsupported,
			[]string{`layer "(model)" (*nn.Dense)`, "float64"}},
		{"12-bit activations", nn.NewSequential(nn.ReLU(), twelveBits), []int{3}, onnx.ErrUnsupported,
			[]string{`layer "1" (*nn.FakeQuantActivation)`, "12-bit"}},
		{"12-bit weights", nn.NewFakeQuantWeights(nn.NewDense(3, 2, nn.DenseOpts{Rand: r}), nn.WeightQuantOpts{NumBits: 12}), []int{3}, onnx.ErrUnsupported,
			[]string{"(*nn.FakeQuantWeights)", "12-bit"}},
		{"wrong input shape", nn.NewSequential(nn.Named("fc", nn.NewDense(4, 2, nn.DenseOpts{Rand: r}))), []int{3}, nil,
			[]string{`layer "fc" (*nn.Dense)`, "running the layer"}},
		{"configuration error", nn.NewSequential(nn.NewDense(-1, 2, nn.DenseOpts{Rand: r})), []int{3}, nil,
			[]string{"nn.NewDense"}},
		{"no input shape", nn.ReLU(), nil, nil, []string{"InputShape"}},
		{"nil model", nil, []int{3}, nil, []string{"nil model"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := onnx.Marshal(c.m, onnx.Options{InputShape: c.shape})
			if err == nil {
				t.Fatal("no error")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q does not wrap %v", err, c.is)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
