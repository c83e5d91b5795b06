package main

import (
	"errors"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/registry"
)

func inputs() []*tensor.Dense {
	return []*tensor.Dense{tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{-2.1, -0.7, 0.3, 0.9, 1.6, 3.2}))}
}

// TestSwishForward compares the kernel with the formula, in both dtypes.
func TestSwishForward(t *testing.T) {
	tape := autodiff.NewTape()
	x32 := tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{-1, 0, 2}))
	y, err := Swish(tape.Constant(x32), 1.5).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float64{-1, 0, 2} {
		want := v / (1 + math.Exp(-1.5*v))
		if math.Abs(float64(y[i])-want) > 1e-6 {
			t.Errorf("swish(%v) = %v, want %v", v, y[i], want)
		}
	}
}

// TestSwishBetaZero: beta = 0 is a legal value (y = x/2), not "unset":
// the attr is a pointer, so zero is kept and nil means the default.
func TestSwishBetaZero(t *testing.T) {
	tape := autodiff.NewTape()
	y, err := Swish(tape.Constant(inputs()[0]), 0).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range inputs()[0].Float64s() {
		if y[i] != v/2 {
			t.Errorf("swish_0(%v) = %v, want %v", v, y[i], v/2)
		}
	}
	// nil: the default, beta = 1.
	z, err := autodiff.ValueOf(SwishOp(tape.Emitter(), registry.NewAttrs(SwishAttrs{}), tape.Ref(tape.Constant(inputs()[0])))).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	if v := inputs()[0].Float64s()[0]; math.Abs(z[0]-v/(1+math.Exp(-v))) > 1e-15 {
		t.Errorf("default beta: swish(%v) = %v", v, z[0])
	}
}

// TestSwishGradient is the user's gradient check: first order, then second
// order (the gradient of the gradient), with random upstream gradients.
func TestSwishGradient(t *testing.T) {
	for _, beta := range []float64{1, 0.5, 2} {
		f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
			return []autodiff.Value{Swish(in[0], beta)}
		}
		if err := gradcheck.Check(f, inputs(), gradcheck.Options{}); err != nil {
			t.Errorf("beta %v: first order: %v", beta, err)
		}
		if err := gradcheck.CheckSecondOrder(f, inputs(), gradcheck.Options{}); err != nil {
			t.Errorf("beta %v: second order: %v", beta, err)
		}
	}
}

// TestSwishBadAttr: bad input is an error naming the op, never a panic.
func TestSwishBadAttr(t *testing.T) {
	tape := autodiff.NewTape()
	Swish(tape.Constant(inputs()[0]), math.Inf(1))
	if err := tape.Err(); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Fatalf("err = %v", err)
	}
}

func TestMainRuns(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
