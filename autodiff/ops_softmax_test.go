package autodiff_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

func TestSoftmaxTypedForward(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Constant(testutil.New(t, []int{2, 2}, []float64{0, math.Log(3), 5, 5}))
	got, err := autodiff.Softmax(x).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.25, 0.75, 0.5, 0.5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Fatalf("Softmax = %v, want %v", got, want)
		}
	}
	ls, err := autodiff.LogSoftmax(x).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(ls[i]-math.Log(want[i])) > 1e-15 {
			t.Fatalf("LogSoftmax = %v, want log of %v", ls, want)
		}
	}
	loss, back := autodiff.SoftmaxCrossEntropy(x, tp.Constant(testutil.New(t, []int{2, 2}, []float64{0, 1, 1, 0})))
	lv, err := loss.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(lv[0]+math.Log(0.75)) > 1e-15 || math.Abs(lv[1]-math.Ln2) > 1e-15 {
		t.Fatalf("SoftmaxCrossEntropy loss = %v", lv)
	}
	bv, _ := back.Float64s()
	if math.Abs(bv[0]-0.25) > 1e-15 || math.Abs(bv[2]+0.5) > 1e-15 {
		t.Fatalf("SoftmaxCrossEntropy backprop = %v", bv)
	}
	sl, sb := autodiff.SparseSoftmaxCrossEntropy(x, tp.Constant(testutil.New(t, []int{2}, []int64{1, 0})))
	slv, err := sl.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	sbv, _ := sb.Float64s()
	for i := range lv {
		if slv[i] != lv[i] {
			t.Fatalf("sparse loss %v, dense %v", slv, lv)
		}
	}
	for i := range bv {
		if sbv[i] != bv[i] {
			t.Fatalf("sparse backprop %v, dense %v", sbv, bv)
		}
	}
}

// TestSoftmaxTypedGrad: the gradient of the mean sparse cross entropy is
// backprop / batch, through the typed function on a tape.
func TestSoftmaxTypedGrad(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, -1, 0, 4}))
	loss, back := autodiff.SparseSoftmaxCrossEntropy(x, tp.Constant(testutil.New(t, []int{2}, []int32{2, 0})))
	g, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	gv, _ := g[0].Float64s()
	bv, _ := back.Float64s()
	for i := range gv {
		if math.Abs(gv[i]-bv[i]) > 1e-15 {
			t.Fatalf("grad %v, want backprop %v", gv, bv)
		}
	}
}

func TestSoftmaxTypedErrors(t *testing.T) {
	// A zero Value as the first argument: the error goes on the tape of
	// the second.
	tp := autodiff.NewTape()
	labels := tp.Constant(testutil.New(t, []int{2, 2}, []float64{1, 0, 0, 1}))
	loss, back := autodiff.SoftmaxCrossEntropy(autodiff.Value{}, labels)
	if err := tp.Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("zero logits: tape error %v", err)
	}
	var oe *autodiff.OpError
	if !errors.As(tp.Err(), &oe) || oe.Op != "SoftmaxCrossEntropyWithLogits" || oe.Input != 0 {
		t.Fatalf("zero logits: error %#v", tp.Err())
	}
	if loss.Err() == nil || back.Err() == nil {
		t.Fatal("outputs of a failed op are readable")
	}

	// A zero labels Value.
	tp = autodiff.NewTape()
	x := tp.Constant(testutil.New(t, []int{2, 2}, []float64{1, 0, 0, 1}))
	autodiff.SparseSoftmaxCrossEntropy(x, autodiff.Value{})
	if err := tp.Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("zero labels: tape error %v", err)
	}

	// Values of two tapes.
	tp, tp2 := autodiff.NewTape(), autodiff.NewTape()
	x = tp.Constant(testutil.New(t, []int{2, 2}, []float64{1, 0, 0, 1}))
	y := tp2.Constant(testutil.New(t, []int{2, 2}, []float64{1, 0, 0, 1}))
	autodiff.SoftmaxCrossEntropy(x, y)
	if err := tp.Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("mixed tapes: tape error %v", err)
	}
	if tp2.Err() != nil {
		t.Fatalf("mixed tapes: the second tape got error %v", tp2.Err())
	}

	// Only zero Values: no tape to record on, invalid results, no panic.
	for _, v := range []autodiff.Value{autodiff.Softmax(autodiff.Value{}), autodiff.LogSoftmax(autodiff.Value{})} {
		if !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
			t.Fatalf("all-zero arguments: result error %v", v.Err())
		}
	}
	l2, b2 := autodiff.SparseSoftmaxCrossEntropy(autodiff.Value{}, autodiff.Value{})
	if l2.Err() == nil || b2.Err() == nil {
		t.Fatal("all-zero arguments: readable results")
	}

	// Kernel errors are sticky tape errors naming the op.
	tp = autodiff.NewTape()
	x = tp.Constant(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
	autodiff.SparseSoftmaxCrossEntropy(x, tp.Constant(testutil.New(t, []int{2}, []int32{0, 3})))
	if err := tp.Err(); !errors.Is(err, autodiff.ErrInvalidArgument) || !errors.As(err, &oe) || oe.Op != "SparseSoftmaxCrossEntropyWithLogits" {
		t.Fatalf("bad label: tape error %v", err)
	}
	tp = autodiff.NewTape()
	autodiff.Softmax(tp.Scalar(tensor.Float64, 1))
	if err := tp.Err(); !errors.Is(err, autodiff.ErrShape) {
		t.Fatalf("scalar logits: tape error %v", err)
	}
}

// Example: the cross entropy of a batch of two rows against class
// indices, its gradient with respect to the logits, and the class
// probabilities.
func ExampleSparseSoftmaxCrossEntropy() {
	tp := autodiff.NewTape()
	logitsData, _ := tensorx.New([]int{2, 3}, []float64{2, 1, 0, 0, 0, 3})
	labelsData, _ := tensorx.New([]int{2}, []int32{0, 2})
	logits := tp.Watch(logitsData)
	loss, _ := autodiff.SparseSoftmaxCrossEntropy(logits, tp.Constant(labelsData))
	grad, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{logits}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	l, _ := loss.Float64s()
	g, _ := grad[0].Float64s()
	p, _ := autodiff.Softmax(logits).Float64s()
	fmt.Printf("loss  %.4f\n", l)
	fmt.Printf("grad  %.4f\n", g)
	fmt.Printf("probs %.4f\n", p)
	// Output:
	// loss  [0.4076 0.0949]
	// grad  [-0.3348 0.2447 0.0900 0.0453 0.0453 -0.0906]
	// probs [0.6652 0.2447 0.0900 0.0453 0.0453 0.9094]
}
