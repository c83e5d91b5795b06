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
	"github.com/tapegrad/tapegrad/registry"
)

func fqEqual32(t *testing.T, what string, v autodiff.Value, want ...float32) {
	t.Helper()
	got, err := v.Float32s()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// TestFakeQuantTypedForward: the typed functions apply the TF ops (spec
// vectors FQ5, WithArgsNoNudging and WithVarsGradient).
func TestFakeQuantTypedForward(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Constant(testutil.New(t, []int{2, 3}, []float32{-0.26, -0.25, -0.24, 0.0, 63.5, 63.6}))
	lo := tp.Constant(testutil.New(t, []int{3}, []float32{-0.125, -0.125, -0.125}))
	hi := tp.Constant(testutil.New(t, []int{3}, []float32{63.625, 63.625, 63.625}))
	fqEqual32(t, "FakeQuantPerChannel", autodiff.FakeQuantPerChannel(x, lo, hi, forward.FakeQuantAttrs{}), -0.25, -0.25, -0.25, 0.0, 63.5, 63.5)
	slo, shi := tp.Constant(testutil.New(t, nil, []float32{-0.125})), tp.Constant(testutil.New(t, nil, []float32{63.625}))
	fqEqual32(t, "FakeQuantVars", autodiff.FakeQuantVars(x, slo, shi, forward.FakeQuantAttrs{}), -0.25, -0.25, -0.25, 0.0, 63.5, 63.5)
	a := tp.Constant(testutil.New(t, []int{6}, []float32{-10.1, -10.0, -9.9, -9.75, 53.75, 53.8}))
	fqEqual32(t, "FakeQuantArgs", autodiff.FakeQuantArgs(a, forward.FakeQuantArgsAttrs{Min: new(float32(-10)), Max: new(float32(53.75))}),
		-10.0, -10.0, -10.0, -9.75, 53.75, 53.75)

	g := tp.Constant(testutil.New(t, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}))
	dx, dlo, dhi := autodiff.FakeQuantPerChannelGradient(g, x, lo, hi, forward.FakeQuantAttrs{})
	fqEqual32(t, "PerChannelGradient dx", dx, 0, 2, 3, 4, 5, 0)
	fqEqual32(t, "PerChannelGradient dlo", dlo, 1, 0, 0)
	fqEqual32(t, "PerChannelGradient dhi", dhi, 0, 0, 6)
	dx, dlo, dhi = autodiff.FakeQuantVarsGradient(g, x, slo, shi, forward.FakeQuantAttrs{})
	fqEqual32(t, "VarsGradient dx", dx, 0, 2, 3, 4, 5, 0)
	fqEqual32(t, "VarsGradient dlo", dlo, 1)
	fqEqual32(t, "VarsGradient dhi", dhi, 6)
	fqEqual32(t, "ArgsGradient", autodiff.FakeQuantArgsGradient(g, x, forward.FakeQuantArgsAttrs{Min: new(float32(-0.125)), Max: new(float32(63.625))}),
		0, 2, 3, 4, 5, 0)
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestFakeQuantTypedBackward trains nothing but checks that Backward puts
// the straight-through gradients into learnable per-channel ranges.
func TestFakeQuantTypedBackward(t *testing.T) {
	lo, err := autodiff.NewParam("lo", testutil.New(t, []int{2}, []float64{-1, -0.5}))
	if err != nil {
		t.Fatal(err)
	}
	hi, err := autodiff.NewParam("hi", testutil.New(t, []int{2}, []float64{1, 0.5}))
	if err != nil {
		t.Fatal(err)
	}
	tp := autodiff.NewTape()
	x := tp.Watch(testutil.New(t, []int{3, 2}, []float64{-2, 0.1, 0.3, 0.7, 3, -0.9}))
	y := autodiff.FakeQuantPerChannel(x, tp.Param(lo), tp.Param(hi), forward.FakeQuantAttrs{NumBits: 4})
	loss := autodiff.L2Loss(y)
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	yv, err := y.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	// dL/dy = y. Channel 0 ([-1, 1]): -2 below, 0.3 inside, 3 above;
	// channel 1 ([-0.5, 0.5]): 0.1 inside, 0.7 above, -0.9 below.
	glo, _ := tensorx.Float64s(lo.Grad)
	ghi, _ := tensorx.Float64s(hi.Grad)
	if glo[0] != yv[0] || ghi[0] != yv[4] || glo[1] != yv[5] || ghi[1] != yv[3] {
		t.Fatalf("range gradients lo %v hi %v, outputs %v", glo, ghi, yv)
	}
	gx, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	gv, _ := gx[0].Float64s()
	want := []float64{0, yv[1], yv[2], 0, 0, 0}
	for i := range want {
		if gv[i] != want[i] {
			t.Fatalf("input gradient %v, want %v", gv, want)
		}
	}
}

// TestFakeQuantTypedErrors: invalid arguments are errors on the tape,
// never panics.
func TestFakeQuantTypedErrors(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Constant(testutil.New(t, []int{3, 1}, []float32{1, 2, 4}))
	lo := tp.Constant(testutil.New(t, []int{2}, []float32{0, 0.1}))
	hi := tp.Constant(testutil.New(t, []int{1}, []float32{1}))
	y := autodiff.FakeQuantPerChannel(x, lo, hi, forward.FakeQuantAttrs{})
	if !errors.Is(y.Err(), registry.ErrShape) || !errors.Is(tp.Err(), registry.ErrShape) {
		t.Fatalf("size mismatch: %v / %v", y.Err(), tp.Err())
	}
	var oe *autodiff.OpError
	if !errors.As(tp.Err(), &oe) || oe.Op != "FakeQuantWithMinMaxVarsPerChannel" {
		t.Fatalf("error %v does not name the op", tp.Err())
	}

	// A zero Value argument: an error on the tape of the other arguments.
	tp2 := autodiff.NewTape()
	x2 := tp2.Constant(testutil.New(t, []int{2}, []float32{1, 2}))
	if v := autodiff.FakeQuantVars(x2, autodiff.Value{}, x2, forward.FakeQuantAttrs{}); v.Err() == nil || tp2.Err() == nil {
		t.Fatal("zero Value accepted")
	}
	// Values of two tapes.
	tp3, tp4 := autodiff.NewTape(), autodiff.NewTape()
	a := tp3.Constant(testutil.New(t, []int{1}, []float32{1}))
	b := tp4.Constant(testutil.New(t, []int{1}, []float32{1}))
	if v := autodiff.FakeQuantPerChannel(a, b, b, forward.FakeQuantAttrs{}); v.Err() == nil || tp3.Err() == nil {
		t.Fatal("mixed tapes accepted")
	}
	// Only zero Values: no tape to record on, a zero (invalid) result.
	if v := autodiff.FakeQuantArgs(autodiff.Value{}, forward.FakeQuantArgsAttrs{}); v.Err() == nil {
		t.Fatal("zero Value accepted")
	}
	dx, dlo, dhi := autodiff.FakeQuantVarsGradient(autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, forward.FakeQuantAttrs{})
	if dx.Err() == nil || dlo.Err() == nil || dhi.Err() == nil {
		t.Fatal("zero Values accepted")
	}
	// num_bits and Args' range.
	tp5 := autodiff.NewTape()
	x5 := tp5.Constant(testutil.New(t, []int{1}, []float32{1}))
	if v := autodiff.FakeQuantArgs(x5, forward.FakeQuantArgsAttrs{NumBits: 17}); !errors.Is(v.Err(), registry.ErrInvalidArgument) {
		t.Fatalf("num_bits 17: %v", v.Err())
	}
	tp6 := autodiff.NewTape()
	x6 := tp6.Constant(testutil.New(t, []int{1}, []float32{1}))
	if v := autodiff.FakeQuantArgs(x6, forward.FakeQuantArgsAttrs{Min: new(float32(2)), Max: new(float32(1))}); !errors.Is(v.Err(), registry.ErrInvalidArgument) {
		t.Fatalf("min > max: %v", v.Err())
	}
	// The gradient ops' three results are poisoned together.
	tp7 := autodiff.NewTape()
	g7 := tp7.Constant(testutil.New(t, []int{2}, []float32{1, 2}))
	x7 := tp7.Constant(testutil.New(t, []int{3}, []float32{1, 2, 3}))
	s7 := tp7.Constant(testutil.New(t, nil, []float32{0}))
	dx, dlo, dhi = autodiff.FakeQuantVarsGradient(g7, x7, s7, s7, forward.FakeQuantAttrs{})
	if dx.Err() == nil || dlo.Err() == nil || dhi.Err() == nil || !errors.Is(tp7.Err(), registry.ErrShape) {
		t.Fatalf("gradient/input size mismatch accepted: %v", tp7.Err())
	}
}

// TestFakeQuantNoGradTape: a NoGrad tape runs the ops without recording.
func TestFakeQuantNoGradTape(t *testing.T) {
	tp := autodiff.NewTape(autodiff.NoGrad())
	x := tp.Watch(testutil.New(t, []int{4}, []float32{-0.1, 0.0, 63.75, 63.8}))
	y := autodiff.FakeQuantArgs(x, forward.FakeQuantArgsAttrs{Min: new(float32(-0.1)), Max: new(float32(63.65))})
	fqEqual32(t, "NoGrad Args", y, 0, 0, 63.75, 63.75)
	if tp.NumOps() != 0 {
		t.Fatalf("NoGrad tape recorded %d ops", tp.NumOps())
	}
}

// ExampleFakeQuantPerChannel quantises a [2, 2] activation per channel
// with learnable ranges and reads the straight-through gradients.
func ExampleFakeQuantPerChannel() {
	mk := func(shape []int, v ...float32) *tensor.Dense {
		d, err := tensorx.New(shape, v)
		if err != nil {
			panic(err)
		}
		return d
	}
	lo, err := autodiff.NewParam("fq_min", mk([]int{2}, -1, 0))
	if err != nil {
		panic(err)
	}
	hi, err := autodiff.NewParam("fq_max", mk([]int{2}, 1, 6))
	if err != nil {
		panic(err)
	}

	tp := autodiff.NewTape()
	x := tp.Watch(mk([]int{2, 2}, -1.6, 2.2, 0.3, 7))
	y := autodiff.FakeQuantPerChannel(x, tp.Param(lo), tp.Param(hi), forward.FakeQuantAttrs{NumBits: 4})
	out, err := y.Float32s()
	if err != nil {
		panic(err)
	}
	if err = tp.Backward(autodiff.L2Loss(y)); err != nil { // dL/dy = y
		panic(err)
	}
	dlo, _ := tensorx.Float64s(lo.Grad)
	dhi, _ := tensorx.Float64s(hi.Grad)
	fmt.Println("outputs:", out)
	fmt.Println("d min:", dlo)
	fmt.Println("d max:", dhi)
	// Channel 0: [-1, 1] with 15 steps nudges to [-7, 8]·(2/15) (in float32
	// the zero point 7.4999996 rounds to 7), so -1.6 clamps to -0.93 and
	// sends its gradient to min. Channel 1: [0, 6] has step 0.4; 2.2 lies
	// 5.5 steps up and rounds up to 2.4; 7 clamps to 6 and sends its
	// gradient to max.

	// Output:
	// outputs: [-0.9333334 2.4 0.26666668 6]
	// d min: [-0.9333333969116211 0]
	// d max: [0 6]
}
