package forward

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/bnkern/bnref"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// ---------------------------------------------------------------------------
// Helpers.

// bnClose compares got with want elementwise: |got − want| <= atol·max|want|
// + atol + rtol·|want|. NaN matches NaN only.
func bnClose(t testing.TB, what string, got, want []float64, atol, rtol float64) {
	t.Helper()
	testutil.Close(t, what, got, want, testutil.Tol{Abs: atol, Rel: rtol, Scale: atol, NaN: true})
}

func bnAttrs(format string, training bool, eps, factor float32) FusedBatchNormAttrs {
	return FusedBatchNormAttrs{Epsilon: &eps, ExponentialAvgFactor: &factor, DataFormat: format, IsTraining: &training}
}

// ---------------------------------------------------------------------------
// Forward kernels against the references.

type bnMode struct {
	name     string
	training bool
	factor   float32
	stats    bool // pass running statistics with C elements (else [0])
}

var bnModes = []bnMode{
	{"train", true, 1, false},
	{"train-stats-f1", true, 1, true},
	{"train-f0.3", true, 0.3, true},
	{"infer", false, 1, true},
	{"infer-f0.5", false, 0.5, true},
}

func TestFusedBatchNormForwardGrid(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, gc := range bnref.Grid {
			for _, md := range bnModes {
				for _, op := range []string{bnOpV1, bnOpV3} {
					if op == bnOpV1 && len(gc.Shape) == 5 {
						continue
					}
					name := fmt.Sprintf("%v/%s/%s/%v/%s", dt, op, gc.Format, gc.Shape, md.name)
					t.Run(name, func(t *testing.T) {
						bnCheckForward(t, r, dt, op, gc, md)
					})
				}
			}
		}
	}
}

func bnCheckForward(t *testing.T, r *rand.Rand, dt tensor.Dtype, op string, gc bnref.Case, md bnMode) {
	n, _ := tensorx.Numel(gc.Shape)
	C, _ := bnref.Channel(gc.Shape, gc.Format)
	x := testutil.Round(dt, testutil.RandVals(r, n, 2, 1.5))
	scale := testutil.Round(dt, testutil.RandVals(r, C, 1, 0))
	offset := testutil.Round(dt, testutil.RandVals(r, C, 1, 0))
	mean, variance := []float64{}, []float64{}
	if md.stats {
		mean = testutil.Round(dt, testutil.RandVals(r, C, 1, 0.5))
		variance = testutil.Round(dt, testutil.RandVals(r, C, 0.2, 1.5))
	}
	eps := float32(1e-3)
	want := bnref.Forward(x, gc.Shape, gc.Format, scale, offset, mean, variance, float64(eps), float64(md.factor), md.training)
	atol, rtol := 1e-13, 1e-12
	if dt == tensor.Float32 {
		atol, rtol = 2e-6, 1e-5
	}
	var first []*tensor.Dense
	for _, threads := range []int{1, 3} {
		out, err := registrytest.Run(t, op, bnAttrs(gc.Format, md.training, eps, md.factor), threads,
			testutil.Dense(t, dt, gc.Shape, x), testutil.Dense(t, dt, []int{C}, scale), testutil.Dense(t, dt, []int{C}, offset),
			testutil.Dense(t, dt, []int{len(mean)}, mean), testutil.Dense(t, dt, []int{len(variance)}, variance))
		if err != nil {
			t.Fatal(err)
		}
		wantOut := 5
		if op == bnOpV3 {
			wantOut = 6
		}
		if len(out) != wantOut {
			t.Fatalf("%d outputs, want %d", len(out), wantOut)
		}
		testutil.ShapeIs(t, "y", out[0], gc.Shape...)
		for i := 1; i < 5; i++ {
			testutil.ShapeIs(t, fmt.Sprintf("output %d", i), out[i], C)
		}
		bnClose(t, "y", testutil.Float64s(t, out[0]), want.Y, atol, rtol)
		bnClose(t, "batch_mean", testutil.Float64s(t, out[1]), want.BatchMean, atol, rtol)
		bnClose(t, "batch_variance", testutil.Float64s(t, out[2]), want.BatchVar, atol, rtol)
		bnClose(t, "reserve_space_1", testutil.Float64s(t, out[3]), want.RS1, atol, rtol)
		bnClose(t, "reserve_space_2", testutil.Float64s(t, out[4]), want.RS2, atol, rtol)
		if op == bnOpV3 {
			testutil.ShapeIs(t, "reserve_space_3", out[5])
			if v := testutil.Float64s(t, out[5]); v[0] != 0 {
				t.Fatalf("reserve_space_3 = %v, want 0", v[0])
			}
		}
		if first == nil {
			first = out
			continue
		}
		for i := range out {
			if a, b := testutil.Float64s(t, first[i]), testutil.Float64s(t, out[i]); testutil.BitDiff(a, b, true) >= 0 {
				t.Fatalf("output %d differs between 1 and %d threads", i, threads)
			}
		}
	}
}

// TestFusedBatchNormLargeBatchNoDrift: float32 statistics of a large
// batch with a mean far from zero stay accurate (float64 accumulation).
func TestFusedBatchNormLargeBatchNoDrift(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	shape := []int{64, 64, 64, 2} // 131072 elements per channel
	n, _ := tensorx.Numel(shape)
	x := testutil.Round(tensor.Float32, testutil.RandVals(r, n, 0.5, 300))
	ref := bnref.Forward(x, shape, "NHWC", []float64{1, 1}, []float64{0, 0}, nil, nil, 1e-3, 1, true)
	empty := testutil.Dense(t, tensor.Float32, []int{0}, nil)
	one := testutil.Dense(t, tensor.Float32, []int{2}, []float64{1, 1})
	zero := testutil.Dense(t, tensor.Float32, []int{2}, []float64{0, 0})
	out, err := registrytest.Run(t, bnOpV3, bnAttrs("NHWC", true, 1e-3, 1), 2, testutil.Dense(t, tensor.Float32, shape, x), one, zero, empty, empty)
	if err != nil {
		t.Fatal(err)
	}
	// float32 rounding of the results only.
	bnClose(t, "reserve_space_1 (mean)", testutil.Float64s(t, out[3]), ref.RS1, 0, 1e-7)
	bnClose(t, "reserve_space_2 (biased variance)", testutil.Float64s(t, out[4]), ref.RS2, 0, 2e-7)
	bnClose(t, "batch_variance", testutil.Float64s(t, out[2]), ref.BatchVar, 0, 2e-7)
}

// ---------------------------------------------------------------------------
// Spec test vectors (§7).

func bnF32Vec(t *testing.T, shape []int, v ...float64) *tensor.Dense {
	return testutil.Dense(t, tensor.Float32, shape, v)
}

var bnFBN1X = []float64{5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15}
var bnFBN1Y = []float64{-3.86, -3.86, -1.51, -1.51, 0.83, 0.83, 3.17, 3.17, 5.51, 5.51, 7.86, 7.86}

func TestFusedBatchNormSpecVectors(t *testing.T) {
	x := bnF32Vec(t, []int{1, 1, 6, 2}, bnFBN1X...)
	scale := bnF32Vec(t, []int{2}, 4, 4)
	offset := bnF32Vec(t, []int{2}, 2, 2)
	empty := bnF32Vec(t, []int{0})
	t.Run("FBN1", func(t *testing.T) {
		for _, op := range []string{bnOpV1, bnOpV3} {
			out, err := registrytest.Run(t, op, bnAttrs("NHWC", true, 0.001, 1), 1, x, scale, offset, empty, empty)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Near(t, "y", testutil.Float64s(t, out[0]), bnFBN1Y, 0.01)
			testutil.Near(t, "batch_mean", testutil.Float64s(t, out[1]), []float64{10, 10}, 1e-5)
			testutil.Near(t, "batch_variance", testutil.Float64s(t, out[2]), []float64{14, 14}, 1e-5)
			testutil.Near(t, "reserve_space_1", testutil.Float64s(t, out[3]), []float64{10, 10}, 1e-5)
			testutil.Near(t, "reserve_space_2", testutil.Float64s(t, out[4]), []float64{70.0 / 6, 70.0 / 6}, 1e-5)
			// y[0] = (5−10)·4/sqrt(70/6+0.001)+2.
			testutil.Near(t, "y[0]", testutil.Float64s(t, out[0])[:1], []float64{-5*4/math.Sqrt(70.0/6+0.001) + 2}, 1e-5)
		}
	})
	t.Run("FBN2", func(t *testing.T) {
		out, err := registrytest.Run(t, bnOpV1, bnAttrs("NHWC", true, 0.001, 0.5), 1, x, scale, offset,
			bnF32Vec(t, []int{2}, 6, 6), bnF32Vec(t, []int{2}, 16, 16))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Near(t, "y", testutil.Float64s(t, out[0]), bnFBN1Y, 0.01)
		testutil.Near(t, "batch_mean", testutil.Float64s(t, out[1]), []float64{8, 8}, 1e-5)
		testutil.Near(t, "batch_variance", testutil.Float64s(t, out[2]), []float64{15, 15}, 1e-5)
	})
	for _, tc := range []struct {
		id     string
		factor float32
	}{{"FBN3", 1}, {"FBN4", 0.5}} {
		t.Run(tc.id, func(t *testing.T) {
			out, err := registrytest.Run(t, bnOpV1, bnAttrs("NHWC", false, 0.001, tc.factor), 1, x, scale, offset,
				bnF32Vec(t, []int{2}, 10, 10), bnF32Vec(t, []int{2}, 11.67, 11.67))
			if err != nil {
				t.Fatal(err)
			}
			testutil.Near(t, "y", testutil.Float64s(t, out[0]), bnFBN1Y, 0.01)
			testutil.Near(t, "batch_mean", testutil.Float64s(t, out[1]), []float64{10, 10}, 0)
			testutil.Near(t, "batch_variance", testutil.Float64s(t, out[2]), []float64{float64(float32(11.67)), float64(float32(11.67))}, 0)
		})
	}
	t.Run("FBN5", func(t *testing.T) {
		ex := bnF32Vec(t, []int{1, 1, 0, 0})
		for _, training := range []bool{true, false} {
			out, err := registrytest.Run(t, bnOpV3, bnAttrs("NHWC", training, 0.001, 1), 2, ex, empty, empty, empty, empty)
			if err != nil {
				t.Fatal(err)
			}
			testutil.ShapeIs(t, "y", out[0], 1, 1, 0, 0)
			testutil.ShapeIs(t, "batch_mean", out[1], 0)
			testutil.ShapeIs(t, "batch_variance", out[2], 0)
			testutil.ShapeIs(t, "reserve_space_3", out[5])
		}
		// Channels present, no elements: the statistics are NaN.
		ex = bnF32Vec(t, []int{0, 2, 2, 3})
		three := bnF32Vec(t, []int{3}, 1, 2, 3)
		out, err := registrytest.Run(t, bnOpV3, bnAttrs("NHWC", false, 0.001, 1), 1, ex, three, three, three, three)
		if err != nil {
			t.Fatal(err)
		}
		testutil.ShapeIs(t, "y", out[0], 0, 2, 2, 3)
		for i := 1; i < 3; i++ {
			for _, v := range testutil.Float64s(t, out[i]) {
				if !math.IsNaN(v) {
					t.Fatalf("output %d of an empty x: %v, want NaN", i, v)
				}
			}
		}
	})
}

// TestFusedBatchNormNonFinite: an infinite element gives an infinite
// mean and a NaN variance (TensorFlow's two-pass formula), wherever it is.
func TestFusedBatchNormNonFinite(t *testing.T) {
	for _, pos := range []int{0, 3} {
		v := []float64{1, 2, 3, 4}
		v[pos] = math.Inf(1)
		x := bnF32Vec(t, []int{4, 1, 1, 1}, v...)
		one := bnF32Vec(t, []int{1}, 1)
		empty := bnF32Vec(t, []int{0})
		out, err := registrytest.Run(t, bnOpV3, bnAttrs("NHWC", true, 0.001, 1), 1, x, one, one, empty, empty)
		if err != nil {
			t.Fatal(err)
		}
		if m := testutil.Float64s(t, out[3])[0]; !math.IsInf(m, 1) {
			t.Fatalf("Inf at %d: mean %v, want +Inf", pos, m)
		}
		if s := testutil.Float64s(t, out[4])[0]; !math.IsNaN(s) {
			t.Fatalf("Inf at %d: variance %v, want NaN", pos, s)
		}
	}
}

// TestFusedBatchNormUnreadStats: training with factor 1 never reads the
// running statistics (NaN there is harmless, any length is accepted).
func TestFusedBatchNormUnreadStats(t *testing.T) {
	x := bnF32Vec(t, []int{1, 1, 6, 2}, bnFBN1X...)
	scale := bnF32Vec(t, []int{2}, 4, 4)
	nan := bnF32Vec(t, []int{5}, math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN())
	out, err := registrytest.Run(t, bnOpV3, bnAttrs("NHWC", true, 0.001, 1), 1, x, scale, bnF32Vec(t, []int{2}, 2, 2), nan, nan)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Near(t, "y", testutil.Float64s(t, out[0]), bnFBN1Y, 0.01)
	testutil.Near(t, "batch_variance", testutil.Float64s(t, out[2]), []float64{14, 14}, 1e-5)
}

// bnUnwrapAttrs returns the FusedBatchNormAttrs parsed attrs hold
// (registry.ParsedAttrs or the struct itself).
func bnUnwrapAttrs(t *testing.T, a any) FusedBatchNormAttrs {
	t.Helper()
	if p, ok := a.(registry.ParsedAttrs); ok {
		a = p.Value
	}
	at, ok := a.(FusedBatchNormAttrs)
	if !ok {
		t.Fatalf("parsed attrs of type %T", a)
	}
	return at
}

func TestFusedBatchNormAttrDefaults(t *testing.T) {
	for _, op := range []string{bnOpV1, bnOpV3} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		a, err := def.ParseAttrs(map[string]any{"T": "float"})
		if err != nil {
			t.Fatal(err)
		}
		at := bnUnwrapAttrs(t, a)
		if at.Epsilon == nil || *at.Epsilon != float32(0.0001) || at.ExponentialAvgFactor == nil || *at.ExponentialAvgFactor != 1 ||
			at.DataFormat != "NHWC" || at.IsTraining == nil || !*at.IsTraining {
			t.Fatalf("%s defaults: %+v", op, at)
		}
		b, err := def.ParseAttrs(map[string]any{"epsilon": 0.0, "is_training": false, "exponential_avg_factor": 0.0, "data_format": "NCHW"})
		if err != nil {
			t.Fatal(err)
		}
		bt := bnUnwrapAttrs(t, b)
		if bt.Eps() != 0 || bt.AvgFactor() != 0 || bt.Training() || bt.Format() != "NCHW" {
			t.Fatalf("%s: explicit zero values lost: %+v", op, bt)
		}
		if _, err := def.ParseAttrs(map[string]any{"data_format": "NWHC"}); err == nil {
			t.Fatalf("%s accepted data_format NWHC", op)
		}
	}
	var z FusedBatchNormAttrs
	if z.Eps() != float32(0.0001) || z.AvgFactor() != 1 || !z.Training() || z.Format() != "NHWC" {
		t.Fatalf("zero attrs accessors: %v %v %v %v", z.Eps(), z.AvgFactor(), z.Training(), z.Format())
	}
	g := bnAttrs("NCHW", false, 0.5, 0.25).GradAttrs()
	if g.Eps() != 0.5 || g.Training() || g.Format() != "NCHW" {
		t.Fatalf("GradAttrs: %+v", g)
	}
	var zg FusedBatchNormGradAttrs
	if zg.Eps() != float32(0.0001) || !zg.Training() || zg.Format() != "NHWC" {
		t.Fatalf("zero grad attrs accessors: %v %v %v", zg.Eps(), zg.Training(), zg.Format())
	}
}

// ---------------------------------------------------------------------------
// Errors (spec §5).

type bnErrCase struct {
	name  string
	op    string
	attrs any
	in    []*tensor.Dense
	kind  error
	msg   string
}

func TestFusedBatchNormErrors(t *testing.T) {
	f := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.Dense(t, tensor.Float32, shape, make([]float64, n))
	}
	d := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.Dense(t, tensor.Float64, shape, make([]float64, n))
	}
	train := bnAttrs("NHWC", true, 1e-3, 1)
	trainF := bnAttrs("NHWC", true, 1e-3, 0.5)
	infer := bnAttrs("NHWC", false, 1e-3, 1)
	ia, sh, dty := registry.ErrInvalidArgument, registry.ErrShape, registry.ErrDtype
	x := f(2, 2, 2, 3)
	c3 := f(3)
	cases := []bnErrCase{
		{"x-rank3", bnOpV3, train, []*tensor.Dense{f(2, 4, 3), c3, c3, c3, c3}, ia, "input must be 4 or 5-dimensional"},
		{"x-rank2-infer", bnOpV3, infer, []*tensor.Dense{f(4, 3), c3, c3, c3, c3}, ia, "input must be 4 or 5-dimensional"},
		{"x-rank6", bnOpV3, train, []*tensor.Dense{f(1, 1, 1, 1, 1, 3), c3, c3, c3, c3}, ia, "input must be 4 or 5-dimensional"},
		{"v1-x-rank5", bnOpV1, train, []*tensor.Dense{f(1, 2, 2, 2, 3), c3, c3, c3, c3}, sh, "must be 4-dimensional"},
		{"v3-rank5-nhwc", bnOpV3, train, []*tensor.Dense{f(1, 2, 2, 2, 3), c3, c3, c3, c3}, sh, "must be 4-dimensional for data_format NHWC"},
		{"v3-rank4-ndhwc", bnOpV3, bnAttrs("NDHWC", true, 1e-3, 1), []*tensor.Dense{x, c3, c3, c3, c3}, sh, "must be 5-dimensional"},
		{"v1-ndhwc", bnOpV1, bnAttrs("NDHWC", true, 1e-3, 1), []*tensor.Dense{f(1, 2, 2, 2, 3), c3, c3, c3, c3}, ia, "Invalid data format"},
		{"bad-format", bnOpV3, bnAttrs("NWHC", true, 1e-3, 1), []*tensor.Dense{x, c3, c3, c3, c3}, ia, "data_format"},
		{"scale-2d", bnOpV3, train, []*tensor.Dense{x, f(1, 3), c3, c3, c3}, ia, "scale must be 1-dimensional"},
		{"offset-0d", bnOpV3, train, []*tensor.Dense{x, c3, f(), c3, c3}, ia, "offset must be 1-dimensional"},
		{"mean-2d-unused", bnOpV3, train, []*tensor.Dense{x, c3, c3, f(1, 0), c3}, ia, "estimated_mean must be 1-dimensional"},
		{"variance-2d-unused", bnOpV1, train, []*tensor.Dense{x, c3, c3, c3, f(3, 1)}, ia, "estimated_variance must be 1-dimensional"},
		{"scale-count", bnOpV3, train, []*tensor.Dense{x, f(2), c3, c3, c3}, ia, "scale must have the same number of elements as the channels of x, got 2 and 3"},
		{"offset-count", bnOpV1, train, []*tensor.Dense{x, c3, f(4), c3, c3}, ia, "offset must have the same number of elements as the channels of x, got 4 and 3"},
		{"infer-mean-count", bnOpV3, infer, []*tensor.Dense{x, c3, c3, f(0), c3}, ia, "When is_training=false, mean must have the same number of elements as the channels of x, got 0 and 3"},
		{"infer-variance-count", bnOpV1, infer, []*tensor.Dense{x, c3, c3, c3, f(2)}, ia, "When is_training=false, variance must have the same number of elements as the channels of x, got 2 and 3"},
		{"factor-mean-count", bnOpV3, trainF, []*tensor.Dense{x, c3, c3, f(0), f(0)}, ia, "When exponential_avg_factor != 1, mean must have the same number"},
		{"factor-variance-count", bnOpV3, trainF, []*tensor.Dense{x, c3, c3, c3, f(0)}, ia, "When exponential_avg_factor != 1, variance must have the same number"},
		{"nchw-scale-count", bnOpV3, bnAttrs("NCHW", true, 1e-3, 1), []*tensor.Dense{x, c3, c3, c3, c3}, ia, "got 3 and 2"},
		{"dtype-scale", bnOpV3, train, []*tensor.Dense{x, d(3), c3, c3, c3}, dty, "scale"},
		{"dtype-variance", bnOpV1, train, []*tensor.Dense{d(2, 2, 2, 3), d(3), d(3), d(3), f(3)}, dty, "variance"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registrytest.Run(t, tc.op, tc.attrs, 2, tc.in...)
			testutil.WantErr(t, err, tc.kind, tc.msg, tc.op)
		})
	}
}

func TestFusedBatchNormSamples(t *testing.T) {
	for _, op := range []string{bnOpV1, bnOpV3} {
		registrytest.RunSamples(t, op, rand.New(rand.NewSource(1)), 6, nil)
	}
}

// ---------------------------------------------------------------------------
// Benchmark: workload W7 (FusedBatchNormV3 training, N32 56x56 C64 NHWC
// float32), forward, at the benchmark's -cpu thread count. GB/s counts the
// tensor passes of bench_torch.py: fwd 2 (package backward benchmarks
// fwdbwd).

const bnW7Bytes = 32 * 56 * 56 * 64 * 4

func bnBenchW7(b *testing.B) {
	shape := []int{32, 56, 56, 64}
	r := rand.New(rand.NewSource(1))
	n := 32 * 56 * 56 * 64
	x := testutil.Dense(b, tensor.Float32, shape, testutil.RandVals(r, n, 1, 0))
	scale := testutil.Dense(b, tensor.Float32, []int{64}, testutil.RandVals(r, 64, 1, 1))
	offset := testutil.Dense(b, tensor.Float32, []int{64}, testutil.RandVals(r, 64, 1, 0))
	empty := testutil.Dense(b, tensor.Float32, []int{0}, nil)
	fdef, _ := registry.Lookup(bnOpV3)
	alloc := &testutil.PoolAlloc{}
	threads := runtime.GOMAXPROCS(0)
	kc := &registry.KernelCtx{Alloc: alloc, Threads: threads}
	fa, err := fdef.NormalizeAttrs(bnAttrs("NHWC", true, 0.001, 1))
	if err != nil {
		b.Fatal(err)
	}
	passes := 2.0
	step := func() {
		out, err := registry.RunNormalized(fdef, kc, fa, []*tensor.Dense{x, scale, offset, empty, empty})
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range out {
			alloc.Release(d)
		}
	}
	testutil.BenchBytes(b, passes*bnW7Bytes, step)
}

// BenchmarkFusedBatchNormW7Fwd is W7's fwd mode.
func BenchmarkFusedBatchNormW7Fwd(b *testing.B) { bnBenchW7(b) }
