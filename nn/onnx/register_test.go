package onnx_test

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/orttest"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
)

// scaled multiplies its input by a constant: a user's layer type,
// exported by a rule registered for its type.
type scaled struct{ k float32 }

func (s scaled) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.Mul(x, t.Scalar(x.Dtype(), float64(s.k)))
}
func (scaled) Params() []*autodiff.Param { return nil }
func (scaled) Buffers() []*nn.Buffer     { return nil }

// residual adds its inner module's output to its input: it exports itself
// (onnx.Exporter), its inner module through Builder.Module.
type residual struct{ inner nn.Module }

func (r residual) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.Add(x, r.inner.Forward(t, x))
}
func (r residual) Params() []*autodiff.Param { return r.inner.Params() }
func (r residual) Buffers() []*nn.Buffer     { return r.inner.Buffers() }

func (r residual) ExportONNX(b *onnx.Builder, x onnx.Value) (onnx.Value, error) {
	y, err := b.Module("inner", r.inner, x)
	if err != nil {
		return onnx.Value{}, err
	}
	// Add in x's layout: both operands in the Go order.
	return b.Out(b.Node("Add", []string{b.In(x), b.In(y)})), nil
}

// offsetter is an interface some layers implement; a rule registered for
// the interface exports them all.
type offsetter interface {
	nn.Module
	Offset() float32
}

type shift float32

func (s shift) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.Add(x, t.Scalar(x.Dtype(), float64(s)))
}
func (shift) Params() []*autodiff.Param { return nil }
func (shift) Buffers() []*nn.Buffer     { return nil }
func (s shift) Offset() float32         { return float32(s) }

// cube is a Lambda function: x³.
func cube(x autodiff.Value) autodiff.Value { return autodiff.Mul(x, autodiff.Square(x)) }

// TestRegisteredRules exports a model of user layers with each kind of
// registration (a type, the Exporter interface, an interface type, a
// Lambda function) and runs it in ONNX Runtime; removing a registration
// makes the export fail with ErrNoRule again.
func TestRegisteredRules(t *testing.T) {
	ort := orttest.Get(t)
	onnx.Register(func(b *onnx.Builder, s scaled, x onnx.Value) (onnx.Value, error) {
		k := b.Float32("k", nil, []float32{s.k})
		return b.OutPerm(b.Node("Mul", []string{x.Name(), k}), x.Perm()), nil
	})
	onnx.Register(func(b *onnx.Builder, s offsetter, x onnx.Value) (onnx.Value, error) {
		c := b.Float32("offset", nil, []float32{s.Offset()})
		return b.OutPerm(b.Node("Add", []string{x.Name(), c}), x.Perm()), nil
	})
	onnx.RegisterFunc(cube, func(b *onnx.Builder, x onnx.Value) (onnx.Value, error) {
		sq := b.Node("Mul", []string{x.Name(), x.Name()})
		return b.OutPerm(b.Node("Mul", []string{x.Name(), sq}), x.Perm()), nil
	})
	defer func() {
		onnx.Register[scaled](nil)
		onnx.Register[offsetter](nil)
		onnx.RegisterFunc(cube, nil)
	}()
	r := rand.New(rand.NewSource(3))
	shape := []int{6, 5, 2}
	m := nn.NewSequential(
		nn.Named("conv", conv(r, 2, 3, 3, nn.ConvOpts{Padding: "SAME"})), // leaves NCHW
		scaled{1.5}, // elementwise, keeps NCHW
		residual{nn.NewSequential(conv(r, 3, 3, 3, nn.ConvOpts{Padding: "SAME"}), nn.ReLU())},
		shift(-0.25),
		nn.NewLambda("cube", cube),
		nn.GlobalAvgPool("NHWC"),
	)
	prepare(t, m, shape, r)
	x := randInput(r, append([]int{2}, shape...))
	want := goEval(t, m, x)
	got := runORT(t, ort, m, shape, x, orttest.Options{})
	compare(t, layerCase{name: "registered", tol: tolFloat}, got, want, "ORT", false)

	onnx.Register[scaled](nil)
	if _, err := onnx.Marshal(m, onnx.Options{InputShape: shape}); !errors.Is(err, onnx.ErrNoRule) {
		t.Errorf("after removing the rule of scaled: error %v, want ErrNoRule", err)
	}
}
