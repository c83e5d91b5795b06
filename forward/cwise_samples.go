package forward

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of Abs, Maximum, Minimum, Pow, Select and SelectV2
// for gradient sweeps. Inputs stay away from the kinks: Abs's inputs from
// 0, Maximum's and Minimum's operands at least 0.05 apart (x on a grid of
// step 0.1, y on the same grid shifted by half a step), Pow's base
// positive (its exponent's gradient is 0 for x <= 0 by TensorFlow's rule,
// where the function has no real derivative).

// absSamples covers ranks 0 to 3 with values away from 0.
func absSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, s := range ewUnaryShapes {
		out = append(out, registry.Sample{Name: fmt.Sprintf("%v", s), Inputs: []*tensor.Dense{ewTensor(s, ewAwayFromZero(r, 0.1, 2))}})
	}
	return out
}

// cwiseGrid returns values k·0.1 + shift for a random k in [-20, 20].
func cwiseGrid(r *rand.Rand, shift float64) func() float64 {
	return func() float64 { return float64(r.Intn(41)-20)*0.1 + shift }
}

// cwiseBinarySamples returns the sample generator of Maximum, Minimum or
// Pow, over the broadcasting layouts of the other binary ops.
func cwiseBinarySamples(op string) func(r *rand.Rand) []registry.Sample {
	return func(r *rand.Rand) []registry.Sample {
		var out []registry.Sample
		for _, s := range ewBinaryShapes {
			var x, y *tensor.Dense
			if op == "Pow" {
				x = ewTensor(s.x, ewUniform(r, 0.3, 2))
				y = ewTensor(s.y, ewUniform(r, -1.5, 2.5))
			} else {
				x = ewTensor(s.x, cwiseGrid(r, 0))
				y = ewTensor(s.y, cwiseGrid(r, 0.05))
			}
			out = append(out, registry.Sample{Name: s.name, Inputs: []*tensor.Dense{x, y}})
		}
		return out
	}
}

// cwiseBools returns a bool tensor of the given shape with random values.
func cwiseBools(r *rand.Rand, shape ...int) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad sample shape: " + err.Error())
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = r.Intn(2) == 0
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		panic("forward: bad sample: " + err.Error())
	}
	return d
}

// selectSamples covers Select's three forms: a condition of t's shape, a
// scalar one and a vector choosing rows.
func selectSamples(r *rand.Rand) []registry.Sample {
	cases := []struct {
		name    string
		cond, t []int
	}{
		{"elementwise-2x3", []int{2, 3}, []int{2, 3}},
		{"elementwise-vector", []int{4}, []int{4}},
		{"scalar-cond", []int{}, []int{2, 2}},
		{"rows-3x2x2", []int{3}, []int{3, 2, 2}},
	}
	var out []registry.Sample
	for _, c := range cases {
		out = append(out, registry.Sample{Name: c.name, Inputs: []*tensor.Dense{
			cwiseBools(r, c.cond...), SampleNormal(r, c.t...), SampleNormal(r, c.t...)}})
	}
	return out
}

// selectV2Samples covers broadcasting of each of the three operands.
func selectV2Samples(r *rand.Rand) []registry.Sample {
	cases := []struct {
		name    string
		c, t, e []int
	}{
		{"same-2x3", []int{2, 3}, []int{2, 3}, []int{2, 3}},
		{"cond-row", []int{3}, []int{2, 3}, []int{2, 3}},
		{"scalar-e", []int{2, 3}, []int{2, 3}, []int{}},
		{"all-broadcast", []int{2, 1, 3}, []int{1, 4, 1}, []int{4, 3}},
		{"scalar-cond", []int{}, []int{3}, []int{2, 1}},
	}
	var out []registry.Sample
	for _, c := range cases {
		out = append(out, registry.Sample{Name: c.name, Inputs: []*tensor.Dense{
			cwiseBools(r, c.c...), SampleNormal(r, c.t...), SampleNormal(r, c.e...)}})
	}
	return out
}
