package backward_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fracpool"
	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of the fractional pooling family's gradient ops and gradients
// that concern the whole family, and the naive references (written from
// the spec, §4 and §5, one output element at a time) the op tests of
// fractional_avg_pool_test.go and fractional_max_pool_test.go compare
// with.

var fpOps = []string{
	"FractionalAvgPool", "FractionalAvgPoolGrad", "tapegrad.FractionalAvgPoolWithSequences",
	"FractionalMaxPool", "FractionalMaxPoolGrad", "tapegrad.FractionalMaxPoolGradGrad",
}

// fpSpread returns values pairwise at least 0.04 apart (no ties within a
// finite-difference step).
func fpSpread(t *testing.T, r *rand.Rand, shape ...int) *tensor.Dense {
	t.Helper()
	n, _ := tensorx.Numel(shape)
	v := make([]float64, n)
	for i, p := range r.Perm(n) {
		v[i] = (float64(p)-float64(n)/2)*0.05 + 0.01*r.Float64()
	}
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFractionalPoolGradcheck checks first- and second-order gradients of
// the six ops over every configuration of their sample generators (both
// sequence modes, both cell kinds, fixed and context-drawn seeds,
// sequences longer than needed, uncovered input, single cells; the
// max-pool ops away from ties).
func TestFractionalPoolGradcheck(t *testing.T) {
	checkSamples(t, fpOps, []int64{7}, 3, 5)
}

// TestFractionalPoolGradientOps checks that the registered gradients are
// built from the ops TensorFlow uses, with the forward's own sequences:
// the gradient of FractionalAvgPool equals FractionalAvgPoolGrad applied
// directly, that of FractionalMaxPool FractionalMaxPoolGrad.
func TestFractionalPoolGradientOps(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	for _, ov := range []bool{false, true} {
		tp := autodiff.NewTape(autodiff.Seed(5))
		x := tp.Watch(fpSpread(t, r, 2, 9, 7, 3))
		dy := testutil.RandDense(t, r, 2, 6, 4, 3)
		a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.75, 1}, Overlapping: ov}
		y, rows, cols := autodiff.FractionalAvgPool(x, a)
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{tp.Constant(dy)}, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		direct := autodiff.FractionalAvgPoolGrad([]int{2, 9, 7, 3}, tp.Constant(dy), rows, cols, ov)
		fpSame(t, "avg", g[0], direct)
		m, mr, mc := autodiff.FractionalMaxPool(x, a)
		g, err = tp.Grad([]autodiff.Value{m}, []autodiff.Value{x}, []autodiff.Value{tp.Constant(dy)}, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		fpSame(t, "max", g[0], autodiff.FractionalMaxPoolGrad(x, m, tp.Constant(dy), mr, mc, ov))
		// The sequence outputs take no gradient: asking for one through them
		// alone gives zeros.
		if rows.Dtype() != tensor.Int64 || cols.Dtype() != tensor.Int64 {
			t.Fatalf("sequence dtypes %v %v", rows.Dtype(), cols.Dtype())
		}
	}
}

func fpSame(t *testing.T, what string, a, b autodiff.Value) {
	t.Helper()
	x, y := testutil.Values(t, a), testutil.Values(t, b)
	if len(x) != len(y) {
		t.Fatalf("%s: %d values vs %d", what, len(x), len(y))
	}
	if i := testutil.BitDiff(x, y, false); i >= 0 {
		t.Fatalf("%s: element %d: %v vs %v", what, i, x[i], y[i])
	}
}

// TestFractionalPoolIntegerGradients checks that integer inputs get no
// gradient: an integer pooling on a tape with a watched float elsewhere
// records nothing to differentiate, and the sequences are integers.
func TestFractionalPoolIntegerGradients(t *testing.T) {
	tp := autodiff.NewTape()
	xi, _ := tensorx.New([]int{1, 4, 4, 1}, make([]int32, 16))
	x := tp.Watch(xi)
	y, _, _ := autodiff.FractionalAvgPool(x, forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}})
	if y.Dtype() != tensor.Int32 {
		t.Fatalf("int32 pooling: dtype %v", y.Dtype())
	}
	// The tape refuses integer targets: an error, not a panic.
	if _, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{}); err == nil {
		t.Fatal("gradient of an int32 pooling accepted")
	}
	// The gradient function returns nil for the integer inputs of the grad
	// op (shape and sequences).
	def, _ := registry.Lookup("FractionalAvgPoolGrad")
	samples, err := gradcheck.OpSamples(def, 1, 1)
	if err != nil || len(samples) != 1 {
		t.Fatal(err)
	}
	s := samples[0]
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return tp.Apply("FractionalAvgPoolGrad", s.Attrs, in...)
	}
	if err := gradcheck.Check(f, s.Inputs, gradcheck.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestFractionalPoolGradErrors checks that bad inputs reaching the
// gradient ops through the tape are errors naming the op.
func TestFractionalPoolGradErrors(t *testing.T) {
	tp := autodiff.NewTape()
	r := rand.New(rand.NewSource(25))
	dy := tp.Watch(testutil.RandDense(t, r, 1, 2, 2, 1))
	rows := tp.Constant(testutil.Int64s(t, 0, 2, 9)) // beyond the input
	cols := tp.Constant(testutil.Int64s(t, 0, 2, 4))
	v := autodiff.FractionalAvgPoolGrad([]int{1, 4, 4, 1}, dy, rows, cols, false)
	if v.Err() == nil || !errors.Is(tp.Err(), autodiff.ErrInvalidArgument) || !strings.Contains(tp.Err().Error(), "FractionalAvgPoolGrad") {
		t.Fatalf("bad sequence: %v", tp.Err())
	}
}

// fpInt64s returns an int64 vector.
func fpInt64s(v ...int64) *tensor.Dense {
	d, _ := tensorx.New([]int{len(v)}, append([]int64(nil), v...))
	return d
}

// fpSampleSeq draws the pooling sequence of an axis with a fixed-seed
// generator.
func fpSampleSeq(in, out int, pseudoRandom bool, seed uint64) []int64 {
	g := philox.New(seed, seed+1)
	s := make([]int64, out+1)
	fracpool.Sequence(s, in, out, &g, pseudoRandom)
	return s
}

// fpForwardCase is one configuration of the forward grid.
type fpForwardCase struct {
	shape []int
	attrs forward.FractionalPoolAttrs
}

// fpForwardGrid is testutil.FracPoolGrid with its attrs.
func fpForwardGrid() []fpForwardCase {
	var cs []fpForwardCase
	for _, c := range testutil.FracPoolGrid() {
		cs = append(cs, fpForwardCase{c.Shape, forward.FractionalPoolAttrs{PoolingRatio: c.Ratio, PseudoRandom: c.PseudoRandom, Overlapping: c.Overlapping,
			Deterministic: true, Seed: c.Seed, Seed2: c.Seed * 3}})
	}
	return cs
}

type fpErrCase struct {
	name string
	op   string
	attr any
	in   []*tensor.Dense
	kind error
	msg  string
}

func fpErrCases(t *testing.T) []fpErrCase {
	f64 := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.New(t, shape, make([]float64, n))
	}
	x := f64(1, 6, 6, 2)
	ga := forward.FractionalPoolGradAttrs{Overlapping: true}
	st := fpInt64s(2, 2, 2, 2)
	dy := testutil.New(t, []int{1, 2, 3, 2}, testutil.Arange(12))
	var cs []fpErrCase
	ag := "FractionalAvgPoolGrad"
	cs = append(cs,
		fpErrCase{"FAPE4", ag, ga, []*tensor.Dense{st, dy, fpInt64s(-10, 1, 2, 3), fpInt64s(1, 2, 3, 4)}, registry.ErrInvalidArgument, "Row sequence tensor values must not be negative"},
		fpErrCase{"FAPE5", ag, ga, []*tensor.Dense{st, dy, fpInt64s(10, 1, 2, 3), fpInt64s(1, 2, -3, 4)}, registry.ErrInvalidArgument, "Column sequence tensor values must not be negative"},
		fpErrCase{"FAPE6", ag, ga, []*tensor.Dense{fpInt64s(-1879048192, -1879048192, -1879048192, -1879048192), f64(0, 0, 0, 0), fpInt64s(1, 1, 1, 1), fpInt64s(1, 1, 1, 1)},
			registry.ErrInvalidArgument, "out_backprop must be positive for all dimension"},
		fpErrCase{"shape-len", ag, ga, []*tensor.Dense{fpInt64s(2, 2, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrShape, "original input tensor shape must be1-dimensional and 4 elements"},
		fpErrCase{"shape-dtype", ag, ga, []*tensor.Dense{testutil.New(t, []int{4}, []int32{1, 2, 3, 2}), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrDtype, "orig_input_tensor_shape must be int64"},
		fpErrCase{"dy-rank", ag, ga, []*tensor.Dense{st, f64(2, 3, 2), fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrShape, "out_backprop must be 4-dimensional"},
		fpErrCase{"rows-short", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "row_seq_tensor must have at least 3 elements, but got 2"},
		fpErrCase{"cols-short", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2)}, registry.ErrInvalidArgument, "col_seq_tensor must have at least 4 elements, but got 3"},
		fpErrCase{"rows-rank", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, testutil.New(t, []int{1, 3}, []int64{0, 1, 2}), fpInt64s(0, 1, 2, 3)}, registry.ErrShape, "row_pooling_sequence must be a vector"},
		fpErrCase{"rows-dtype", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, testutil.New(t, []int{3}, []int32{0, 1, 2}), fpInt64s(0, 1, 2, 3)}, registry.ErrDtype, "row_pooling_sequence must be int64"},
		fpErrCase{"zero-rows", ag, ga, []*tensor.Dense{fpInt64s(1, 0, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "Rows dimension of input must not be 0"},
		fpErrCase{"zero-depth", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 0), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "Depth dimension of input must not be 0"},
		fpErrCase{"negative-dim", ag, ga, []*tensor.Dense{fpInt64s(1, -4, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "Expected a non-negative size, got -4"},
		fpErrCase{"too-large", ag, ga, []*tensor.Dense{fpInt64s(1, 1<<40, 1<<40, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "The total elements specified by orig_input_tensor_shape is too large"},
		fpErrCase{"batch-too-large", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), testutil.New(t, []int{2, 2, 3, 2}, testutil.Arange(24)), fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)},
			registry.ErrInvalidArgument, "its batch must not exceed the input's"},
		fpErrCase{"depth-mismatch", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 3), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "its depth must equal it"},
		fpErrCase{"beyond-input", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1, 5), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "row_pooling_sequence entry 2 is 5, beyond the input size 4"},
		fpErrCase{"start-beyond-input", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(4, 5, 6, 7)}, registry.ErrInvalidArgument, "col_pooling_sequence entry 1 is 5, beyond"},
		fpErrCase{"not-increasing", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 2, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "row_pooling_sequence must be strictly increasing"},
		fpErrCase{"decreasing", ag, forward.FractionalPoolGradAttrs{}, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 3, 1), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "strictly increasing"},
	)
	sq := "tapegrad.FractionalAvgPoolWithSequences"
	sa := forward.FractionalPoolSeqAttrs{}
	cs = append(cs,
		fpErrCase{"seq-rank", sq, sa, []*tensor.Dense{f64(4, 4, 2), fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrShape, "value must be 4-dimensional"},
		fpErrCase{"seq-one-entry", sq, sa, []*tensor.Dense{x, fpInt64s(0), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "at least 2 entries"},
		fpErrCase{"seq-short-for-attr", sq, forward.FractionalPoolSeqAttrs{OutputRows: 3}, []*tensor.Dense{x, fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "must have at least 4 elements"},
		fpErrCase{"seq-negative-attr", sq, forward.FractionalPoolSeqAttrs{OutputCols: -1}, []*tensor.Dense{x, fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "must be >= 0"},
		fpErrCase{"seq-batch-attr", sq, forward.FractionalPoolSeqAttrs{OutputBatch: 2}, []*tensor.Dense{x, fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "output_batch 2 exceeds the batch 1"},
		fpErrCase{"seq-negative", sq, sa, []*tensor.Dense{x, fpInt64s(-1, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "Row sequence tensor values must not be negative"},
		fpErrCase{"seq-beyond", sq, sa, []*tensor.Dense{x, fpInt64s(0, 2, 7), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "beyond the input size 6"},
		fpErrCase{"seq-dtype", sq, sa, []*tensor.Dense{x, fpInt64s(0, 2, 4), testutil.New(t, []int{3}, []float64{0, 2, 4})}, registry.ErrDtype, "col_pooling_sequence must be int64"},
	)
	xm := testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 5, 5, 2})
	ym := testutil.New(t, []int{1, 1, 1, 1}, []float64{5})
	dm := testutil.New(t, []int{1, 1, 1, 1}, []float64{1})
	r2 := fpInt64s(0, 2)
	for _, op := range []string{"FractionalMaxPoolGrad", "tapegrad.FractionalMaxPoolGradGrad"} {
		g := dm
		if op == "tapegrad.FractionalMaxPoolGradGrad" {
			g = testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 2, 3, 4})
		}
		cs = append(cs,
			fpErrCase{"x-rank", op, ga, []*tensor.Dense{f64(2, 2, 1), ym, g, r2, r2}, registry.ErrShape, "orig_input should be a tensor of rank 4"},
			fpErrCase{"x-empty", op, ga, []*tensor.Dense{f64(0, 2, 2, 1), ym, g, r2, r2}, registry.ErrInvalidArgument, "orig_input must not be empty"},
			fpErrCase{"y-rank", op, ga, []*tensor.Dense{xm, f64(1, 1, 1), g, r2, r2}, registry.ErrShape, "orig_output should be a tensor of rank 4"},
			fpErrCase{"y-empty", op, ga, []*tensor.Dense{xm, f64(1, 0, 1, 1), g, r2, r2}, registry.ErrInvalidArgument, "orig_output must not be empty"},
			fpErrCase{"y-dtype", op, ga, []*tensor.Dense{xm, testutil.New(t, []int{1, 1, 1, 1}, []float32{5}), g, r2, r2}, registry.ErrDtype, "input 1 has dtype float32"},
			fpErrCase{"y-batch", op, ga, []*tensor.Dense{xm, f64(2, 1, 1, 1), g, r2, r2}, registry.ErrInvalidArgument, "batch or depth"},
			fpErrCase{"g-shape", op, ga, []*tensor.Dense{xm, ym, f64(1, 1, 2, 1), r2, r2}, registry.ErrShape, "must have shape"},
			fpErrCase{"rows-short", op, ga, []*tensor.Dense{xm, ym, g, fpInt64s(0), r2}, registry.ErrInvalidArgument, "row_seq_tensor must have at least 2 elements"},
			fpErrCase{"negative", op, ga, []*tensor.Dense{xm, ym, g, r2, fpInt64s(-1, 2)}, registry.ErrInvalidArgument, "Column sequence tensor values must not be negative"},
			fpErrCase{"beyond", op, ga, []*tensor.Dense{xm, ym, g, fpInt64s(0, 3), r2}, registry.ErrInvalidArgument, "beyond the input size 2"},
			fpErrCase{"stale-output", op, ga, []*tensor.Dense{xm, testutil.New(t, []int{1, 1, 1, 1}, []float64{4}), g, r2, r2}, registry.ErrInvalidArgument, "tensor_out_dup is not the same as tensor_out"},
		)
	}
	return cs
}

// TestFractionalPoolErrors checks every spec'd error (FAPE1–FAPE6 and §7)
// and tapegrad's extra validation: an error wrapping the right sentinel,
// naming the op, never a panic.
func TestFractionalPoolErrors(t *testing.T) {
	for _, c := range fpErrCases(t) {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.RunKC(t, registrytest.SeededKC(2, 1), c.op, c.attr, c.in...)
			testutil.WantErr(t, err, c.kind, c.op, c.msg)
		})
	}
}

// BenchmarkFractionalPoolW9Kernels times the kernels of workload W9
// (cmd/bench/README.md: float32 NHWC [32,32,32,64], ratio 1.44 → 22x22) on
// one thread with recycled buffers: FractionalAvgPool forward, its
// gradient op (non-overlapping and overlapping), and FractionalMaxPool.
func BenchmarkFractionalPoolW9Kernels(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x32 := make([]float32, 32*32*32*64)
	for i := range x32 {
		x32[i] = float32(r.NormFloat64())
	}
	x, _ := tensorx.New([]int{32, 32, 32, 64}, x32)
	dy32 := make([]float32, 32*22*22*64)
	for i := range dy32 {
		dy32[i] = float32(r.NormFloat64())
	}
	dy, _ := tensorx.New([]int{32, 22, 22, 64}, dy32)
	for _, ov := range []bool{false, true} {
		a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.44, 1}, Overlapping: ov, Deterministic: true, Seed: 1, Seed2: 2}
		al := &testutil.PoolAlloc{}
		kc := &registry.KernelCtx{Alloc: al, Threads: 1}
		avg, _ := registry.Lookup("FractionalAvgPool")
		grad, _ := registry.Lookup("FractionalAvgPoolGrad")
		mx, _ := registry.Lookup("FractionalMaxPool")
		fwd, err := registry.Run(avg, kc, a, []*tensor.Dense{x})
		if err != nil {
			b.Fatal(err)
		}
		st := fpInt64s(32, 32, 32, 64)
		run := func(b *testing.B, def *registry.OpDef, attrs any, in ...*tensor.Dense) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				out, err := registry.Run(def, kc, attrs, in)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range out {
					al.Release(o)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		}
		sfx := fmt.Sprintf("/overlapping=%v", ov)
		b.Run("avg"+sfx, func(b *testing.B) { run(b, avg, a, x) })
		b.Run("avggrad"+sfx, func(b *testing.B) {
			run(b, grad, forward.FractionalPoolGradAttrs{Overlapping: ov}, st, dy, fwd[1], fwd[2])
		})
		b.Run("max"+sfx, func(b *testing.B) { run(b, mx, a, x) })
	}
}

// TestFractionalPoolRobustness feeds random shapes, sequences and attrs
// to every op of the family: each call returns a result or an error that
// is not internal (no kernel panic), and results of the gradient ops only
// come from sequences that pass validation.
func TestFractionalPoolRobustness(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	dim := func() int {
		if r.Intn(12) == 0 {
			return 0
		}
		return 1 + r.Intn(5)
	}
	shape := func() []int {
		s := make([]int, 3+r.Intn(3)) // ranks 3..5, mostly 4
		if len(s) == 5 {
			s = s[:4]
		}
		for i := range s {
			s[i] = dim()
		}
		return s
	}
	f64 := func(s []int) *tensor.Dense {
		n, _ := tensorx.Numel(s)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.Intn(7) - 3)
		}
		return testutil.New(t, s, v)
	}
	seq := func() *tensor.Dense {
		v := make([]int64, r.Intn(6))
		if r.Intn(2) == 0 { // increasing from 0, steps 1 or 2
			for i := 1; i < len(v); i++ {
				v[i] = v[i-1] + 1 + int64(r.Intn(2))
			}
			return testutil.New(t, []int{len(v)}, v)
		}
		for i := range v {
			v[i] = int64(r.Intn(9) - 2)
		}
		return testutil.New(t, []int{len(v)}, v)
	}
	ratio := func() []float32 {
		v := make([]float32, 3+r.Intn(2))
		for i := range v {
			v[i] = []float32{1, 1, 1, 1.5, 2, 0.5, 3}[r.Intn(7)]
		}
		return v
	}
	ok := 0
	for i := 0; i < 3000; i++ {
		ov := r.Intn(2) == 0
		var op string
		var attrs any
		var in []*tensor.Dense
		switch r.Intn(6) {
		case 0, 1:
			op = []string{"FractionalAvgPool", "FractionalMaxPool"}[r.Intn(2)]
			attrs = forward.FractionalPoolAttrs{PoolingRatio: ratio(), PseudoRandom: r.Intn(2) == 0, Overlapping: ov,
				Deterministic: r.Intn(2) == 0, Seed: int64(r.Intn(3))}
			in = []*tensor.Dense{f64(shape())}
		case 2:
			op, attrs = "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: ov}
			st := make([]int64, 3+r.Intn(2))
			for j := range st {
				st[j] = int64(r.Intn(6) - 1)
			}
			dy := f64(shape())
			if r.Intn(2) == 0 && dy.Dims() == 4 { // a plausible original shape half the time
				s := dy.Shape()
				st = []int64{int64(s[0]), int64(2 * s[1]), int64(2 * s[2]), int64(s[3])}
			}
			in = []*tensor.Dense{fpInt64s(st...), dy, seq(), seq()}
		case 3:
			op, attrs = "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{Overlapping: ov, OutputRows: r.Intn(3), OutputBatch: r.Intn(2)}
			in = []*tensor.Dense{f64(shape()), seq(), seq()}
		default:
			op = []string{"FractionalMaxPoolGrad", "tapegrad.FractionalMaxPoolGradGrad"}[r.Intn(2)]
			attrs = forward.FractionalPoolGradAttrs{Overlapping: ov}
			x := f64(shape())
			in = []*tensor.Dense{x, f64(shape()), f64(shape()), seq(), seq()}
			if r.Intn(2) == 0 && x.Dims() == 4 { // a consistent orig_output half the time
				res, err := registrytest.RunKC(t, registrytest.SeededKC(1, 1), "FractionalMaxPool", forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, Overlapping: ov}, x)
				if err == nil {
					g := in[2]
					if op == "FractionalMaxPoolGrad" {
						g = f64(tensorx.Shape(res[0]))
					} else {
						g = f64(tensorx.Shape(x))
					}
					in = []*tensor.Dense{x, res[0], g, res[1], res[2]}
				}
			}
		}
		out, err := registrytest.RunKC(t, registrytest.SeededKC(1+r.Intn(3), int64(i)), op, attrs, in...)
		if errors.Is(err, registry.ErrInternal) {
			t.Fatalf("case %d %s %+v: internal error %v", i, op, attrs, err)
		}
		if err == nil {
			ok++
			if len(out) == 0 || out[0] == nil {
				t.Fatalf("case %d %s: no output", i, op)
			}
		}
	}
	if ok == 0 {
		t.Fatal("no random case succeeded")
	}
	t.Logf("%d of 3000 random cases ran, the others were refused", ok)
}
