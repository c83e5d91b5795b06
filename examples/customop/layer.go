package main

import (
	"fmt"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/onnx"
	"github.com/tapegrad/tapegrad/registry"
)

// SwishLayer is the op as a layer of one's own (an nn.Module without
// parameters), so that it can sit in an nn.Sequential; its ONNX export rule
// is registered below, the same way the library registers the rules of its
// own layers.
type SwishLayer struct {
	beta  float64
	attrs registry.Attrs[SwishAttrs]
}

// NewSwishLayer returns a layer applying myproject.Swish with beta.
func NewSwishLayer(beta float64) *SwishLayer {
	return &SwishLayer{beta: beta, attrs: registry.NewAttrs(SwishAttrs{Beta: registry.Ptr(beta)})}
}

// String names the layer in nn.Sequential's listing.
func (s *SwishLayer) String() string { return fmt.Sprintf("Swish(%v)", s.beta) }

// Forward applies the op.
func (s *SwishLayer) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return autodiff.ValueOf(SwishOp(t.Emitter(), s.attrs, t.Ref(x)))
}

// Params returns nil: the layer has no parameters.
func (s *SwishLayer) Params() []*autodiff.Param { return nil }

// Buffers returns nil: the layer has no buffers.
func (s *SwishLayer) Buffers() []*nn.Buffer { return nil }

func init() { onnx.Register(swishONNX) }

// swishONNX exports a SwishLayer as x·Sigmoid(beta·x). Elementwise, it
// takes x in whatever axis order the exporter holds it (x.Perm) and keeps
// that order.
func swishONNX(b *onnx.Builder, s *SwishLayer, x onnx.Value) (onnx.Value, error) {
	bx := x.Name()
	if s.beta != 1 {
		bx = b.Node("Mul", []string{bx, b.Float32("beta", nil, []float32{float32(s.beta)})})
	}
	y := b.Node("Mul", []string{x.Name(), b.Node("Sigmoid", []string{bx})})
	return b.OutPerm(y, x.Perm()), nil
}
