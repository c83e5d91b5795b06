package onnx

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/nn"
)

// The library's rules. To add a layer kind: write its rule (the layer's
// output from x through Builder calls) and register it below. Elementwise
// layers keep their input's layout (OutPerm(y, x.perm)); layers that need
// the channels on axis 1 ask for it with InPerm.
func init() {
	Register(conv2DRule)
	Register(depthwiseRule)
	Register(separableRule)
	Register(denseRule)
	Register(batchNormRule)
	Register(fractionalAvgPoolRule)
	Register(dropoutRule)
	Register(fakeQuantWeightsRule)
	Register(fakeQuantActivationRule)
	registerUnexported(nn.Flatten(), flattenRule)
	registerUnexported(nn.GlobalAvgPool("NHWC"), globalAvgPoolRule)

	unary := func(op string) FuncRule {
		return func(b *Builder, x Value) (Value, error) {
			return b.OutPerm(b.Node(op, []string{x.name}), x.perm), nil
		}
	}
	RegisterFunc(autodiff.Relu, unary("Relu"))
	RegisterFunc(autodiff.Sigmoid, unary("Sigmoid"))
	RegisterFunc(autodiff.Tanh, unary("Tanh"))
	RegisterFunc(autodiff.Exp, unary("Exp"))
	RegisterFunc(autodiff.Log, unary("Log"))
	RegisterFunc(autodiff.Neg, unary("Neg"))
	RegisterFunc(autodiff.Sqrt, unary("Sqrt"))
	RegisterFunc(autodiff.Relu6, func(b *Builder, x Value) (Value, error) {
		y := b.Node("Clip", []string{x.name, b.Float32("zero", nil, []float32{0}), b.Float32("six", nil, []float32{6})})
		return b.OutPerm(y, x.perm), nil
	})
	RegisterFunc(autodiff.Square, func(b *Builder, x Value) (Value, error) {
		return b.OutPerm(b.Node("Mul", []string{x.name, x.name}), x.perm), nil
	})
	RegisterFunc(autodiff.Rsqrt, func(b *Builder, x Value) (Value, error) {
		return b.OutPerm(b.Node("Reciprocal", []string{b.Node("Sqrt", []string{x.name})}), x.perm), nil
	})
	lastAxis := func(op string) FuncRule { // over the last Go axis
		return func(b *Builder, x Value) (Value, error) {
			return b.Out(b.Node(op, []string{b.In(x)}, AttrInt("axis", -1))), nil
		}
	}
	RegisterFunc(autodiff.Softmax, lastAxis("Softmax"))
	RegisterFunc(autodiff.LogSoftmax, lastAxis("LogSoftmax"))
}

// registerUnexported registers rule for the (unexported) type of the
// layers like proto.
func registerUnexported(proto nn.Module, rule anyRule) {
	rules.Lock()
	defer rules.Unlock()
	rules.types[reflect.TypeOf(proto)] = rule
}

// channelsFirst returns the layout holding a channels-last Go tensor of
// the given rank with its channels on axis 1 ([0, 3, 1, 2] for NHWC), or
// nil (the Go order) for a channels-first format.
func channelsFirst(format string, rank int) []int {
	switch format {
	case "NCHW", "NCDHW":
		return nil
	}
	p := []int{0, rank - 1}
	for i := 1; i < rank-1; i++ {
		p = append(p, i)
	}
	return p
}

// spatialAxes returns the Go axes of the rows and columns for a 2-D
// convolution's data format.
func spatialAxes(format string) (h, w int) {
	if format == "NCHW" {
		return 2, 3
	}
	return 1, 2
}

// convPads returns ONNX's pads [top, left, bottom, right] of a
// convolution of an in (rows, cols) input with a (kh, kw) kernel, as
// TensorFlow pads: VALID none; SAME the total (out−1)·stride +
// (k−1)·dilation + 1 − in for out = ceil(in/stride), half (rounded down)
// before; EXPLICIT the given paddings (8 values in data-format order).
func convPads(padding string, explicit []int, in, k, strides, dilations [2]int, axes [2]int) ([]int64, error) {
	var before, after [2]int64
	switch padding {
	case "VALID":
	case "SAME":
		for i := range 2 {
			out := (in[i] + strides[i] - 1) / strides[i]
			total := max((out-1)*strides[i]+(k[i]-1)*dilations[i]+1-in[i], 0)
			before[i], after[i] = int64(total/2), int64(total-total/2)
		}
	case "EXPLICIT":
		if len(explicit) != 8 {
			return nil, fmt.Errorf("explicit paddings %v: want 8 values", explicit)
		}
		for i, a := range axes {
			before[i], after[i] = int64(explicit[2*a]), int64(explicit[2*a+1])
		}
	default:
		return nil, fmt.Errorf("padding %q: %w", padding, ErrUnsupported)
	}
	return []int64{before[0], before[1], after[0], after[1]}, nil
}

// conv adds a Conv of x (Go data format format) with the ONNX weight w
// [O, I/group, KH, KW] and optional bias (""), and returns its output in
// the channels-first layout.
func conv(b *Builder, x Value, format string, w, bias string, k [2]int, strides, dilations []int, padding string, explicit []int, group int) (string, []int, error) {
	h, wa := spatialAxes(format)
	xs := x.Shape()
	st, dl := [2]int{strides[h], strides[wa]}, [2]int{dilations[h], dilations[wa]}
	pads, err := convPads(padding, explicit, [2]int{xs[h], xs[wa]}, k, st, dl, [2]int{h, wa})
	if err != nil {
		return "", nil, err
	}
	layout := channelsFirst(format, 4)
	in := []string{b.InPerm(x, layout), w}
	if bias != "" {
		in = append(in, bias)
	}
	y := b.Node("Conv", in,
		AttrInts("kernel_shape", int64(k[0]), int64(k[1])),
		AttrInts("strides", int64(st[0]), int64(st[1])),
		AttrInts("dilations", int64(dl[0]), int64(dl[1])),
		AttrInts("pads", pads...),
		AttrInt("group", int64(group)))
	return y, layout, nil
}

// optParam adds p (if not nil) and returns its name, "" for nil.
func optParam(b *Builder, p *autodiff.Param) (string, error) {
	if p == nil {
		return "", nil
	}
	return b.Param(p)
}

// conv2DRule: Conv with the HWIO filter as OIHW, group = in / (filter's
// in), TensorFlow's padding as explicit pads.
func conv2DRule(b *Builder, c *nn.Conv2D, x Value) (Value, error) {
	a := c.ConvAttrs()
	ks := c.Weight.Data.Shape() // [KH, KW, in/groups, out]
	cin := x.Shape()[3]
	if a.DataFormat == "NCHW" {
		cin = x.Shape()[1]
	}
	w, err := b.kernel(c.Weight, nil, []int{3, 2, 0, 1}, nil)
	if err != nil {
		return Value{}, err
	}
	bias, err := optParam(b, c.Bias)
	if err != nil {
		return Value{}, err
	}
	y, layout, err := conv(b, x, a.DataFormat, w, bias, [2]int{ks[0], ks[1]}, a.Strides, a.Dilations, a.Padding, a.ExplicitPaddings, cin/ks[2])
	if err != nil {
		return Value{}, err
	}
	return b.OutPerm(y, layout), nil
}

// depthwiseWeight adds the depthwise filter [KH, KW, C, M] as ONNX's
// grouped-convolution weight [C·M, 1, KH, KW] (output channel c·M + m).
func depthwiseWeight(b *Builder, p *autodiff.Param) (string, error) {
	s := p.Data.Shape()
	return b.kernel(p, []int{s[0], s[1], s[2] * s[3]}, []int{2, 0, 1}, []int{s[2] * s[3], 1, s[0], s[1]})
}

// depthwiseRule: Conv with group = C.
func depthwiseRule(b *Builder, d *nn.DepthwiseConv2D, x Value) (Value, error) {
	a := d.ConvAttrs()
	ks := d.Weight.Data.Shape()
	w, err := depthwiseWeight(b, d.Weight)
	if err != nil {
		return Value{}, err
	}
	bias, err := optParam(b, d.Bias)
	if err != nil {
		return Value{}, err
	}
	y, layout, err := conv(b, x, a.DataFormat, w, bias, [2]int{ks[0], ks[1]}, a.Strides, a.Dilations, a.Padding, a.ExplicitPaddings, ks[2])
	if err != nil {
		return Value{}, err
	}
	return b.OutPerm(y, layout), nil
}

// separableRule: the depthwise Conv, then the pointwise Conv with the bias.
func separableRule(b *Builder, s *nn.SeparableConv2D, x Value) (Value, error) {
	da := s.DepthwiseAttrs() // the pointwise Conv is 1x1, stride 1, VALID
	ks := s.Depthwise.Data.Shape()
	w, err := depthwiseWeight(b, s.Depthwise)
	if err != nil {
		return Value{}, err
	}
	mid, layout, err := conv(b, x, da.DataFormat, w, "", [2]int{ks[0], ks[1]}, da.Strides, da.Dilations, da.Padding, da.ExplicitPaddings, ks[2])
	if err != nil {
		return Value{}, err
	}
	pw, err := b.kernel(s.Pointwise, nil, []int{3, 2, 0, 1}, nil)
	if err != nil {
		return Value{}, err
	}
	bias, err := optParam(b, s.Bias)
	if err != nil {
		return Value{}, err
	}
	in := []string{mid, pw}
	if bias != "" {
		in = append(in, bias)
	}
	y := b.Node("Conv", in, AttrInts("kernel_shape", 1, 1), AttrInts("strides", 1, 1), AttrInts("pads", 0, 0, 0, 0), AttrInt("group", 1))
	return b.OutPerm(y, layout), nil
}

// denseRule: Gemm(x, W, bias).
func denseRule(b *Builder, d *nn.Dense, x Value) (Value, error) {
	if len(x.Shape()) != 2 {
		return Value{}, fmt.Errorf("input shape %v: Dense takes [batch, features]", x.Shape())
	}
	w, err := b.kernel(d.Weight, nil, nil, nil)
	if err != nil {
		return Value{}, err
	}
	bias, err := optParam(b, d.Bias)
	if err != nil {
		return Value{}, err
	}
	in := []string{b.In(x), w}
	if bias != "" {
		in = append(in, bias)
	}
	return b.Out(b.Node("Gemm", in)), nil
}

// batchNormRule: BatchNormalization (inference: the running statistics)
// on the channels-first layout, then Relu for a layer with ReLU. ONNX Runtime folds it into a preceding
// Conv when it loads the model; the exporter does not fold it, so that a
// quantised kernel stays the one the model was trained with.
func batchNormRule(b *Builder, n *nn.BatchNorm, x Value) (Value, error) {
	a := n.EvalAttrs()
	scale, err := b.Param(n.Scale)
	if err != nil {
		return Value{}, err
	}
	offset, err := b.Param(n.Offset)
	if err != nil {
		return Value{}, err
	}
	mean, err := b.Buffer(n.MovingMean)
	if err != nil {
		return Value{}, err
	}
	variance, err := b.Buffer(n.MovingVariance)
	if err != nil {
		return Value{}, err
	}
	layout := channelsFirst(a.DataFormat, len(x.Shape()))
	y := b.Node("BatchNormalization", []string{b.InPerm(x, layout), scale, offset, mean, variance}, AttrFloat("epsilon", a.Eps()))
	if n.ReLU() {
		y = b.Node("Relu", []string{y})
	}
	return b.OutPerm(y, layout), nil
}

// fractionalAvgPoolRule: the evaluation grid is fixed, so the pooling is
// (R·X·C) / count with constant 0/1 matrices R [OH, H] (row i of R marks
// the rows of cell row i) and C [W, OW], and count [OH, OW] the cells'
// sizes: MatMul, MatMul, Div on the layout with the rows and columns last
// (NCHW).
func fractionalAvgPoolRule(b *Builder, p *nn.FractionalAvgPool, x Value) (Value, error) {
	xs := x.Shape()
	if len(xs) != 4 {
		return Value{}, fmt.Errorf("input shape %v: FractionalAvgPool takes NHWC", xs)
	}
	a := p.EvalAttrs()
	probe := autodiff.Fill(b.tape, x.val.Dtype(), []int{1, xs[1], xs[2], 1}, 0)
	_, rs, cs := autodiff.FractionalAvgPool(probe, a)
	rows, err := rs.Int64s()
	if err != nil {
		return Value{}, err
	}
	cols, err := cs.Int64s()
	if err != nil {
		return Value{}, err
	}
	h, w, oh, ow := xs[1], xs[2], len(rows)-1, len(cols)-1
	if os := b.OutShape(); len(os) != 4 || os[1] != oh || os[2] != ow {
		return Value{}, fmt.Errorf("pooling grid %dx%d does not match the layer's output %v", oh, ow, os)
	}
	r := make([]float32, oh*h)
	c := make([]float32, w*ow)
	cnt := make([]float32, oh*ow)
	for i := range oh {
		r0, r1 := fracpool.Cell(rows, i, h, a.Overlapping)
		for k := r0; k <= r1; k++ {
			r[i*h+int(k)] = 1
		}
		for j := range ow {
			c0, c1 := fracpool.Cell(cols, j, w, a.Overlapping)
			if i == 0 {
				for k := c0; k <= c1; k++ {
					c[int(k)*ow+j] = 1
				}
			}
			n := max(0, int(r1-r0+1)*int(c1-c0+1))
			if n == 0 {
				return Value{}, errors.New("empty pooling cell")
			}
			cnt[i*ow+j] = float32(n)
		}
	}
	layout := []int{0, 3, 1, 2}
	y := b.Node("MatMul", []string{b.Float32("rows", []int{oh, h}, r), b.InPerm(x, layout)})
	y = b.Node("MatMul", []string{y, b.Float32("cols", []int{w, ow}, c)})
	y = b.Node("Div", []string{y, b.Float32("count", []int{oh, ow}, cnt)})
	return b.OutPerm(y, layout), nil
}

// dropoutRule: the identity (evaluation mode).
func dropoutRule(b *Builder, _ *nn.Dropout, x Value) (Value, error) { return x, nil }

// flattenRule: Flatten(axis 1) of the Go order.
func flattenRule(b *Builder, _ nn.Module, x Value) (Value, error) {
	return b.Out(b.Node("Flatten", []string{b.In(x)}, AttrInt("axis", 1))), nil
}

// globalAvgPoolRule: ReduceMean over the spatial axes, wherever x's
// layout holds them (no Transpose).
func globalAvgPoolRule(b *Builder, m nn.Module, x Value) (Value, error) {
	format, _ := nn.IsGlobalAvgPool(m)
	h, w := spatialAxes(format)
	perm := fullPerm(x.perm, len(x.Shape()))
	var axes []int64
	var kept []int // Go axes, in x's ONNX order
	for i, g := range perm {
		if g == h || g == w {
			axes = append(axes, int64(i))
		} else {
			kept = append(kept, g)
		}
	}
	out := make([]int, len(kept)) // the kept axes renumbered in Go order
	for i, g := range kept {
		for _, o := range kept {
			if o < g {
				out[i]++
			}
		}
	}
	y := b.Node("ReduceMean", []string{x.name}, AttrInts("axes", axes...), AttrInt("keepdims", 0))
	return b.OutPerm(y, out), nil
}
