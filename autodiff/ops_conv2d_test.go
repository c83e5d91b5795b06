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

// ExampleConv2D runs a 2x2 convolution and takes the gradients of the sum
// of its output with respect to the input and the filter.
func ExampleConv2D() {
	tape := autodiff.NewTape()
	xd, _ := tensorx.New([]int{1, 3, 3, 1}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9})
	fd, _ := tensorx.New([]int{2, 2, 1, 1}, []float64{1, 0, 0, -1})
	x, f := tape.Watch(xd), tape.Watch(fd)
	y := autodiff.Conv2D(x, f, forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
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
	// y: (1, 2, 2, 1) [-4 -4 -4 -4]
	// dx: [1 1 0 1 0 -1 0 -1 -1]
	// df: [12 16 24 28]
}

func TestConv2DTyped(t *testing.T) {
	tape := autodiff.NewTape()
	a := forward.Conv2DAttrs{Strides: []int{1, 2, 1, 1}, Padding: "SAME"}
	xd, _ := tensorx.New([]int{1, 4, 3, 2}, testutil.Arange(24))
	fd, _ := tensorx.New([]int{2, 2, 2, 3}, testutil.Arange(24))
	x, f := tape.Watch(xd), tape.Watch(fd)
	y := autodiff.Conv2D(x, f, a)
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(y.Shape()); got != "(1, 2, 3, 3)" {
		t.Fatalf("shape %s", got)
	}
	// The typed backprops agree with the gradient of Conv2D.
	dy := autodiff.Conv2D(x, f, a) // any tensor of the output shape
	g, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x, f}, []autodiff.Value{dy}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	dx := autodiff.Conv2DBackpropInput([]int{1, 4, 3, 2}, f, dy, a)
	df := autodiff.Conv2DBackpropFilter(x, []int{2, 2, 2, 3}, dy, a)
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
	// The [H, W] form of input_sizes.
	dx2 := autodiff.Conv2DBackpropInput([]int{4, 3}, f, dy, a)
	if fmt.Sprint(dx2.Shape()) != "(1, 4, 3, 2)" {
		t.Fatalf("2-value input_sizes: shape %v", dx2.Shape())
	}
}

func TestConv2DTypedErrors(t *testing.T) {
	a := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}
	xd, _ := tensorx.New([]int{1, 2, 2, 1}, testutil.Arange(4))
	// All zero Values: nowhere to record the error, an invalid result.
	if v := autodiff.Conv2D(autodiff.Value{}, autodiff.Value{}, a); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Values: %v", v.Err())
	}
	// A zero filter: an error on x's tape.
	tape := autodiff.NewTape()
	v := autodiff.Conv2D(tape.Watch(xd), autodiff.Value{}, a)
	if !errors.Is(tape.Err(), autodiff.ErrInvalidValue) || v.Err() == nil {
		t.Fatalf("zero filter: %v", tape.Err())
	}
	// Sizes that do not fit int32.
	tape = autodiff.NewTape()
	v = autodiff.Conv2DBackpropInput([]int{1, 1 << 40, 2, 1}, tape.Watch(xd), tape.Watch(xd), a)
	if !errors.Is(tape.Err(), autodiff.ErrInvalidArgument) || !strings.Contains(tape.Err().Error(), "Conv2DBackpropInput") {
		t.Fatalf("large size: %v", tape.Err())
	}
	// nil sizes: the op's own error.
	tape = autodiff.NewTape()
	v = autodiff.Conv2DBackpropFilter(tape.Watch(xd), nil, tape.Watch(xd), a)
	if !errors.Is(tape.Err(), autodiff.ErrShape) || v.Err() == nil {
		t.Fatalf("nil sizes: %v", tape.Err())
	}
	// Mixed tapes.
	t1, t2 := autodiff.NewTape(), autodiff.NewTape()
	v = autodiff.Conv2D(t1.Watch(xd), t2.Watch(xd), a)
	if !errors.Is(t1.Err(), autodiff.ErrInvalidValue) || v.Err() == nil || t2.Err() != nil {
		t.Fatalf("mixed tapes: %v / %v", t1.Err(), t2.Err())
	}
}
