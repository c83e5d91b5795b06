package nn

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
)

// One layer added to two Sequentials used to rename the first model's
// parameters silently (its checkpoint stopped loading): it is refused
// (issue 18 §1).
func TestLayerInTwoSequentialsIsRefused(t *testing.T) {
	r := rnd(1)
	d := NewDense(3, 2, DenseOpts{Rand: r})
	relu := ReLU()
	first := NewSequential(relu, d)
	if err := first.Err(); err != nil {
		t.Fatal(err)
	}
	want := names(first)
	second := NewSequential(NewDense(2, 3, DenseOpts{Rand: r}), relu, d)
	err := second.Err()
	if !errors.Is(err, autodiff.ErrInvalidArgument) || !strings.Contains(err.Error(), "layer 2 (Dense) already belongs to another Sequential") {
		t.Fatalf("second Sequential: %v, want an error naming layer 2 (Dense)", err)
	}
	if got := names(first); got != want {
		t.Fatalf("the first model's names changed: %s, want %s", got, want)
	}
	// A refused Sequential renames nothing, not even its other layers.
	if got := names(second); !strings.HasPrefix(got, "weight bias ") {
		t.Fatalf("a refused Sequential renamed its layers' parameters: %s", got)
	}

	// The first Sequential, nested whole, is fine; then it belongs to the
	// outer one and cannot go into a third.
	outer := NewSequential(Named("block", first), NewDense(2, 2, DenseOpts{Rand: r}))
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	if got := names(outer); !strings.HasPrefix(got, "block.1.weight block.1.bias 1.weight") {
		t.Fatalf("nested names %s", got)
	}
	if err := NewSequential(first).Err(); err == nil || !strings.Contains(err.Error(), "layer 0 (Sequential) already belongs") {
		t.Fatalf("a nested Sequential in a third: %v", err)
	}
	// Building the same Sequential's layers again is refused too.
	if err := NewSequential(d).Err(); err == nil {
		t.Fatal("a layer of a nested Sequential taken again: no error")
	}
}

func TestLayerOfACollectedSequentialIsFree(t *testing.T) {
	d := NewDense(3, 2, DenseOpts{Rand: rnd(1)})
	func() {
		if err := NewSequential(d).Err(); err != nil {
			t.Fatal(err)
		}
	}()
	runtime.GC()
	runtime.GC()
	if err := NewSequential(d).Err(); err != nil {
		t.Fatalf("the first Sequential is gone, yet: %v", err)
	}
}

// An op's error inside a model names the layer.
func TestSequentialForwardErrorNamesTheLayer(t *testing.T) {
	r := rnd(1)
	m := NewSequential(NewDense(4, 3, DenseOpts{Rand: r}), ReLU(), Named("head", NewSequential(NewDense(5, 2, DenseOpts{Rand: r}))))
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	tp := autodiff.NewTape()
	x := tp.Constant(tensor.New(tensor.WithShape(2, 4), tensor.WithBacking(make([]float32, 8))))
	m.Forward(tp, x)
	err := tp.Err()
	if err == nil || !strings.Contains(err.Error(), "in layer head (Sequential): in layer 0 (Dense): ") {
		t.Fatalf("error %v, want it to name layer head (Sequential) and its layer 0 (Dense)", err)
	}
	// The error before the model is not given a layer.
	tp.Reset()
	bad := autodiff.Reshape(tp.Constant(tensor.New(tensor.WithShape(2, 4), tensor.WithBacking(make([]float32, 8)))), 3, 3)
	m.Forward(tp, bad)
	if err := tp.Err(); err == nil || strings.Contains(err.Error(), "in layer") {
		t.Fatalf("error %v: an error from before the model names a layer", err)
	}
}
