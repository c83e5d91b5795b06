package onnx

import (
	"fmt"
	"slices"

	"github.com/tapegrad/tapegrad/nn"
)

// The rules of issue 18's layers: MaxPool2D, AvgPool2D (nn.Pool2D) and
// LayerNorm. nn.Tanh and nn.Sigmoid are Lambdas of autodiff.Tanh and
// autodiff.Sigmoid, whose function rules rules.go registers.
func init() {
	Register(pool2DRule)
	Register(layerNormRule)
}

// pool2DRule: MaxPool or AveragePool on the channels-first layout, with
// TensorFlow's SAME padding as explicit pads (the extra row or column
// after, as for Conv). Padding is never part of a window: MaxPool ignores
// pads, and AveragePool with count_include_pad = 0 divides by the number
// of input elements in the window, as TensorFlow's AvgPool does.
func pool2DRule(b *Builder, p *nn.Pool2D, x Value) (Value, error) {
	a := p.Attrs()
	xs := x.Shape()
	if len(xs) != 4 || len(a.Ksize) != 4 || len(a.Strides) != 4 {
		return Value{}, fmt.Errorf("input shape %v, ksize %v, strides %v: pooling takes a 4-D input", xs, a.Ksize, a.Strides)
	}
	h, w := spatialAxes(a.DataFormat)
	k, st := [2]int{a.Ksize[h], a.Ksize[w]}, [2]int{a.Strides[h], a.Strides[w]}
	pads, err := convPads(a.Padding, a.ExplicitPaddings, [2]int{xs[h], xs[w]}, k, st, [2]int{1, 1}, [2]int{h, w})
	if err != nil {
		return Value{}, err
	}
	attrs := []Attr{
		AttrInts("kernel_shape", int64(k[0]), int64(k[1])),
		AttrInts("strides", int64(st[0]), int64(st[1])),
		AttrInts("pads", pads...),
	}
	op := "MaxPool"
	if p.Avg() {
		op = "AveragePool"
		attrs = append(attrs, AttrInt("count_include_pad", 0))
	}
	layout := channelsFirst(a.DataFormat, 4)
	y := b.Node(op, []string{b.InPerm(x, layout)}, attrs...)
	return b.OutPerm(y, layout), nil
}

// layerNormRule: opset 13 has no LayerNormalization, so the layer's own
// arithmetic, op for op: μ = ReduceMean(x), xc = x − μ, σ² =
// ReduceMean(xc·xc), y = xc · Reciprocal(Sqrt(σ² + ε)), then · gamma and
// + beta. Go's Rsqrt is 1/sqrt in float32 (two roundings), which
// Reciprocal(Sqrt) repeats; a Div by the Sqrt would round once less. The
// reduction is over the ONNX axis holding the Go tensor's last axis, in
// whatever layout x is (no Transpose); gamma and beta are shaped to
// broadcast along it.
func layerNormRule(b *Builder, l *nn.LayerNorm, x Value) (Value, error) {
	xs := x.Shape()
	rank := len(xs)
	if rank == 0 {
		return Value{}, fmt.Errorf("input is a scalar: LayerNorm normalises the last dimension")
	}
	axis := slices.Index(fullPerm(x.perm, rank), rank-1) // ONNX axis of the Go last axis
	// gamma, beta: [features, 1, ...] over the ONNX axes from axis on.
	pshape := make([]int, rank-axis)
	for i := range pshape {
		pshape[i] = 1
	}
	pshape[0] = xs[rank-1]
	mean := func(in string) string {
		return b.Node("ReduceMean", []string{in}, AttrInts("axes", int64(axis)), AttrInt("keepdims", 1))
	}
	xc := b.Node("Sub", []string{x.name, mean(x.name)})
	v := mean(b.Node("Mul", []string{xc, xc}))
	v = b.Node("Add", []string{v, b.Float32("epsilon", nil, []float32{float32(l.Epsilon())})})
	y := b.Node("Mul", []string{xc, b.Node("Reciprocal", []string{b.Node("Sqrt", []string{v})})})
	if l.Gamma != nil {
		g, err := b.kernel(l.Gamma, nil, nil, pshape)
		if err != nil {
			return Value{}, err
		}
		y = b.Node("Mul", []string{y, g})
	}
	if l.Beta != nil {
		be, err := b.kernel(l.Beta, nil, nil, pshape)
		if err != nil {
			return Value{}, err
		}
		y = b.Node("Add", []string{y, be})
	}
	return b.OutPerm(y, x.perm), nil
}
