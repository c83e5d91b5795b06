package autodiff_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// ExampleConv2D_int32 convolves int32 tensors, as TensorFlow's int32
// Conv2D kernel does: exact integer arithmetic, wrapping modulo 2^32 on
// overflow. int32 values carry no gradients.
func ExampleConv2D_int32() {
	tape := autodiff.NewTape()
	xd, _ := tensorx.New([]int{1, 3, 3, 1}, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	fd, _ := tensorx.New([]int{2, 2, 1, 1}, []int32{1, 0, 0, -1})
	y := autodiff.Conv2D(tape.Constant(xd), tape.Constant(fd), forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"})
	d, err := y.Data()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("y:", y.Dtype(), y.Shape(), tensorx.MustSlice[int32](d))
	// Output:
	// y: int32 (1, 2, 2, 1) [-4 -4 -4 -4]
}

// TestConv2DInt32OnTape checks that the tape never differentiates
// through int32 convolutions: an int32 target is refused, and a float loss
// computed from an int32 convolution (through Cast) has gradients for its
// float sources, while a watched int32 source gets zeros (no gradient
// flows through integers).
func TestConv2DInt32OnTape(t *testing.T) {
	xd, _ := tensorx.New([]int{1, 3, 3, 1}, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	fd, _ := tensorx.New([]int{2, 2, 1, 1}, []int32{1, 0, 0, -1})
	a := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "VALID"}

	tape := autodiff.NewTape()
	x := tape.Watch(xd)
	y := autodiff.Conv2D(x, tape.Constant(fd), a)
	if _, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{}); !errors.Is(err, autodiff.ErrDtype) {
		t.Fatalf("Grad of an int32 target: %v, want a dtype error", err)
	}

	tape = autodiff.NewTape()
	x = tape.Watch(xd)
	y = autodiff.Conv2D(x, tape.Constant(fd), a)
	wd, _ := tensorx.New([]int{1, 2, 2, 1}, []float64{1, 2, 3, 4})
	w := tape.Watch(wd)
	loss := autodiff.Sum(autodiff.Mul(autodiff.Cast(y, tensor.Float64), w), nil, false)
	g, err := tape.Grad([]autodiff.Value{loss}, []autodiff.Value{w, x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := g[0].Float64s()
	if err != nil || !slices.Equal(gw, []float64{-4, -4, -4, -4}) {
		t.Fatalf("gradient wrt w: %v %v, want the convolution's values", gw, err)
	}
	gx, err := g[1].Data()
	if err != nil {
		t.Fatal(err)
	}
	if gx.Dtype() != tensor.Int32 || !slices.Equal(tensorx.MustSlice[int32](gx), make([]int32, 9)) {
		t.Fatalf("gradient wrt the int32 input: %v %v, want int32 zeros", gx.Dtype(), gx)
	}
}
