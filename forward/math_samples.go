package forward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the elementwise math family for gradient sweeps.
// Inputs stay away from the ops' kinks and singularities (Relu at 0, Relu6
// at 0 and 6, Sqrt/Log/Rsqrt near 0, division by small numbers) so that
// central differences are valid; the binary ops get every broadcasting
// layout the kernels distinguish (same shape, scalar operand, trailing
// vector, general strided, rank 0 to 4, size-1 dimensions).

// ewTensor returns a float64 tensor of the given shape with values from gen.
func ewTensor(shape []int, gen func() float64) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = gen()
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		panic("forward: bad sample: " + err.Error())
	}
	return d
}

// ewUniform returns a generator of values uniform in [lo, hi).
func ewUniform(r *rand.Rand, lo, hi float64) func() float64 {
	return func() float64 { return lo + (hi-lo)*r.Float64() }
}

// ewAwayFromZero returns values with |v| in [lo, hi) and a random sign.
func ewAwayFromZero(r *rand.Rand, lo, hi float64) func() float64 {
	return func() float64 {
		v := lo + (hi-lo)*r.Float64()
		if r.Intn(2) == 0 {
			v = -v
		}
		return v
	}
}

// ewRelu6Values returns values in [-2, 8) at least 0.1 away from 0 and 6.
func ewRelu6Values(r *rand.Rand) func() float64 {
	return func() float64 {
		for {
			v := -2 + 10*r.Float64()
			if (v < -0.1 || v > 0.1) && (v < 5.9 || v > 6.1) {
				return v
			}
		}
	}
}

// ewBinaryShapes are the operand shape pairs of the binary-op samples.
var ewBinaryShapes = []struct {
	name string
	x, y []int
}{
	{"same-2x3", []int{2, 3}, []int{2, 3}},
	{"scalar-y", []int{2, 3}, []int{}},
	{"scalar-x", []int{}, []int{3}},
	{"scalars", []int{}, []int{}},
	{"bias-y", []int{2, 3, 4}, []int{4}},
	{"bias-x", []int{1, 3}, []int{2, 3}},
	{"outer", []int{3, 1}, []int{1, 4}},
	{"column-y", []int{2, 3}, []int{2, 1}},
	{"general-4d", []int{2, 1, 3, 1}, []int{4, 1, 2}},
	{"size1-both", []int{1, 1}, []int{1}},
}

// binarySamples returns the sample generator of a broadcasting binary op.
func binarySamples(op string) func(r *rand.Rand) []registry.Sample {
	return func(r *rand.Rand) []registry.Sample {
		var out []registry.Sample
		for _, s := range ewBinaryShapes {
			x := ewTensor(s.x, ewUniform(r, -1, 1))
			var y *tensor.Dense
			if op == "RealDiv" {
				y = ewTensor(s.y, ewAwayFromZero(r, 0.5, 1.5))
			} else {
				y = ewTensor(s.y, ewUniform(r, -1, 1))
			}
			out = append(out, registry.Sample{Name: s.name, Inputs: []*tensor.Dense{x, y}})
		}
		return out
	}
}

// ewUnaryShapes are the input shapes of the unary-op samples.
var ewUnaryShapes = [][]int{{}, {5}, {2, 3}, {2, 1, 3}}

// unarySamples returns the sample generator of a unary op.
func unarySamples(op string) func(r *rand.Rand) []registry.Sample {
	return func(r *rand.Rand) []registry.Sample {
		var gen func() float64
		switch op {
		case "Sqrt", "Log":
			gen = ewUniform(r, 0.2, 2)
		case "Rsqrt":
			gen = ewUniform(r, 0.3, 2)
		case "Exp", "Neg", "Square":
			gen = ewUniform(r, -1.5, 1.5)
		case "Sigmoid", "Tanh":
			gen = ewUniform(r, -2, 2)
		case "Relu":
			gen = ewAwayFromZero(r, 0.1, 2)
		case "Relu6":
			gen = ewRelu6Values(r)
		default:
			panic("forward: no sample values for " + op)
		}
		var out []registry.Sample
		for _, s := range ewUnaryShapes {
			out = append(out, registry.Sample{Name: fmt.Sprintf("%v", s), Inputs: []*tensor.Dense{ewTensor(s, gen)}})
		}
		return out
	}
}

// broadcastToSamples covers scalar, trailing-vector, size-1 and general
// broadcasts, an unchanged shape, and both shape dtypes.
func broadcastToSamples(r *rand.Rand) []registry.Sample {
	cases := []struct {
		name    string
		in, to  []int
		shape64 bool
	}{
		{"scalar", []int{}, []int{3, 2}, false},
		{"vector", []int{3}, []int{2, 3}, true},
		{"column", []int{2, 1}, []int{2, 4}, false},
		{"rank-up", []int{1, 3}, []int{2, 2, 3}, true},
		{"general", []int{2, 1, 3}, []int{2, 2, 2, 3}, false},
		{"unchanged", []int{2, 3}, []int{2, 3}, false},
	}
	var out []registry.Sample
	for _, c := range cases {
		var st *tensor.Dense
		var err error
		if c.shape64 {
			v := make([]int64, len(c.to))
			for i, d := range c.to {
				v[i] = int64(d)
			}
			st, err = tensorx.New([]int{len(v)}, v)
		} else {
			v := make([]int32, len(c.to))
			for i, d := range c.to {
				v[i] = int32(d)
			}
			st, err = tensorx.New([]int{len(v)}, v)
		}
		if err != nil {
			panic("forward: bad sample: " + err.Error())
		}
		out = append(out, registry.Sample{Name: c.name,
			Inputs: []*tensor.Dense{ewTensor(c.in, ewUniform(r, -1, 1)), st}})
	}
	return out
}

// castSamples casts float64 to float64 with and without Truncate (the
// sweep checks float64 outputs; the float32 round trip is tested
// separately).
func castSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, trunc := range []bool{false, true} {
		for _, s := range [][]int{{}, {2, 3}} {
			out = append(out, registry.Sample{Name: fmt.Sprintf("f64-truncate=%v-%v", trunc, s),
				Attrs:  CastAttrs{DstT: tensor.Float64, Truncate: trunc},
				Inputs: []*tensor.Dense{ewTensor(s, ewUniform(r, -2, 2))}})
		}
	}
	return out
}

// l2LossSamples covers rank 0 to 3.
func l2LossSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, s := range [][]int{{}, {5}, {2, 3}, {2, 3, 2}} {
		out = append(out, registry.Sample{Name: fmt.Sprintf("%v", s),
			Inputs: []*tensor.Dense{ewTensor(s, ewUniform(r, -1.5, 1.5))}})
	}
	return out
}
