package backward_test

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

var smOps = []string{"Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits"}

// smDistT returns a tensor whose rows (last axis) are probability
// distributions bounded away from 0, as the dense cross entropy's
// gradient requires (TensorFlow's backprop = softmax - labels is the
// derivative of the loss only for rows summing to 1).
func smDistT(t *testing.T, r *rand.Rand, shape ...int) *tensor.Dense {
	t.Helper()
	n, err := tensorx.Numel(shape)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, n)
	cols := shape[len(shape)-1]
	for b := 0; b*cols < len(v); b++ {
		row := v[b*cols : (b+1)*cols]
		var s float64
		for c := range row {
			row[c] = 0.2 + r.Float64()
			s += row[c]
		}
		for c := range row {
			row[c] /= s
		}
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSoftmaxGradSamples runs every sample of the family through the first
// and second-order checks, with several seeds.
func TestSoftmaxGradSamples(t *testing.T) {
	checkSamples(t, smOps, []int64{1, 2, 3}, 0, 1)
}

// TestSoftmaxXentGradPerOutput checks each output of the cross-entropy ops
// alone: the loss only (no gradient reaches backprop) and backprop only
// (the gradient function gets grad_loss == nil), first and second order.
func TestSoftmaxXentGradPerOutput(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	dense := func(fs, ls []int) []*tensor.Dense {
		return []*tensor.Dense{testutil.RandDenseScaled(t, r, 1.5, 0, fs...), smDistT(t, r, ls...)}
	}
	labels, _ := tensorx.New([]int{4}, []int64{2, 0, 4, 1})
	sparse := []*tensor.Dense{testutil.RandDenseScaled(t, r, 1.5, 0, 4, 5), labels}
	cases := []struct {
		op string
		in []*tensor.Dense
	}{
		{"SoftmaxCrossEntropyWithLogits", dense([]int{3, 4}, []int{3, 4})},
		{"SoftmaxCrossEntropyWithLogits", dense([]int{3, 1}, []int{3, 4})},
		{"SoftmaxCrossEntropyWithLogits", dense([]int{4}, []int{3, 4})},
		{"SoftmaxCrossEntropyWithLogits", dense([]int{3, 4}, []int{1, 4})},
		{"SparseSoftmaxCrossEntropyWithLogits", sparse},
	}
	for _, c := range cases {
		for _, outs := range [][]int{{0}, {1}} {
			for _, wrt := range [][]int{nil, {0}, {1}} {
				if c.op == "SparseSoftmaxCrossEntropyWithLogits" && wrt != nil && wrt[0] == 1 {
					continue // integer labels
				}
				o := gradcheck.Options{Seed: 3, Outputs: outs, Wrt: wrt}
				f := gradcheck.Op(c.op, nil)
				checkOrders(t, fmt.Sprintf("%s %v outputs %v wrt %v", c.op, c.in[0].Shape(), outs, wrt), f, c.in, o)
			}
		}
	}
}

// TestSoftmaxGradThirdOrder differentiates the cross entropy three times
// through a composed function: the second-order gradient itself goes
// through the op's backprop output and Softmax's gradient.
func TestSoftmaxGradThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	labels, _ := tensorx.New([]int{3}, []int32{1, 0, 2})
	in := []*tensor.Dense{testutil.RandDenseScaled(t, r, 1, 0, 3, 4), labels}
	// f returns the first-order gradient of the summed loss, so the
	// second-order check of f is a third-order check of the op.
	f := func(tp *autodiff.Tape, v []autodiff.Value) []autodiff.Value {
		loss, _ := autodiff.SparseSoftmaxCrossEntropy(v[0], v[1])
		g, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{v[0]}, nil, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			return []autodiff.Value{{}}
		}
		return g
	}
	checkOrders(t, "", f, in, gradcheck.Options{Seed: 5})
	g := func(tp *autodiff.Tape, v []autodiff.Value) []autodiff.Value {
		y := autodiff.LogSoftmax(autodiff.Softmax(v[0]))
		gr, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{v[0]}, []autodiff.Value{autodiff.Softmax(v[0])}, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			return []autodiff.Value{{}}
		}
		return gr
	}
	x := []*tensor.Dense{testutil.RandDenseScaled(t, r, 1, 0, 2, 5)}
	if err := gradcheck.CheckSecondOrder(g, x, gradcheck.Options{Seed: 6}); err != nil {
		t.Fatal(err)
	}
}

// TestSoftmaxGradLargeLogits: gradients stay finite and correct when the
// logits are far from zero (the naive exp would overflow at ±1000; here
// the finite differences need logits of moderate magnitude relative to
// eps, so they are shifted by ±300).
func TestSoftmaxGradLargeLogits(t *testing.T) {
	r := rand.New(rand.NewSource(13))
	for _, shift := range []float64{300, -300} {
		for _, name := range []string{"Softmax", "LogSoftmax"} {
			in := []*tensor.Dense{testutil.RandDenseScaled(t, r, 1, shift, 3, 4)}
			checkOrders(t, fmt.Sprintf("%s shift %v", name, shift), gradcheck.Op(name, nil), in, gradcheck.Options{Seed: 1})
		}
		in := []*tensor.Dense{testutil.RandDenseScaled(t, r, 1, shift, 3, 4), smDistT(t, r, 3, 4)}
		if err := gradcheck.Check(gradcheck.Op("SoftmaxCrossEntropyWithLogits", nil), in, gradcheck.Options{Seed: 1}); err != nil {
			t.Fatalf("xent shift %v: %v", shift, err)
		}
	}
}

// TestSoftmaxGradFloat32 checks the float32 kernels' gradients with the
// float32 tolerances.
func TestSoftmaxGradFloat32(t *testing.T) {
	r := rand.New(rand.NewSource(17))
	labels, _ := tensorx.New([]int{3}, []int32{3, 0, 1})
	cases := []struct {
		op string
		in []*tensor.Dense
	}{
		{"Softmax", []*tensor.Dense{testutil.To32(t, testutil.RandDenseScaled(t, r, 1, 0, 3, 4))}},
		{"LogSoftmax", []*tensor.Dense{testutil.To32(t, testutil.RandDenseScaled(t, r, 1, 0, 3, 4))}},
		{"SoftmaxCrossEntropyWithLogits", []*tensor.Dense{testutil.To32(t, testutil.RandDenseScaled(t, r, 1, 0, 3, 4)), testutil.To32(t, smDistT(t, r, 3, 4))}},
		{"SparseSoftmaxCrossEntropyWithLogits", []*tensor.Dense{testutil.To32(t, testutil.RandDenseScaled(t, r, 1, 0, 3, 4)), labels}},
	}
	for _, c := range cases {
		if err := gradcheck.Check(gradcheck.Op(c.op, nil), c.in, gradcheck.Options{Seed: 2, AllowFloat32: true}); err != nil {
			t.Fatalf("%s float32: %v", c.op, err)
		}
	}
}
