package autodiff_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// TestFusedBatchNormTyped runs both typed forwards in both modes on FBN1
// (spec §7) in float64 and checks every output.
func TestFusedBatchNormTyped(t *testing.T) {
	x := []float64{5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15}
	varB := 70.0 / 6
	wantY := make([]float64, len(x))
	for i, v := range x {
		wantY[i] = (v-10)*4/math.Sqrt(varB+float64(float32(0.001))) + 2
	}
	eps := float32(0.001)
	for _, v3 := range []bool{false, true} {
		for _, training := range []bool{true, false} {
			tp := autodiff.NewTape()
			xv := tp.Constant(testutil.New(t, []int{1, 1, 6, 2}, x))
			scale := tp.Constant(testutil.New(t, []int{2}, []float64{4, 4}))
			offset := tp.Constant(testutil.New(t, []int{2}, []float64{2, 2}))
			mean, variance := tp.Full(tensor.Float64, []int{0}, 0), tp.Full(tensor.Float64, []int{0}, 0)
			if !training {
				mean, variance = tp.Constant(testutil.New(t, []int{2}, []float64{10, 10})), tp.Constant(testutil.New(t, []int{2}, []float64{varB, varB}))
			}
			attrs := forward.FusedBatchNormAttrs{Epsilon: &eps, IsTraining: &training}
			var out autodiff.BatchNormOutputs
			if v3 {
				out = autodiff.FusedBatchNormV3(xv, scale, offset, mean, variance, attrs)
			} else {
				out = autodiff.FusedBatchNorm(xv, scale, offset, mean, variance, attrs)
			}
			name := fmt.Sprintf("v3=%v training=%v", v3, training)
			testutil.Near(t, name+" y", testutil.Values(t, out.Y), wantY, 1e-12)
			testutil.Near(t, name+" batch_mean", testutil.Values(t, out.BatchMean), []float64{10, 10}, 1e-12)
			wantVar := varB
			if training {
				wantVar = 14 // unbiased
			}
			testutil.Near(t, name+" batch_variance", testutil.Values(t, out.BatchVariance), []float64{wantVar, wantVar}, 1e-12)
			testutil.Near(t, name+" reserve_space_1", testutil.Values(t, out.ReserveSpace1), []float64{10, 10}, 1e-12)
			testutil.Near(t, name+" reserve_space_2", testutil.Values(t, out.ReserveSpace2), []float64{varB, varB}, 1e-12)
			if v3 {
				testutil.Near(t, name+" reserve_space_3", testutil.Values(t, out.ReserveSpace3), []float64{0}, 0)
			} else if out.ReserveSpace3.Tape() != nil {
				t.Fatalf("%s: FusedBatchNorm has a ReserveSpace3", name)
			}
		}
	}
}

// TestFusedBatchNormTypedGrad: the tape's gradient of Σ w·y equals the
// typed grad op applied to w, in both modes and layouts.
func TestFusedBatchNormTypedGrad(t *testing.T) {
	xs := []float64{0.3, -1.2, 2.5, 0.7, 1.1, -0.4, 0.9, 2.2, -1.7, 0.05, 1.4, -0.8}
	ws := []float64{1, -2, 0.5, 0.25, 3, -1, 0.7, 0.2, -0.6, 1.5, -0.3, 0.9}
	for _, format := range []string{"NHWC", "NCHW"} {
		for _, training := range []bool{true, false} {
			tp := autodiff.NewTape()
			x := tp.Watch(testutil.New(t, []int{2, 3, 2, 1}, xs))
			scale := tp.Watch(testutil.New(t, []int{3}, []float64{1.5, -0.5, 2}))
			offset := tp.Watch(testutil.New(t, []int{3}, []float64{0.1, 0.2, 0.3}))
			if format == "NHWC" {
				x = tp.Watch(testutil.New(t, []int{2, 2, 1, 3}, xs))
			}
			mean := tp.Constant(testutil.New(t, []int{3}, []float64{0.2, 0.4, -0.1}))
			variance := tp.Constant(testutil.New(t, []int{3}, []float64{1.2, 0.8, 2}))
			attrs := forward.FusedBatchNormAttrs{DataFormat: format, IsTraining: &training}
			out := autodiff.FusedBatchNormV3(x, scale, offset, mean, variance, attrs)
			w := tp.Constant(testutil.New(t, []int(x.Shape()), ws))
			g, err := tp.Grad([]autodiff.Value{out.Y}, []autodiff.Value{x, scale, offset}, []autodiff.Value{w}, autodiff.GradOpts{})
			if err != nil {
				t.Fatal(err)
			}
			rs1, rs2 := out.ReserveSpace1, out.ReserveSpace2
			if !training {
				rs1, rs2 = mean, variance
			}
			dx, ds, do := autodiff.FusedBatchNormGradV3(w, x, scale, rs1, rs2, out.ReserveSpace3, attrs.GradAttrs())
			for i, want := range []autodiff.Value{dx, ds, do} {
				wv, err := want.Float64s()
				if err != nil {
					t.Fatal(err)
				}
				testutil.Near(t, fmt.Sprintf("%s training=%v gradient %d", format, training, i), testutil.Values(t, g[i]), wv, 1e-12)
			}
			dx1, _, _ := autodiff.FusedBatchNormGrad(w, x, scale, rs1, rs2, attrs.GradAttrs())
			wv, _ := dx.Float64s()
			testutil.Near(t, "FusedBatchNormGrad dx", testutil.Values(t, dx1), wv, 0)
		}
	}
}

// TestFusedBatchNormTypedErrors: a zero Value, values of two tapes and a
// bad input are errors on the tape, never panics.
func TestFusedBatchNormTypedErrors(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Constant(testutil.New(t, []int{1, 1, 2, 2}, []float32{1, 2, 3, 4}))
	c := tp.Constant(testutil.New(t, []int{2}, []float32{1, 1}))
	out := autodiff.FusedBatchNormV3(x, c, c, autodiff.Value{}, c, forward.FusedBatchNormAttrs{})
	if err := out.Y.Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("zero Value: error %v", err)
	}
	if !errors.Is(tp.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Value: tape error %v", tp.Err())
	}

	tp1, tp2 := autodiff.NewTape(), autodiff.NewTape()
	x1 := tp1.Constant(testutil.New(t, []int{1, 1, 2, 2}, []float32{1, 2, 3, 4}))
	c2 := tp2.Constant(testutil.New(t, []int{2}, []float32{1, 1}))
	dx, _, _ := autodiff.FusedBatchNormGradV3(x1, x1, c2, c2, c2, c2, forward.FusedBatchNormGradAttrs{})
	if err := dx.Err(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("mixed tapes: error %v", err)
	}

	// The first argument may be the zero Value: the tape is the first
	// valid argument's.
	tp3 := autodiff.NewTape()
	c3 := tp3.Constant(testutil.New(t, []int{2}, []float32{1, 1}))
	dx, _, _ = autodiff.FusedBatchNormGrad(autodiff.Value{}, c3, c3, c3, c3, forward.FusedBatchNormGradAttrs{})
	if !errors.Is(dx.Err(), autodiff.ErrInvalidValue) || !errors.Is(tp3.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero first argument: value error %v, tape error %v", dx.Err(), tp3.Err())
	}

	// No argument has a tape: zero Values that report themselves.
	o := autodiff.FusedBatchNorm(autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, forward.FusedBatchNormAttrs{})
	if !errors.Is(o.Y.Err(), autodiff.ErrInvalidValue) || !errors.Is(o.ReserveSpace2.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("all zero Values: %v", o.Y.Err())
	}

	// A bad input: the op's error, on the tape.
	tp4 := autodiff.NewTape()
	x4 := tp4.Constant(testutil.New(t, []int{2, 2, 3}, make([]float32, 12)))
	c4 := tp4.Constant(testutil.New(t, []int{3}, []float32{1, 1, 1}))
	o = autodiff.FusedBatchNormV3(x4, c4, c4, c4, c4, forward.FusedBatchNormAttrs{})
	if err := o.Y.Err(); !errors.Is(err, autodiff.ErrInvalidArgument) {
		t.Fatalf("rank-3 x: error %v", err)
	}
}

// ExampleFusedBatchNormV3 normalises a batch in training mode, reads the
// new running statistics, and takes the gradient of a weighted sum of the
// result.
func ExampleFusedBatchNormV3() {
	tp := autodiff.NewTape()
	// x: NHWC [4, 1, 1, 2], two channels.
	xd, _ := tensorx.New([]int{4, 1, 1, 2}, []float64{1, 10, 2, 20, 3, 30, 6, 40})
	scaleD, _ := tensorx.New([]int{2}, []float64{1, 2})
	offsetD, _ := tensorx.New([]int{2}, []float64{0, 1})
	x := tp.Watch(xd)
	scale, offset := tp.Watch(scaleD), tp.Watch(offsetD)
	// Running statistics, blended with factor 0.1.
	meanD, _ := tensorx.New([]int{2}, []float64{0, 0})
	varD, _ := tensorx.New([]int{2}, []float64{1, 1})
	factor := float32(0.1)
	out := autodiff.FusedBatchNormV3(x, scale, offset, tp.Constant(meanD), tp.Constant(varD),
		forward.FusedBatchNormAttrs{ExponentialAvgFactor: &factor})

	y, _ := out.Y.Float64s()
	m, _ := out.BatchMean.Float64s()
	v, _ := out.BatchVariance.Float64s()
	fmt.Printf("y              %.3f\n", y)
	fmt.Printf("running mean   %.3f\n", m)
	fmt.Printf("running var    %.3f\n", v)

	wD, _ := tensorx.New([]int{4, 1, 1, 2}, []float64{1, 0, 0, 0, 0, 0, 0, 1})
	g, err := tp.Grad([]autodiff.Value{out.Y}, []autodiff.Value{x, scale, offset}, []autodiff.Value{tp.Constant(wD)}, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dx, _ := g[0].Float64s()
	ds, _ := g[1].Float64s()
	do, _ := g[2].Float64s()
	fmt.Printf("d/dx           %.3f\n", dx)
	fmt.Printf("d/dscale       %.3f\n", ds)
	fmt.Printf("d/doffset      %.3f\n", do)
	// Output:
	// y              [-1.069 -1.683 -0.535 0.106 0.000 1.894 1.604 3.683]
	// running mean   [0.300 2.500]
	// running var    [1.367 17.567]
	// d/dx           [0.248 0.036 -0.210 -0.018 -0.134 -0.072 0.095 0.054]
	// d/dscale       [-1.069 1.342]
	// d/doffset      [1.000 1.000]
}

// ExampleFusedBatchNormEx normalises a batch in training mode with the
// Relu fused (TensorFlow's _FusedBatchNormEx): the values of
// FusedBatchNormV3 then Relu, and no gradient where the output is
// clipped.
func ExampleFusedBatchNormEx() {
	tp := autodiff.NewTape()
	// x: NHWC [4, 1, 1, 1], one channel.
	xd, _ := tensorx.New([]int{4, 1, 1, 1}, []float64{1, 2, 3, 6})
	one, _ := tensorx.New([]int{1}, []float64{1})
	zero, _ := tensorx.New([]int{1}, []float64{0})
	empty, _ := tensorx.New([]int{0}, []float64{})
	x := tp.Watch(xd)
	out := autodiff.FusedBatchNormEx(x, tp.Constant(one), tp.Constant(zero), tp.Constant(empty), tp.Constant(empty),
		forward.FusedBatchNormExAttrs{ActivationMode: "Relu"})
	y, _ := out.Y.Float64s()
	fmt.Printf("y     %.3f\n", y)
	g, err := tp.Grad([]autodiff.Value{out.Y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dx, _ := g[0].Float64s()
	fmt.Printf("d/dx  %.3f\n", dx)
	// Output:
	// y     [0.000 0.000 0.000 1.604]
	// d/dx  [0.095 -0.019 -0.134 0.057]
}
