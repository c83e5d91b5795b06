package autodiff_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// ExampleFractionalAvgPool pools a 4x4 image with ratio 2 (an exact
// division, so every seed gives the sequence [0 2 4]), then takes the
// gradient of the sum of the output: each input gets 1/4 of its cell's
// upstream gradient.
func ExampleFractionalAvgPool() {
	tape := autodiff.NewTape(autodiff.Seed(1))
	xd, _ := tensorx.New([]int{1, 4, 4, 1}, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	x := tape.Watch(xd)
	y, rows, cols := autodiff.FractionalAvgPool(x, forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}})
	out, err := y.Float64s()
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _ := rows.Int64s()
	c, _ := cols.Int64s()
	fmt.Println("y:", y.Shape(), out)
	fmt.Println("sequences:", r, c)
	g, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dx, _ := g[0].Float64s()
	fmt.Println("dx:", dx)
	// Output:
	// y: (1, 2, 2, 1) [3.5 5.5 11.5 13.5]
	// sequences: [0 2 4] [0 2 4]
	// dx: [0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25 0.25]
}

func fpVals(t *testing.T, v autodiff.Value) string {
	t.Helper()
	switch v.Dtype() {
	case tensor.Int64:
		s, err := v.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(s)
	}
	s, err := v.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(s)
}

// TestFractionalPoolTyped checks the typed functions: shapes and dtypes,
// the typed gradient ops against the tape's gradients, and
// FractionalAvgPoolWithSequences against FractionalAvgPool with its own
// sequences.
func TestFractionalPoolTyped(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	tape := autodiff.NewTape(autodiff.Seed(3))
	x := tape.Watch(testutil.RandDense(t, r, 2, 9, 7, 3))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.73, 1}, Overlapping: true}
	y, rows, cols := autodiff.FractionalAvgPool(x, a)
	if err := tape.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(y.Shape(), rows.Shape(), cols.Shape()) != "(2, 6, 4, 3) (7) (5)" || rows.Dtype() != tensor.Int64 {
		t.Fatalf("shapes %v %v %v, dtype %v", y.Shape(), rows.Shape(), cols.Shape(), rows.Dtype())
	}
	if p := autodiff.FractionalAvgPoolWithSequences(x, rows, cols, true); fpVals(t, p) != fpVals(t, y) {
		t.Fatal("FractionalAvgPoolWithSequences differs from FractionalAvgPool with its sequences")
	}
	dy := tape.Constant(testutil.RandDense(t, r, 2, 6, 4, 3))
	g, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{dy}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if fpVals(t, g[0]) != fpVals(t, autodiff.FractionalAvgPoolGrad([]int{2, 9, 7, 3}, dy, rows, cols, true)) {
		t.Fatal("typed FractionalAvgPoolGrad differs from the tape's gradient")
	}
	m, mr, mc := autodiff.FractionalMaxPool(x, a)
	g, err = tape.Grad([]autodiff.Value{m}, []autodiff.Value{x}, []autodiff.Value{dy}, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if fpVals(t, g[0]) != fpVals(t, autodiff.FractionalMaxPoolGrad(x, m, dy, mr, mc, true)) {
		t.Fatal("typed FractionalMaxPoolGrad differs from the tape's gradient")
	}
}

// TestFractionalPoolTapeSeed checks that zero seeds draw from the tape's
// source: tapes with the same seed replay the same sequences, different
// seeds give different ones, and explicit seeds ignore the tape.
func TestFractionalPoolTapeSeed(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	xd := testutil.RandDense(t, r, 1, 40, 40, 1)
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.44, 1}}
	seqs := func(seed int64, a forward.FractionalPoolAttrs) string {
		tape := autodiff.NewTape(autodiff.Seed(seed))
		_, rows, cols := autodiff.FractionalAvgPool(tape.Constant(xd), a)
		return fpVals(t, rows) + fpVals(t, cols)
	}
	if seqs(5, a) != seqs(5, a) {
		t.Fatal("the same tape seed gave different sequences")
	}
	distinct := map[string]bool{}
	for s := int64(1); s <= 5; s++ {
		distinct[seqs(s, a)] = true
	}
	if len(distinct) < 3 {
		t.Fatalf("5 tape seeds gave %d distinct sequence pairs", len(distinct))
	}
	fixed := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.44, 1}, Deterministic: true, Seed: 11, Seed2: 12}
	if seqs(1, fixed) != seqs(2, fixed) {
		t.Fatal("explicit seeds depend on the tape's seed")
	}
}

// TestFractionalPoolTypedErrors checks the tape-error contract: zero
// Values, values of two tapes and bad attrs are errors (on the tape, or on
// the results when no argument has a tape), never panics.
func TestFractionalPoolTypedErrors(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	xd := testutil.RandDense(t, r, 1, 6, 6, 1)
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}}
	// No tape anywhere.
	y, rows, cols := autodiff.FractionalAvgPool(autodiff.Value{}, a)
	for _, v := range []autodiff.Value{y, rows, cols} {
		if !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
			t.Fatalf("zero Value: %v", v.Err())
		}
	}
	if v := autodiff.FractionalAvgPoolGrad([]int{1, 6, 6, 1}, autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, false); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Values: %v", v.Err())
	}
	if v := autodiff.FractionalMaxPoolGrad(autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, autodiff.Value{}, false); !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero Values: %v", v.Err())
	}
	// A zero dy with sequences on a tape: an error on that tape.
	tape := autodiff.NewTape()
	_, rows, cols = autodiff.FractionalAvgPool(tape.Constant(xd), a)
	if v := autodiff.FractionalAvgPoolGrad([]int{1, 6, 6, 1}, autodiff.Value{}, rows, cols, false); v.Err() == nil ||
		!errors.Is(tape.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero dy: %v", tape.Err())
	}
	// Mixed tapes.
	t1, t2 := autodiff.NewTape(), autodiff.NewTape()
	_, r1, c1 := autodiff.FractionalMaxPool(t1.Constant(xd), a)
	if v := autodiff.FractionalAvgPoolWithSequences(t2.Constant(xd), r1, c1, false); v.Err() == nil || !errors.Is(t2.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("mixed tapes: %v", t2.Err())
	}
	// Bad attrs and shapes: the op's error, naming it.
	tape = autodiff.NewTape()
	autodiff.FractionalMaxPool(tape.Constant(xd), forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 0.5, 2, 1}})
	if !errors.Is(tape.Err(), autodiff.ErrInvalidArgument) || !strings.Contains(tape.Err().Error(), "FractionalMaxPool") {
		t.Fatalf("bad ratio: %v", tape.Err())
	}
	tape = autodiff.NewTape()
	_, rows, cols = autodiff.FractionalAvgPool(tape.Constant(xd), a)
	v := autodiff.FractionalAvgPoolGrad([]int{1, 6, 6}, tape.Constant(testutil.RandDense(t, r, 1, 3, 3, 1)), rows, cols, false)
	if v.Err() == nil || !errors.Is(tape.Err(), autodiff.ErrShape) || !strings.Contains(tape.Err().Error(), "FractionalAvgPoolGrad") {
		t.Fatalf("3-value shape: %v", tape.Err())
	}
}

// BenchmarkFractionalAvgPoolW9 is workload W9 of cmd/bench/README.md:
// FractionalAvgPool of an NHWC float32 [32, 32, 32, 64] input with ratio
// 1.44 (32 → 22), forward only and forward + backward (the gradient of a
// fixed upstream), on one thread and a reused tape: go test ./autodiff
// -run '^$' -bench W9.
func BenchmarkFractionalAvgPoolW9(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x32 := make([]float32, 32*32*32*64)
	for i := range x32 {
		x32[i] = float32(r.NormFloat64())
	}
	xd, _ := tensorx.New([]int{32, 32, 32, 64}, x32)
	u32 := make([]float32, 32*22*22*64)
	for i := range u32 {
		u32[i] = float32(r.NormFloat64())
	}
	ud, _ := tensorx.New([]int{32, 22, 22, 64}, u32)
	xp, err := autodiff.NewParam("x", xd)
	if err != nil {
		b.Fatal(err)
	}
	up, err := autodiff.NewParam("u", ud)
	if err != nil {
		b.Fatal(err)
	}
	up.Trainable = false
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.44, 1}, Deterministic: true, Seed: 1, Seed2: 2}
	for _, mode := range []string{"fwd", "fwdbwd"} {
		b.Run(mode, func(b *testing.B) {
			tape := autodiff.NewTape(autodiff.Threads(1))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tape.Reset()
				x := tape.Param(xp)
				y, _, _ := autodiff.FractionalAvgPool(x, a)
				if mode == "fwd" {
					if err := tape.Err(); err != nil {
						b.Fatal(err)
					}
					continue
				}
				if _, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{tape.Param(up)}, autodiff.GradOpts{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
