package main

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

type convSpec struct {
	name, desc         string
	n, h, w, cin, cout int
	k, stride          int
	depthwise          bool // DepthwiseConv2dNative, multiplier cout/cin
}

func init() {
	for _, c := range []convSpec{
		{"W1", "Conv2D 3x3 s1 SAME N32 32x32 16->32", 32, 32, 32, 16, 32, 3, 1, false},
		{"W2", "Conv2D 3x3 s1 SAME N8 56x56 64->64", 8, 56, 56, 64, 64, 3, 1, false},
		{"W3", "Conv2D 3x3 s2 SAME N8 56x56 64->128", 8, 56, 56, 64, 128, 3, 2, false},
		{"W4", "Conv2D 1x1 s1 N8 28x28 128->256", 8, 28, 28, 128, 256, 1, 1, false},
		{"W5", "DepthwiseConv2dNative 3x3 s1 SAME mult 1 N8 56x56 C128", 8, 56, 56, 128, 128, 3, 1, true},
		{"W6", "DepthwiseConv2dNative 3x3 s2 SAME mult 1 N8 112x112 C32", 8, 112, 112, 32, 32, 3, 2, true},
	} {
		register(workload{name: c.name, desc: c.desc, build: c.build})
	}
}

func (c convSpec) build(threads int) ([]mode, error) {
	op, opIn, opFilt := "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter"
	cf, fo := c.cin, c.cout // filter dims 2 and 3
	if c.depthwise {
		op, opIn, opFilt = "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"
		fo = c.cout / c.cin
	}
	attrs, err := parseAttrs(op, map[string]any{
		"strides": ints(1, c.stride, c.stride, 1), "padding": "SAME", "data_format": "NHWC",
	})
	if err != nil {
		return nil, err
	}
	oh, ow := (c.h+c.stride-1)/c.stride, (c.w+c.stride-1)/c.stride
	in := []int{c.n, c.h, c.w, c.cin}
	filt := []int{c.k, c.k, cf, fo}
	out := []int{c.n, oh, ow, c.cout}
	cinPerOut := c.cin
	if c.depthwise {
		cinPerOut = 1
	}
	flops := 2 * float64(c.n*oh*ow*c.cout*cinPerOut*c.k*c.k)
	ms, err := opModes(threads, op, attrs, [][]int{in, filt}, out, flops, 0, 0)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(2))
	x, f, dy := randTensor(r, in), randTensor(r, filt), randTensor(r, out)
	inSizes, _ := tensorx.New([]int{4}, []int32{int32(in[0]), int32(in[1]), int32(in[2]), int32(in[3])})
	fSizes, _ := tensorx.New([]int{4}, []int32{int32(filt[0]), int32(filt[1]), int32(filt[2]), int32(filt[3])})
	bi, err := singleOp(threads, "bwd_input", opIn, attrs, []*tensor.Dense{inSizes, f, dy}, flops)
	if err != nil {
		return nil, err
	}
	bf, err := singleOp(threads, "bwd_filter", opFilt, attrs, []*tensor.Dense{x, fSizes, dy}, flops)
	if err != nil {
		return nil, err
	}
	return []mode{ms[0], bi, bf, ms[1]}, nil
}

func randTensor(r *rand.Rand, shape []int) *tensor.Dense {
	n, _ := tensorx.Numel(shape)
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	d, _ := tensorx.New(shape, s)
	return d
}
