package autodiff_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// ExampleAdd computes a small loss with broadcasting and takes its gradient
// with Tape.Grad: loss = L2Loss(w*x + b) with w of shape [3] stretched over
// the batch of two rows of x, so dloss/dw = Σ_rows (w*x + b) * x.
func ExampleAdd() {
	tp := autodiff.NewTape()
	x := tp.Constant(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6})))
	w := tp.Watch(tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{0.5, -1, 2})))
	b := tp.Scalar(tensor.Float64, 1)

	y := autodiff.Add(autodiff.Mul(x, w), b) // [2,3]: w and b broadcast
	loss := autodiff.L2Loss(y)               // sum(y^2)/2

	l, err := loss.Item()
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{w}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dw, _ := g[0].Float64s()
	fmt.Println("loss:", l)
	fmt.Println("dloss/dw:", dw)
	// Output:
	// loss: 123.125
	// dloss/dw: [13.5 -22 99]
}

// TestMathOpsValues runs every typed function once and checks its values.
func TestMathOpsValues(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{2}, []float64{0.25, 4}))
	y := tp.Constant(testutil.New(t, []int{2, 1}, []float64{2, -1}))
	cases := []struct {
		name string
		v    autodiff.Value
		want []float64
	}{
		{"Add", autodiff.Add(x, y), []float64{2.25, 6, -0.75, 3}},
		{"Sub", autodiff.Sub(x, y), []float64{-1.75, 2, 1.25, 5}},
		{"Mul", autodiff.Mul(x, y), []float64{0.5, 8, -0.25, -4}},
		{"Div", autodiff.Div(x, y), []float64{0.125, 2, -0.25, -4}},
		{"Neg", autodiff.Neg(x), []float64{-0.25, -4}},
		{"Square", autodiff.Square(x), []float64{0.0625, 16}},
		{"Sqrt", autodiff.Sqrt(x), []float64{0.5, 2}},
		{"Rsqrt", autodiff.Rsqrt(x), []float64{2, 0.5}},
		{"Exp", autodiff.Exp(x), []float64{math.Exp(0.25), math.Exp(4)}},
		{"Log", autodiff.Log(x), []float64{math.Log(0.25), math.Log(4)}},
		{"Sigmoid", autodiff.Sigmoid(x), []float64{1 / (1 + math.Exp(-0.25)), 1 / (1 + math.Exp(-4))}},
		{"Tanh", autodiff.Tanh(x), []float64{math.Tanh(0.25), math.Tanh(4)}},
		{"Relu", autodiff.Relu(y), []float64{2, 0}},
		{"Relu6", autodiff.Relu6(autodiff.Mul(x, tp.Scalar(tensor.Float64, 2))), []float64{0.5, 6}},
		{"BroadcastTo", autodiff.BroadcastTo(x, 3, 2), []float64{0.25, 4, 0.25, 4, 0.25, 4}},
		{"Cast", autodiff.Cast(autodiff.Cast(x, tensor.Int32), tensor.Float64), []float64{0, 4}},
		{"L2Loss", autodiff.L2Loss(x), []float64{(0.0625 + 16) / 2}},
	}
	for _, c := range cases {
		got, err := c.v.Float64s()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s = %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-15*math.Max(1, math.Abs(c.want[i])) {
				t.Fatalf("%s = %v, want %v", c.name, got, c.want)
			}
		}
	}
	if c := autodiff.Cast(x, tensor.Float32); c.Dtype() != tensor.Float32 {
		t.Errorf("Cast to float32: dtype %v", c.Dtype())
	}
}

// TestMathOpsInvalidValues: a zero Value or a value of another tape is an
// error on the tape of the first valid argument, not a panic.
func TestMathOpsInvalidValues(t *testing.T) {
	tp, other := autodiff.NewTape(), autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{2}, []float64{1, 2}))
	z := autodiff.Add(x, autodiff.Value{})
	if !errors.Is(z.Err(), autodiff.ErrInvalidValue) || !errors.Is(tp.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("Add(x, zero): value err %v, tape err %v", z.Err(), tp.Err())
	}
	tp2 := autodiff.NewTape()
	a := tp2.Watch(testutil.New(t, []int{2}, []float64{1, 2}))
	b := other.Constant(testutil.New(t, []int{2}, []float64{1, 2}))
	tp4 := autodiff.NewTape()
	c := tp4.Watch(testutil.New(t, []int{2}, []float64{1, 2}))
	if v := autodiff.Mul(autodiff.Value{}, c); !errors.Is(v.Err(), autodiff.ErrInvalidValue) || !errors.Is(tp4.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("Mul(zero, c): value err %v, tape err %v", v.Err(), tp4.Err())
	}
	if v := autodiff.Mul(a, b); !errors.Is(v.Err(), autodiff.ErrInvalidValue) || !errors.Is(tp2.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("Mul(a, other tape): value err %v, tape err %v", v.Err(), tp2.Err())
	}
	if other.Err() != nil {
		t.Fatalf("the other tape got an error: %v", other.Err())
	}
	// Every argument zero: nowhere to record, the result is invalid.
	if v := autodiff.Sqrt(autodiff.Value{}); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("Sqrt(zero): err %v", v.Err())
	}
	if v := autodiff.BroadcastTo(autodiff.Value{}, 2); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("BroadcastTo(zero): err %v", v.Err())
	}
	// Op errors are sticky tape errors wrapping the sentinel.
	tp3 := autodiff.NewTape()
	p := tp3.Constant(testutil.New(t, []int{2, 3}, []float64{1, 2, 3, 4, 5, 6}))
	q := tp3.Constant(testutil.New(t, []int{4}, []float64{1, 2, 3, 4}))
	if v := autodiff.Sub(p, q); !errors.Is(v.Err(), autodiff.ErrShape) {
		t.Fatalf("Sub([2,3], [4]): err %v", v.Err())
	}
	var oe *autodiff.OpError
	if !errors.As(tp3.Err(), &oe) || oe.Op != "Sub" {
		t.Fatalf("tape error %v, want an OpError of Sub", tp3.Err())
	}
}
