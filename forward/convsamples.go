package forward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample-building code the convolution families (Conv2D, depthwise)
// share: the attrs and shapes of a configuration given in NHWC names, and
// the samples of each of the three ops over a configuration table.

// convSampleWindow returns, in the layout format, the strides and
// dilations of a sample configuration and its explicit paddings (nil
// unless padding is EXPLICIT); pads are top, bottom, left, right.
func convSampleWindow(format, padding string, sh, sw, dh, dw int, pads [4]int) (strides, dilations, explicit []int) {
	l := convLayoutOf(format)
	strides, dilations = l.shape(1, sh, sw, 1), l.shape(1, dh, dw, 1)
	if padding == "EXPLICIT" {
		explicit = make([]int, 8)
		explicit[2*l.h], explicit[2*l.h+1], explicit[2*l.w], explicit[2*l.w+1] = pads[0], pads[1], pads[2], pads[3]
	}
	return strides, dilations, explicit
}

// convSampleOutput returns the output height and width of a sample
// configuration (what names it); a negative size is a bug in the table.
func convSampleOutput(what string, h, w, kh, kw, sh, sw, dh, dw int, padding string, pads [4]int) (oh, ow int) {
	oh, _, _, err1 := convOutputSize("sample", h, kh, dh, sh, padding, pads[0], pads[1])
	ow, _, _, err2 := convOutputSize("sample", w, kw, dw, sw, padding, pads[2], pads[3])
	if err1 != nil || err2 != nil {
		panic("forward: bad " + what)
	}
	return oh, ow
}

// convSampleConfig is a configuration of a convolution family's sample
// table.
type convSampleConfig interface {
	name() string
	opAttrs() any
	shapes() (x, f, y []int) // input, filter and output
}

// convSampleOp selects one of a convolution family's three ops.
type convSampleOp int

const (
	convSampleForward        convSampleOp = iota // (input, filter)
	convSampleBackpropInput                      // (input_sizes, filter, out_backprop)
	convSampleBackpropFilter                     // (input, filter_sizes, out_backprop)
)

// convSamples returns the samples of op over the configurations cfgs:
// N(0, 1) values for the float inputs, int32 vectors for the sizes. more,
// if not nil, adds samples after those of configuration i.
func convSamples[C any, P interface {
	*C
	convSampleConfig
}](r *rand.Rand, cfgs []C, op convSampleOp, more func(i int, c P) []registry.Sample) []registry.Sample {
	out := make([]registry.Sample, 0, len(cfgs))
	for i := range cfgs {
		c := P(&cfgs[i])
		xs, fs, ys := c.shapes()
		var in []*tensor.Dense
		switch op {
		case convSampleForward:
			in = []*tensor.Dense{SampleNormal(r, xs...), SampleNormal(r, fs...)}
		case convSampleBackpropInput:
			in = []*tensor.Dense{sampleInt32s(xs...), SampleNormal(r, fs...), SampleNormal(r, ys...)}
		case convSampleBackpropFilter:
			in = []*tensor.Dense{SampleNormal(r, xs...), sampleInt32s(fs...), SampleNormal(r, ys...)}
		}
		out = append(out, registry.Sample{Name: c.name(), Attrs: c.opAttrs(), Inputs: in})
		if more != nil {
			out = append(out, more(i, c)...)
		}
	}
	return out
}

// sampleInt32s returns an int32 vector tensor.
func sampleInt32s(v ...int) *tensor.Dense {
	s := make([]int32, len(v))
	for i, x := range v {
		s[i] = int32(x)
	}
	return sampleMust(tensorx.New([]int{len(v)}, s))
}

// sampleMust returns d, panicking on err (a bug in a sample table).
func sampleMust(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic(fmt.Sprintf("forward: bad sample tensor: %v", err))
	}
	return d
}
