package backward_test

import (
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestPoolFamilyGradients runs the first- and second-order checks on every
// sample configuration of the pooling family, for two generator seeds.
func TestPoolFamilyGradients(t *testing.T) {
	checkSamples(t, []string{"MaxPool", "AvgPool", "MaxPoolGrad", "MaxPoolGradGrad", "AvgPoolGrad"}, []int64{1, 2}, 0, 6)
}

// TestMaxPoolGradTies: a window with equal maxima sends the gradient to the
// first in row-major order (TensorFlow's CPU kernel), in both layouts;
// MaxPoolGradGrad gathers from the same element.
func TestMaxPoolGradTies(t *testing.T) {
	// One 2x2 window over [[1, 3], [3, 2]] (NHWC 1x2x2x1): the maximum 3
	// at (0,1) and (1,0); the gradient goes to (0,1).
	x := testutil.Dense(t, tensor.Float64, []int{1, 2, 2, 1}, []float64{1, 3, 3, 2})
	y := testutil.Dense(t, tensor.Float64, []int{1, 1, 1, 1}, []float64{3})
	dy := testutil.Dense(t, tensor.Float64, []int{1, 1, 1, 1}, []float64{5})
	for _, format := range []string{"NHWC", "NCHW"} {
		a := forward.PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}, Padding: "VALID"}
		if format == "NCHW" {
			a = forward.PoolAttrs{Ksize: []int{1, 1, 2, 2}, Strides: []int{1, 1, 2, 2}, Padding: "VALID", DataFormat: "NCHW"}
		}
		xi := testutil.Dense(t, tensor.Float64, []int{1, 1, 2, 2}, []float64{1, 3, 3, 2})
		if format == "NHWC" {
			xi = x
		}
		dx := registrytest.MustRun(t, "MaxPoolGrad", a, 1, xi, y, dy)[0]
		if got := testutil.Float64s(t, dx); !slices.Equal(got, []float64{0, 5, 0, 0}) {
			t.Errorf("%s MaxPoolGrad with a tie: %v, want [0 5 0 0]", format, got)
		}
		g := testutil.Dense(t, tensor.Float64, []int{1, 1, 2, 2}, []float64{10, 20, 30, 40})
		if format == "NHWC" {
			g = testutil.Dense(t, tensor.Float64, []int{1, 2, 2, 1}, []float64{10, 20, 30, 40})
		}
		gg := registrytest.MustRun(t, "MaxPoolGradGrad", a, 1, xi, y, g)[0]
		if got := testutil.Float64s(t, gg); !slices.Equal(got, []float64{20}) {
			t.Errorf("%s MaxPoolGradGrad with a tie: %v, want [20]", format, got)
		}
	}
}

func TestPoolGradErrors(t *testing.T) {
	a := forward.PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1}, Padding: "VALID"}
	x := testutil.Dense(t, tensor.Float64, []int{1, 4, 4, 1}, testutil.Arange(16))
	y := testutil.Dense(t, tensor.Float64, []int{1, 2, 2, 1}, testutil.Arange(4))
	bad := testutil.Dense(t, tensor.Float64, []int{1, 3, 2, 1}, testutil.Arange(6))
	for _, c := range []struct {
		op   string
		in   []*tensor.Dense
		kind error
		msg  string
	}{
		{"MaxPoolGrad", []*tensor.Dense{x, bad, y}, registry.ErrInvalidArgument, "Expected orig_output shape to be [1,2,2,1], but got [1,3,2,1]"},
		{"MaxPoolGrad", []*tensor.Dense{x, y, bad}, registry.ErrInvalidArgument, "Expected grad shape to be [1,2,2,1], but got [1,3,2,1]"},
		{"MaxPoolGrad", []*tensor.Dense{x, y, testutil.To32(t, y)}, registry.ErrDtype, "input 2 (grad) has dtype float32"},
		{"MaxPoolGradGrad", []*tensor.Dense{x, y, y}, registry.ErrInvalidArgument, "Expected grad shape to be [1,4,4,1], but got [1,2,2,1]"},
		{"MaxPoolGrad", []*tensor.Dense{testutil.Dense(t, tensor.Float64, []int{4, 4}, testutil.Arange(16)), y, y}, registry.ErrInvalidArgument, "tensor_in must be 4-dimensional"},
		{"AvgPoolGrad", []*tensor.Dense{testutil.Ints(t, 1, 4, 4), y}, registry.ErrInvalidArgument, "orig_input_shape must be 1-dimensional and 4 elements"},
		{"AvgPoolGrad", []*tensor.Dense{testutil.Ints(t, 1, 4, 4, 1), bad}, registry.ErrInvalidArgument, "Expected grad shape to be [1,2,2,1], but got [1,3,2,1]"},
		{"AvgPoolGrad", []*tensor.Dense{testutil.Ints(t, 1, -4, 4, 1), y}, registry.ErrInvalidArgument, "negative dimension"},
	} {
		_, err := registrytest.Run(t, c.op, a, 1, c.in...)
		testutil.WantErr(t, err, c.kind, c.op, c.msg)
	}
}
