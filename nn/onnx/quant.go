package onnx

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/nn"
)

// quantKernel is a kernel quantised per channel: the integer codes of its
// fake-quantised values (in the quantisation view's element order, the
// channel the fastest axis) and each channel's scale and zero point.
type quantKernel struct {
	view     []int // the quantisation view of the kernel, channels last
	codes    []int8
	scale    []float32
	zp       []int8
	channels int
}

// kernel adds the parameter p viewed as view (nil: its shape), with its
// axes permuted by perm (nil: none), reshaped to final (nil: the permuted
// shape), and returns the tensor's name: a float32 initializer, or, for
// the kernel of a FakeQuantWeights layer being exported, DequantizeLinear
// of its int8 codes along the channel axis.
func (b *Builder) kernel(p *autodiff.Param, view, perm, final []int) (string, error) {
	if p == nil || p.Data == nil {
		return "", fmt.Errorf("nil parameter")
	}
	data, err := float32Data("parameter "+p.Name, p.Data)
	if err != nil {
		return "", err
	}
	if view == nil {
		view = p.Data.Shape()
	}
	if perm == nil {
		perm = fullPerm(nil, len(view))
	}
	if prod(view) != len(data) || (final != nil && prod(final) != len(data)) || len(perm) != len(view) {
		return "", fmt.Errorf("parameter %s %v: bad view %v, perm %v, shape %v", p.Name, p.Data.Shape(), view, perm, final)
	}
	name := localName(p.Name)
	q := b.quant[p]
	if q == nil {
		out, shape := permute(data, view, perm)
		if final != nil {
			shape = final
		}
		return b.Float32(name, shape, out), nil
	}
	if !slices.Equal(view, q.view) {
		return "", fmt.Errorf("parameter %s: viewed as %v, quantised as %v", p.Name, view, q.view)
	}
	codes, shape := permute(q.codes, view, perm)
	// The channel axis: the view's last axis, moved by perm, then found
	// in final as the axis of size channels after the same elements.
	axis := slices.Index(perm, len(view)-1)
	if final != nil {
		before := prod(shape[:axis])
		axis = -1
		for i := range final {
			if prod(final[:i]) == before && final[i] == q.channels {
				axis = i
				break
			}
		}
		if axis < 0 {
			return "", fmt.Errorf("parameter %s: no channel axis in the shape %v", p.Name, final)
		}
		shape = final
	}
	c := []int{q.channels}
	y := b.Node("DequantizeLinear", []string{
		b.Int8(name+"_quantized", shape, codes),
		b.Float32(name+"_scale", c, q.scale),
		b.Int8(name+"_zero_point", c, q.zp),
	}, AttrInt("axis", int64(axis)))
	return y, nil
}

// fakeQuantWeightsRule: the wrapped layer's rule, with the kernel as
// DequantizeLinear of int8 codes (quantizeKernel).
func fakeQuantWeightsRule(b *Builder, f *nn.FakeQuantWeights, x Value) (Value, error) {
	q, err := quantizeKernel(b, f)
	if err != nil {
		return Value{}, err
	}
	k := f.Kernel()
	b.quant[k] = q
	defer delete(b.quant, k)
	return b.apply(b.path, f.Layer, x)
}

// quantizeKernel returns the codes of the kernel of f as the layer
// evaluates it: Go's FakeQuantWithMinMaxVarsPerChannel of the kernel with
// the stored ranges gives, per channel c, values j·scale[c] (float32
// products) for integers j in [quant_min − zp, quant_max − zp], zp being
// TensorFlow's nudged zero point; the code is j + zp − 2^(num_bits−1), an
// int8 (zero point zp − 2^(num_bits−1)). DequantizeLinear computes
// (code − zero point)·scale = j·scale in float32: the kernel Go evaluates
// with, bit for bit (checked here for every element).
func quantizeKernel(b *Builder, f *nn.FakeQuantWeights) (*quantKernel, error) {
	a := f.QuantAttrs()
	if a.NumBits > 8 {
		return nil, fmt.Errorf("%d-bit weights: opset %d's DequantizeLinear takes 8-bit integers: %w", a.NumBits, Opset, ErrUnsupported)
	}
	k := f.Kernel()
	data, err := float32Data("parameter "+k.Name, k.Data)
	if err != nil {
		return nil, err
	}
	mins, err := float32Data("buffer "+f.Min.Name, f.Min.Data)
	if err != nil {
		return nil, err
	}
	maxs, err := float32Data("buffer "+f.Max.Name, f.Max.Data)
	if err != nil {
		return nil, err
	}
	view := f.QuantShape()
	nc := view[len(view)-1]
	if len(mins) != nc || len(maxs) != nc || prod(view) != len(data) {
		return nil, fmt.Errorf("kernel %v quantised as %v with %d, %d ranges", k.Data.Shape(), view, len(mins), len(maxs))
	}
	t := b.tape
	kv := t.Constant(tensor.New(tensor.WithShape(view...), tensor.WithBacking(data)))
	lo := t.Constant(tensor.New(tensor.WithShape(nc), tensor.WithBacking(mins)))
	hi := t.Constant(tensor.New(tensor.WithShape(nc), tensor.WithBacking(maxs)))
	wq, err := autodiff.FakeQuantPerChannel(kv, lo, hi, a).Float32s()
	if err != nil {
		return nil, err
	}
	qmin, qmax := fqkern.QuantRange(a.NumBits, a.NarrowRange)
	off := 1 << (a.NumBits - 1)
	q := &quantKernel{view: view, codes: make([]int8, len(wq)), scale: make([]float32, nc), zp: make([]int8, nc), channels: nc}
	zps := make([]int, nc)
	for c := range nc {
		g := fqkern.Nudge(mins[c], maxs[c], qmin, qmax)
		if g.Zero { // min == max == 0: the channel is 0
			q.scale[c], zps[c] = 1, off
			continue
		}
		zp := qmin + int(g.QZero)
		if !(g.Scale > 0) || math.IsInf(float64(g.Scale), 0) || zp < qmin || zp > qmax {
			return nil, fmt.Errorf("channel %d: range [%v, %v] has no usable grid (scale %v, zero point %d): %w", c, mins[c], maxs[c], g.Scale, zp, ErrUnsupported)
		}
		q.scale[c], zps[c] = g.Scale, zp
	}
	for c := range nc {
		q.zp[c] = int8(zps[c] - off)
	}
	for i, v := range wq {
		c := i % nc
		s := q.scale[c]
		j := math.Round(float64(v) / float64(s))
		code := int(j) + zps[c]
		if float32(float32(j)*s) != v || code < qmin || code > qmax {
			return nil, fmt.Errorf("element %d (channel %d): the fake-quantised weight %v is not a grid value j·%v with j + %d in [%d, %d]", i, c, v, s, zps[c], qmin, qmax)
		}
		q.codes[i] = int8(code - off)
	}
	return q, nil
}

// fakeQuantActivationRule: QuantizeLinear then DequantizeLinear with the
// stored range's nudged grid: scale and uint8 zero point zp as TensorFlow
// nudges them. With quant_min > 0 (narrow range) or quant_max < 255
// (fewer than 8 bits) the grid is narrower than uint8, so a Clip to the
// nudged range comes first (QuantizeLinear alone saturates to [0, 255]).
func fakeQuantActivationRule(b *Builder, f *nn.FakeQuantActivation, x Value) (Value, error) {
	a := f.QuantAttrs()
	if a.NumBits > 8 {
		return Value{}, fmt.Errorf("%d-bit activations: opset %d's QuantizeLinear takes 8-bit integers: %w", a.NumBits, Opset, ErrUnsupported)
	}
	lo, hi, err := activationRange(f)
	if err != nil {
		return Value{}, err
	}
	qmin, qmax := fqkern.QuantRange(a.NumBits, a.NarrowRange)
	g := fqkern.Nudge(lo, hi, qmin, qmax)
	if g.Zero { // min == max == 0: the output is 0
		zero := b.Float32("zero", nil, []float32{0})
		return b.OutPerm(b.Node("Clip", []string{x.name, zero, zero}), x.perm), nil
	}
	zp := qmin + int(g.QZero)
	if !(g.Scale > 0) || math.IsInf(float64(g.Scale), 0) || zp < qmin || zp > qmax {
		return Value{}, fmt.Errorf("range [%v, %v] has no usable grid (scale %v, zero point %d): %w", lo, hi, g.Scale, zp, ErrUnsupported)
	}
	in := x.name
	if (qmin > 0 || qmax < 255) && !noClipForTest {
		in = b.Node("Clip", []string{in, b.Float32("nudged_min", nil, []float32{g.NMin}), b.Float32("nudged_max", nil, []float32{g.NMax})})
	}
	scale := b.Float32("scale", nil, []float32{g.Scale})
	zero := b.Uint8("zero_point", nil, []uint8{uint8(zp)})
	y := b.Node("QuantizeLinear", []string{in, scale, zero})
	y = b.Node("DequantizeLinear", []string{y, scale, zero})
	return b.OutPerm(y, x.perm), nil
}

// noClipForTest drops the Clip of narrow grids, for the test that shows
// what it is for.
var noClipForTest bool

// activationRange returns the range FakeQuantActivation evaluates with.
func activationRange(f *nn.FakeQuantActivation) (lo, hi float32, err error) {
	var l, h *tensor.Dense
	var what string
	switch {
	case f.MinParam != nil && f.MaxParam != nil:
		l, h, what = f.MinParam.Data, f.MaxParam.Data, "parameter "+f.MinParam.Name
	case f.Min != nil && f.Max != nil:
		l, h, what = f.Min.Data, f.Max.Data, "buffer "+f.Min.Name
	default:
		return 0, 0, fmt.Errorf("no range")
	}
	ls, err := float32Data(what, l)
	if err != nil {
		return 0, 0, err
	}
	hs, err := float32Data(what, h)
	if err != nil {
		return 0, 0, err
	}
	if len(ls) != 1 || len(hs) != 1 {
		return 0, 0, fmt.Errorf("range of %d, %d values", len(ls), len(hs))
	}
	return ls[0], hs[0], nil
}
