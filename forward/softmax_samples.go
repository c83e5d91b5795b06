package forward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Sample generators of the softmax family for gradient sweeps. Softmax and
// cross entropy are smooth everywhere, so the inputs only need to stay in
// a range where finite differences are accurate (logits of moderate size,
// probabilities away from 0).

// smNormal returns a float64 tensor of the given shape filled with
// N(0, scale²) values.
func smNormal(r *rand.Rand, scale float64, shape ...int) *tensor.Dense {
	n, err := tensorx.Numel(shape)
	if err != nil {
		panic("forward: bad sample shape: " + err.Error())
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = scale * r.NormFloat64()
	}
	return smMust(tensorx.New(shape, v))
}

// smDistribution returns a [rows, classes] (or [classes] when rows < 0)
// tensor whose rows are probability distributions bounded away from 0.
func smDistribution(r *rand.Rand, rows, classes int) *tensor.Dense {
	shape := []int{rows, classes}
	if rows < 0 {
		rows, shape = 1, []int{classes}
	}
	v := make([]float64, rows*classes)
	for b := 0; b < rows; b++ {
		row := v[b*classes : (b+1)*classes]
		var s float64
		for c := range row {
			row[c] = 0.2 + r.Float64()
			s += row[c]
		}
		for c := range row {
			row[c] /= s
		}
	}
	return smMust(tensorx.New(shape, v))
}

// smLabels returns n class indices in [0, classes) as an int32 or int64
// tensor.
func smLabels(r *rand.Rand, dt tensor.Dtype, n, classes int) *tensor.Dense {
	if dt == tensor.Int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.Intn(classes))
		}
		return smMust(tensorx.New([]int{n}, v))
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.Intn(classes))
	}
	return smMust(tensorx.New([]int{n}, v))
}

func smMust(d *tensor.Dense, err error) *tensor.Dense {
	if err != nil {
		panic("forward: bad sample: " + err.Error())
	}
	return d
}

// smLogitShapes are the logits shapes of the Softmax/LogSoftmax samples:
// rank 1 to 3, one class, a batch of one, odd sizes.
var smLogitShapes = []struct {
	name  string
	shape []int
}{
	{"vec5", []int{5}},
	{"3x4", []int{3, 4}},
	{"2x3x5", []int{2, 3, 5}},
	{"1x1", []int{1, 1}},
	{"4x1", []int{4, 1}},
	{"1x7", []int{1, 7}},
}

func softmaxSamples(r *rand.Rand) []registry.Sample {
	out := make([]registry.Sample, 0, len(smLogitShapes))
	for _, c := range smLogitShapes {
		out = append(out, registry.Sample{Name: c.name, Inputs: []*tensor.Dense{smNormal(r, 1.5, c.shape...)}})
	}
	return out
}

func logSoftmaxSamples(r *rand.Rand) []registry.Sample {
	return softmaxSamples(r)
}

// xentSamples covers equal shapes and each broadcasting form TensorFlow's
// kernel accepts. Every row of the (broadcast) labels is a probability
// distribution: TensorFlow's features gradient, backprop = softmax - labels,
// is the derivative of the loss only then (the exact one is
// Σ_c labels·softmax - labels). The loss is differentiable with respect to
// the labels, so both inputs are checked.
func xentSamples(r *rand.Rand) []registry.Sample {
	const b, c = 3, 4
	col := make([]float64, b) // a labels column broadcast over c classes
	for i := range col {
		col[i] = 1.0 / c
	}
	return []registry.Sample{
		{Name: "3x4", Inputs: []*tensor.Dense{smNormal(r, 1.5, b, c), smDistribution(r, b, c)}},
		{Name: "5x7", Inputs: []*tensor.Dense{smNormal(r, 1.5, 5, 7), smDistribution(r, 5, 7)}},
		{Name: "batch1", Inputs: []*tensor.Dense{smNormal(r, 1.5, 1, 6), smDistribution(r, 1, 6)}},
		{Name: "class1", Inputs: []*tensor.Dense{smNormal(r, 1.5, b, 1), smDistribution(r, b, 1)}},
		{Name: "bcast-features-1xC", Inputs: []*tensor.Dense{smNormal(r, 1.5, 1, c), smDistribution(r, b, c)}},
		{Name: "bcast-features-C", Inputs: []*tensor.Dense{smNormal(r, 1.5, c), smDistribution(r, b, c)}},
		{Name: "bcast-features-Bx1", Inputs: []*tensor.Dense{smNormal(r, 1.5, b, 1), smDistribution(r, b, c)}},
		{Name: "bcast-features-scalar", Inputs: []*tensor.Dense{smNormal(r, 1.5), smDistribution(r, b, c)}},
		{Name: "bcast-labels-C", Inputs: []*tensor.Dense{smNormal(r, 1.5, b, c), smDistribution(r, -1, c)}},
		{Name: "bcast-labels-Bx1", Inputs: []*tensor.Dense{smNormal(r, 1.5, b, c), smMust(tensorx.New([]int{b, 1}, col))}},
	}
}

// sparseXentSamples: the int labels are excluded from checking.
func sparseXentSamples(r *rand.Rand) []registry.Sample {
	return []registry.Sample{
		{Name: "3x4-int32", Inputs: []*tensor.Dense{smNormal(r, 1.5, 3, 4), smLabels(r, tensor.Int32, 3, 4)}, Wrt: []int{0}},
		{Name: "5x7-int64", Inputs: []*tensor.Dense{smNormal(r, 1.5, 5, 7), smLabels(r, tensor.Int64, 5, 7)}, Wrt: []int{0}},
		{Name: "batch1", Inputs: []*tensor.Dense{smNormal(r, 1.5, 1, 6), smLabels(r, tensor.Int32, 1, 6)}, Wrt: []int{0}},
		{Name: "class1", Inputs: []*tensor.Dense{smNormal(r, 1.5, 3, 1), smLabels(r, tensor.Int64, 3, 1)}, Wrt: []int{0}},
	}
}
