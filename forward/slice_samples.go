package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of ConcatV2, Slice, StridedSlice, Pad and PadV2 for
// gradient sweeps: every op is linear in its float input, so any values
// do; the configurations cover each attr's and each index input's
// branches (negative indices, -1 sizes, int64 indices, every mask).

// concatSamples covers first, middle, last and negative axes, three
// inputs, and an input empty along the axis.
func concatSamples(r *rand.Rand) []registry.Sample {
	cases := []struct {
		name   string
		shapes [][]int
		axis   *tensor.Dense
	}{
		{"axis0-2x3+1x3", [][]int{{2, 3}, {1, 3}}, shpInt32Scalar(0)},
		{"axis1-three", [][]int{{2, 1, 2}, {2, 3, 2}, {2, 2, 2}}, shpInt32Scalar(1)},
		{"axis-1-int64", [][]int{{2, 2}, {2, 3}}, shpMust(tensorx.New([]int{}, []int64{-1}))},
		{"vectors-with-empty", [][]int{{3}, {0}, {2}}, shpInt32Scalar(0)},
	}
	var out []registry.Sample
	for _, c := range cases {
		var in []*tensor.Dense
		for _, s := range c.shapes {
			in = append(in, SampleNormal(r, s...))
		}
		out = append(out, registry.Sample{Name: c.name, Inputs: append(in, c.axis)})
	}
	return out
}

// sliceSamples covers interior boxes, -1 sizes, empty slices and int64
// indices.
func sliceSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "3x4-interior", Inputs: []*tensor.Dense{SampleNormal(r, 3, 4), shpInt32s(1, 1), shpInt32s(2, 2)}},
		{Name: "2x3x4-rest-int64", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 4), shpInt64s(1, 0, 2), shpInt64s(-1, 2, -1)}},
		{Name: "vector-empty", Inputs: []*tensor.Dense{SampleNormal(r, 5), shpInt32s(2), shpInt32s(0)}},
		{Name: "scalar", Inputs: []*tensor.Dense{SampleNormal(r), shpInt32s(), shpInt32s()}},
	}
}

// stridedSliceSamples covers positive and negative strides, clamping,
// every mask, and int64 indices.
func stridedSliceSamples(r *rand.Rand) []registry.Sample {
	type ss = StridedSliceAttrs
	return []registry.Sample{
		{Name: "step2", Attrs: ss{}, Inputs: []*tensor.Dense{SampleNormal(r, 7), shpInt32s(1), shpInt32s(6), shpInt32s(2)}},
		{Name: "reverse-clamped", Attrs: ss{}, Inputs: []*tensor.Dense{SampleNormal(r, 3, 4), shpInt32s(5, -1), shpInt32s(-9, 0), shpInt32s(-1, -2)}},
		{Name: "masks-int64", Attrs: ss{BeginMask: 1, EndMask: 2}, Inputs: []*tensor.Dense{SampleNormal(r, 4, 5), shpInt64s(3, 1), shpInt64s(2, 9), shpInt64s(1, 2)}},
		{Name: "shrink-newaxis", Attrs: ss{ShrinkAxisMask: 1, NewAxisMask: 2}, Inputs: []*tensor.Dense{SampleNormal(r, 3, 4), shpInt32s(-1, 0, 1), shpInt32s(0, 0, 3), shpInt32s(1, 1, 1)}},
		{Name: "ellipsis", Attrs: ss{EllipsisMask: 1, ShrinkAxisMask: 2}, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 4), shpInt32s(0, 2), shpInt32s(0, 3), shpInt32s(1, 1)}},
	}
}

// padSamples covers symmetric, one-sided and zero paddings, and int64
// paddings.
func padSamples(r *rand.Rand) []registry.Sample {
	p32 := func(v ...int32) *tensor.Dense { return shpMust(tensorx.New([]int{len(v) / 2, 2}, v)) }
	p64 := func(v ...int64) *tensor.Dense { return shpMust(tensorx.New([]int{len(v) / 2, 2}, v)) }
	return []registry.Sample{
		{Name: "2x3", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3), p32(1, 0, 2, 1)}},
		{Name: "1x2x2x1-int64", Inputs: []*tensor.Dense{SampleNormal(r, 1, 2, 2, 1), p64(0, 0, 1, 1, 1, 1, 0, 0)}},
		{Name: "vector-none", Inputs: []*tensor.Dense{SampleNormal(r, 3), p32(0, 0)}},
		{Name: "scalar", Inputs: []*tensor.Dense{SampleNormal(r), shpMust(tensorx.New([]int{0, 2}, []int32{}))}},
	}
}

// padV2Samples are padSamples with a constant value. Only the input is
// checked: TensorFlow gives constant_values no gradient (None), though
// the output depends on it.
func padV2Samples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, s := range padSamples(r) {
		s.Inputs = append(s.Inputs, SampleNormal(r))
		s.Wrt = []int{0}
		out = append(out, s)
	}
	return out
}
