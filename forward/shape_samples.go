package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators for the gradient sweeps of the shape, reduction and
// linear-algebra ops. Every op here is linear or bilinear, so any inputs
// are valid for finite differences.

// shpInt32s returns an int32 vector.
func shpInt32s(v ...int) *tensor.Dense {
	s := make([]int32, len(v))
	for i, x := range v {
		s[i] = int32(x)
	}
	return shpMust(tensorx.New([]int{len(v)}, s))
}

// shpInt64s returns an int64 vector.
func shpInt64s(v ...int) *tensor.Dense {
	s := make([]int64, len(v))
	for i, x := range v {
		s[i] = int64(x)
	}
	return shpMust(tensorx.New([]int{len(v)}, s))
}

// shpInt32Scalar returns an int32 scalar.
func shpInt32Scalar(v int) *tensor.Dense {
	return shpMust(tensorx.New(nil, []int32{int32(v)}))
}

func shpMust(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic("forward: bad sample tensor: " + err.Error())
	}
	return d
}

func reshapeSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "2x3x4-to-4x-1", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 4), shpInt32s(4, -1)}},
		{Name: "6-to-2x3-int64", Inputs: []*tensor.Dense{SampleNormal(r, 6), shpInt64s(2, 3)}},
		{Name: "scalar-to-1x1", Inputs: []*tensor.Dense{SampleNormal(r), shpInt32s(1, 1)}},
		{Name: "3x1x2-to-flat", Inputs: []*tensor.Dense{SampleNormal(r, 3, 1, 2), shpInt32s(-1)}},
		{Name: "1x5-to-5", Inputs: []*tensor.Dense{SampleNormal(r, 1, 5), shpInt32s(5)}},
	}
}

func transposeSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "2x3-swap", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3), shpInt32s(1, 0)}},
		{Name: "2x3x4-201", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 4), shpInt32s(2, 0, 1)}},
		{Name: "nhwc-to-nchw-int64", Inputs: []*tensor.Dense{SampleNormal(r, 2, 1, 3, 2), shpInt64s(0, 3, 1, 2)}},
		{Name: "2x3x2x2-3120", Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 2, 2), shpInt32s(3, 1, 2, 0)}},
		{Name: "vector-identity", Inputs: []*tensor.Dense{SampleNormal(r, 3), shpInt32s(0)}},
	}
}

func fillSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "2x3", Inputs: []*tensor.Dense{shpInt32s(2, 3), SampleNormal(r)}},
		{Name: "scalar-output", Inputs: []*tensor.Dense{shpInt32s(), SampleNormal(r)}},
		{Name: "int64-dims-value-shape-1", Inputs: []*tensor.Dense{shpInt64s(4, 1, 2), SampleNormal(r, 1)}},
	}
}

// reduceSamples covers axes of every form for Sum and Mean.
func reduceSamples(r *rand.Rand) []registry.Sample {
	keep := SumAttrs{KeepDims: true}
	drop := SumAttrs{}
	return []registry.Sample{
		{Name: "2x3-axis1", Attrs: drop, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3), shpInt32s(1)}},
		{Name: "2x3-axis0-keep", Attrs: keep, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3), shpInt32s(0)}},
		{Name: "2x3x4-axes-0-2", Attrs: drop, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 4), shpInt32s(0, 2)}},
		{Name: "2x3x4-neg-axis-keep-int64", Attrs: keep, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 4), shpInt64s(-2)}},
		{Name: "3x3-scalar-axis", Attrs: drop, Inputs: []*tensor.Dense{SampleNormal(r, 3, 3), shpInt32Scalar(0)}},
		{Name: "2x2x3-all", Attrs: drop, Inputs: []*tensor.Dense{SampleNormal(r, 2, 2, 3), shpInt32s(0, 1, 2)}},
		{Name: "2x1x3x2-axes-1-3-keep", Attrs: keep, Inputs: []*tensor.Dense{SampleNormal(r, 2, 1, 3, 2), shpInt32s(3, 1)}},
		{Name: "2x3-no-axes", Attrs: drop, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3), shpInt32s()}},
		{Name: "scalar-no-axes", Attrs: keep, Inputs: []*tensor.Dense{SampleNormal(r), shpInt32s()}},
	}
}

func sumSamples(r *rand.Rand) []registry.Sample  { return reduceSamples(r) }
func meanSamples(r *rand.Rand) []registry.Sample { return reduceSamples(r) }

func matMulSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			m, k, n := 3, 5, 4
			as, bs := []int{m, k}, []int{k, n}
			if ta {
				as = []int{k, m}
			}
			if tb {
				bs = []int{n, k}
			}
			name := "3x5x4"
			if ta {
				name += "-ta"
			}
			if tb {
				name += "-tb"
			}
			out = append(out, registry.Sample{Name: name, Attrs: MatMulAttrs{TransposeA: ta, TransposeB: tb},
				Inputs: []*tensor.Dense{SampleNormal(r, as...), SampleNormal(r, bs...)}})
		}
	}
	out = append(out,
		registry.Sample{Name: "1x1x1", Attrs: MatMulAttrs{}, Inputs: []*tensor.Dense{SampleNormal(r, 1, 1), SampleNormal(r, 1, 1)}},
		registry.Sample{Name: "outer-4x1x3", Attrs: MatMulAttrs{}, Inputs: []*tensor.Dense{SampleNormal(r, 4, 1), SampleNormal(r, 1, 3)}},
		registry.Sample{Name: "vec-1x7x2-tb", Attrs: MatMulAttrs{TransposeB: true}, Inputs: []*tensor.Dense{SampleNormal(r, 1, 7), SampleNormal(r, 2, 7)}},
	)
	return out
}

func biasAddSamples(r *rand.Rand) []registry.Sample {
	nhwc, nchw := BiasAddAttrs{DataFormat: "NHWC"}, BiasAddAttrs{DataFormat: "NCHW"}
	return []registry.Sample{
		{Name: "nhwc-2x3", Attrs: nhwc, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3), SampleNormal(r, 3)}},
		{Name: "nhwc-2x2x3x4", Attrs: nhwc, Inputs: []*tensor.Dense{SampleNormal(r, 2, 2, 3, 4), SampleNormal(r, 4)}},
		{Name: "default-3x5", Attrs: BiasAddAttrs{}, Inputs: []*tensor.Dense{SampleNormal(r, 3, 5), SampleNormal(r, 5)}},
		{Name: "nchw-2x3x2x2", Attrs: nchw, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 2, 2), SampleNormal(r, 3)}},
		{Name: "nchw-2x3x5", Attrs: nchw, Inputs: []*tensor.Dense{SampleNormal(r, 2, 3, 5), SampleNormal(r, 3)}},
	}
}
