package autodiff_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// ExampleDepthwiseConv2D filters each of two channels with its own 2x2
// filter (multiplier 1) and takes the gradients of the sum of the output
// with respect to the input and the filter.
func ExampleDepthwiseConv2D() {
	tape := autodiff.NewTape()
	// x: [1, 2, 3, 2], channel 0 = 1..6, channel 1 = 10, 20, ..., 60.
	xd, _ := tensorx.New([]int{1, 2, 3, 2}, []float64{1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60})
	// filter: [2, 2, 2, 1]; channel 0 sums its window, channel 1 takes
	// the difference of the two columns' top pixels.
	fd, _ := tensorx.New([]int{2, 2, 2, 1}, []float64{1, 1, 1, -1, 1, 0, 1, 0})
	x, f := tape.Watch(xd), tape.Watch(fd)
	y := autodiff.DepthwiseConv2D(x, f, forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
	out, err := y.Float64s()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("y:", y.Shape(), out)
	g, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x, f}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dx, _ := g[0].Float64s()
	df, _ := g[1].Float64s()
	fmt.Println("dx:", dx)
	fmt.Println("df:", df)
	// Output:
	// y: (1, 1, 2, 2) [12 -10 16 -10]
	// dx: [1 1 2 0 1 -1 1 0 2 0 1 0]
	// df: [3 30 5 50 9 90 11 110]
}

func TestDepthwiseConv2DTyped(t *testing.T) {
	tape := autodiff.NewTape()
	a := forward.DepthwiseConv2dAttrs{Strides: []int{1, 2, 1, 1}, Padding: "SAME", Dilations: []int{1, 1, 2, 1}}
	xd, _ := tensorx.New([]int{1, 5, 4, 2}, testutil.Arange(40))
	fd, _ := tensorx.New([]int{2, 2, 2, 3}, testutil.Arange(24))
	x, f := tape.Watch(xd), tape.Watch(fd)
	y := autodiff.DepthwiseConv2D(x, f, a)
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(y.Shape()); got != "(1, 3, 4, 6)" {
		t.Fatalf("shape %s", got)
	}
	// The typed backprops agree with the gradient of DepthwiseConv2D.
	dy := autodiff.DepthwiseConv2D(x, f, a) // any tensor of the output shape
	g, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x, f}, []autodiff.Value{dy}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	dx := autodiff.DepthwiseConv2DBackpropInput([]int{1, 5, 4, 2}, f, dy, a)
	df := autodiff.DepthwiseConv2DBackpropFilter(x, []int{2, 2, 2, 3}, dy, a)
	for i, v := range []autodiff.Value{dx, df} {
		want, err1 := g[i].Float64s()
		got, err2 := v.Float64s()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("backprop %d: %v, want %v", i, got, want)
		}
	}
}

func TestDepthwiseConv2DTypedErrors(t *testing.T) {
	a := forward.DepthwiseConv2dAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	xd, _ := tensorx.New([]int{1, 2, 2, 1}, testutil.Arange(4))
	// All zero Values: nowhere to record the error, an invalid result.
	if v := autodiff.DepthwiseConv2D(autodiff.Value{}, autodiff.Value{}, a); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Values: %v", v.Err())
	}
	if v := autodiff.DepthwiseConv2DBackpropInput([]int{1, 2, 2, 1}, autodiff.Value{}, autodiff.Value{}, a); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Values (backprop input): %v", v.Err())
	}
	// A zero filter: an error on x's tape.
	tape := autodiff.NewTape()
	v := autodiff.DepthwiseConv2D(tape.Watch(xd), autodiff.Value{}, a)
	if !errors.Is(tape.Err(), autodiff.ErrInvalidValue) || v.Err() == nil {
		t.Fatalf("zero filter: %v", tape.Err())
	}
	// A zero dy after a valid filter.
	tape = autodiff.NewTape()
	v = autodiff.DepthwiseConv2DBackpropFilter(tape.Watch(xd), []int{1, 1, 1, 1}, autodiff.Value{}, a)
	if !errors.Is(tape.Err(), autodiff.ErrInvalidValue) || v.Err() == nil {
		t.Fatalf("zero dy: %v", tape.Err())
	}
	// Sizes that do not fit int32.
	tape = autodiff.NewTape()
	v = autodiff.DepthwiseConv2DBackpropInput([]int{1, 1 << 40, 2, 1}, tape.Watch(xd), tape.Watch(xd), a)
	if !errors.Is(tape.Err(), autodiff.ErrInvalidArgument) || !strings.Contains(tape.Err().Error(), "DepthwiseConv2dNativeBackpropInput") || v.Err() == nil {
		t.Fatalf("large size: %v", tape.Err())
	}
	// nil sizes: the op's own error.
	tape = autodiff.NewTape()
	v = autodiff.DepthwiseConv2DBackpropFilter(tape.Watch(xd), nil, tape.Watch(xd), a)
	if !errors.Is(tape.Err(), autodiff.ErrShape) || v.Err() == nil {
		t.Fatalf("nil sizes: %v", tape.Err())
	}
	// A bad shape: the kernel's error, naming the op.
	tape = autodiff.NewTape()
	bad, _ := tensorx.New([]int{2, 2, 3, 1}, testutil.Arange(12))
	v = autodiff.DepthwiseConv2D(tape.Watch(xd), tape.Watch(bad), a)
	if !errors.Is(tape.Err(), autodiff.ErrShape) || !strings.Contains(tape.Err().Error(), "must have the same depth") || v.Err() == nil {
		t.Fatalf("bad depth: %v", tape.Err())
	}
	// Mixed tapes.
	t1, t2 := autodiff.NewTape(), autodiff.NewTape()
	v = autodiff.DepthwiseConv2D(t1.Watch(xd), t2.Watch(xd), a)
	if !errors.Is(t1.Err(), autodiff.ErrInvalidValue) || v.Err() == nil || t2.Err() != nil {
		t.Fatalf("mixed tapes: %v / %v", t1.Err(), t2.Err())
	}
	t1, t2 = autodiff.NewTape(), autodiff.NewTape()
	v = autodiff.DepthwiseConv2DBackpropInput([]int{1, 2, 2, 1}, t1.Watch(xd), t2.Watch(xd), a)
	if !errors.Is(t1.Err(), autodiff.ErrInvalidValue) || v.Err() == nil || t2.Err() != nil {
		t.Fatalf("mixed tapes (backprop input): %v / %v", t1.Err(), t2.Err())
	}
	// A later op on a failed tape does no work and stays poisoned.
	v = autodiff.DepthwiseConv2DBackpropFilter(t1.Watch(xd), []int{1, 1, 1, 1}, t1.Watch(xd), a)
	if v.Err() == nil {
		t.Fatal("op on a failed tape succeeded")
	}
}
