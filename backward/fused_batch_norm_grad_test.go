package backward_test

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/bnkern"
	"github.com/tapegrad/tapegrad/internal/bnkern/bnref"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of the gradient ops FusedBatchNormGrad and FusedBatchNormGradV3
// (their kernels, registered in this package) against the naive float64
// references of package bnref, across thread counts, with the assembly
// and the Go loops of package bnkern.

// Op names of the family.
const (
	bnOpV3     = "FusedBatchNormV3"
	bnOpGradV1 = "FusedBatchNormGrad"
	bnOpGradV3 = "FusedBatchNormGradV3"
)

// bnClose compares got with want elementwise: |got − want| <= atol·max|want|
// + atol + rtol·|want|. NaN matches NaN only.
func bnClose(t testing.TB, what string, got, want []float64, atol, rtol float64) {
	t.Helper()
	testutil.Close(t, what, got, want, testutil.Tol{Abs: atol, Rel: rtol, Scale: atol, NaN: true})
}

func bnAttrs(format string, training bool, eps, factor float32) forward.FusedBatchNormAttrs {
	return forward.FusedBatchNormAttrs{Epsilon: &eps, ExponentialAvgFactor: &factor, DataFormat: format, IsTraining: &training}
}

func bnGAttrs(format string, training bool, eps float32) forward.FusedBatchNormGradAttrs {
	return forward.FusedBatchNormGradAttrs{Epsilon: &eps, DataFormat: format, IsTraining: &training}
}

func bnF32Vec(t *testing.T, shape []int, v ...float64) *tensor.Dense {
	return testutil.Dense(t, tensor.Float32, shape, v)
}

func TestFusedBatchNormGradGrid(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, gc := range bnref.Grid {
			for _, training := range []bool{true, false} {
				for _, op := range []string{bnOpGradV1, bnOpGradV3} {
					if op == bnOpGradV1 && len(gc.Shape) == 5 {
						continue
					}
					name := fmt.Sprintf("%v/%s/%s/%v/training=%v", dt, op, gc.Format, gc.Shape, training)
					t.Run(name, func(t *testing.T) {
						bnCheckGrad(t, r, dt, op, gc, training)
					})
				}
			}
		}
	}
}

func bnCheckGrad(t *testing.T, r *rand.Rand, dt tensor.Dtype, op string, gc bnref.Case, training bool) {
	n, _ := tensorx.Numel(gc.Shape)
	C, _ := bnref.Channel(gc.Shape, gc.Format)
	x := testutil.Round(dt, testutil.RandVals(r, n, 2, 1.5))
	dy := testutil.Round(dt, testutil.RandVals(r, n, 1, 0.2))
	scale := testutil.Round(dt, testutil.RandVals(r, C, 1, 0))
	var m, v []float64
	if training {
		// The forward's reserve spaces: batch mean and biased variance.
		ref := bnref.Forward(x, gc.Shape, gc.Format, scale, scale, nil, nil, 0, 1, true)
		m, v = testutil.Round(dt, ref.RS1), testutil.Round(dt, ref.RS2)
	} else {
		m = testutil.Round(dt, testutil.RandVals(r, C, 1, 0.5))
		v = testutil.Round(dt, testutil.RandVals(r, C, 0.2, 1.5))
	}
	eps := float32(1e-3)
	wdx, wds, wdo := bnref.Grad(dy, x, gc.Shape, gc.Format, scale, m, v, float64(eps), training)
	atol, rtol := 1e-12, 1e-11
	if dt == tensor.Float32 {
		atol, rtol = 1e-5, 1e-4
	}
	var first []*tensor.Dense
	for _, threads := range []int{1, 3} {
		in := []*tensor.Dense{testutil.Dense(t, dt, gc.Shape, dy), testutil.Dense(t, dt, gc.Shape, x), testutil.Dense(t, dt, []int{C}, scale),
			testutil.Dense(t, dt, []int{C}, m), testutil.Dense(t, dt, []int{C}, v)}
		if op == bnOpGradV3 {
			in = append(in, testutil.Dense(t, dt, nil, []float64{0}))
		}
		out, err := registrytest.Run(t, op, bnGAttrs(gc.Format, training, eps), threads, in...)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 5 {
			t.Fatalf("%d outputs, want 5", len(out))
		}
		testutil.ShapeIs(t, "x_backprop", out[0], gc.Shape...)
		testutil.ShapeIs(t, "scale_backprop", out[1], C)
		testutil.ShapeIs(t, "offset_backprop", out[2], C)
		testutil.ShapeIs(t, "output 3", out[3], 0)
		testutil.ShapeIs(t, "output 4", out[4], 0)
		bnClose(t, "x_backprop", testutil.Float64s(t, out[0]), wdx, atol, rtol)
		bnClose(t, "scale_backprop", testutil.Float64s(t, out[1]), wds, atol, rtol)
		bnClose(t, "offset_backprop", testutil.Float64s(t, out[2]), wdo, atol, rtol)
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

// TestFusedBatchNormThreadsBitIdentical runs a shape with many reduction
// chunks on several thread counts.
func TestFusedBatchNormThreadsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, format := range []string{"NHWC", "NCHW"} {
		shape := []int{16, 20, 24, 12}
		n, _ := tensorx.Numel(shape)
		C, _ := bnref.Channel(shape, format)
		x := testutil.Dense(t, tensor.Float32, shape, testutil.RandVals(r, n, 3, 1))
		dy := testutil.Dense(t, tensor.Float32, shape, testutil.RandVals(r, n, 1, 0))
		scale := testutil.Dense(t, tensor.Float32, []int{C}, testutil.RandVals(r, C, 1, 1))
		empty := testutil.Dense(t, tensor.Float32, []int{0}, nil)
		var ref [][]float64
		for _, threads := range []int{1, 2, 3, 8} {
			fw, err := registrytest.Run(t, bnOpV3, bnAttrs(format, true, 1e-3, 1), threads, x, scale, scale, empty, empty)
			if err != nil {
				t.Fatal(err)
			}
			gr, err := registrytest.Run(t, bnOpGradV3, bnGAttrs(format, true, 1e-3), threads, dy, x, scale, fw[3], fw[4], fw[5])
			if err != nil {
				t.Fatal(err)
			}
			gi, err := registrytest.Run(t, bnOpGradV3, bnGAttrs(format, false, 1e-3), threads, dy, x, scale, fw[3], fw[4], fw[5])
			if err != nil {
				t.Fatal(err)
			}
			var got [][]float64
			for _, d := range append(append(fw, gr...), gi...) {
				got = append(got, testutil.Float64s(t, d))
			}
			if ref == nil {
				ref = got
				continue
			}
			for i := range got {
				if testutil.BitDiff(ref[i], got[i], true) >= 0 {
					t.Fatalf("%s: result %d differs between 1 and %d threads", format, i, threads)
				}
			}
		}
	}
}

// bnRunAll runs the training forward, the training gradient (from the
// forward's reserve spaces) and the inference forward and gradient (with
// mean m and variance v) on float32 data, and returns every output as
// float64.
func bnRunAll(t *testing.T, threads int, format string, shape []int, x, dy, scale, offset, m, v *tensor.Dense) [][]float64 {
	t.Helper()
	empty := testutil.Dense(t, tensor.Float32, []int{0}, nil)
	fw, err := registrytest.Run(t, bnOpV3, bnAttrs(format, true, 1e-3, 1), threads, x, scale, offset, empty, empty)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := registrytest.Run(t, bnOpV3, bnAttrs(format, false, 1e-3, 1), threads, x, scale, offset, m, v)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := registrytest.Run(t, bnOpGradV3, bnGAttrs(format, true, 1e-3), threads, dy, x, scale, fw[3], fw[4], fw[5])
	if err != nil {
		t.Fatal(err)
	}
	gi, err := registrytest.Run(t, bnOpGradV3, bnGAttrs(format, false, 1e-3), threads, dy, x, scale, m, v, fw[5])
	if err != nil {
		t.Fatal(err)
	}
	var got [][]float64
	for _, d := range append(append(append(fw, fi...), gr...), gi...) {
		got = append(got, testutil.Float64s(t, d))
	}
	return got
}

// withBnkern runs fn with the block kernels of package bnkern (where the
// CPU has them) or with its generic Go loops.
func withBnkern(asm bool, fn func()) {
	if asm {
		fn()
		return
	}
	bnkern.WithGoLoops(fn)
}

// TestFusedBatchNormAsmMatchesGo: the float32 channels-last paths give
// bit-identical results with the assembly row kernels and with the
// portable Go loops, including channel tails and row counts that are not
// a multiple of four.
func TestFusedBatchNormAsmMatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, shape := range [][]int{{2, 3, 5, 8}, {1, 7, 9, 24}, {2, 5, 3, 33}, {4, 9, 11, 64}, {3, 1, 2, 3, 13}} {
		format := "NHWC"
		if len(shape) == 5 {
			format = "NDHWC"
		}
		n, _ := tensorx.Numel(shape)
		C := shape[len(shape)-1]
		x := testutil.Dense(t, tensor.Float32, shape, testutil.RandVals(r, n, 3, 1))
		dy := testutil.Dense(t, tensor.Float32, shape, testutil.RandVals(r, n, 1, 0))
		scale := testutil.Dense(t, tensor.Float32, []int{C}, testutil.RandVals(r, C, 1, 1))
		offset := testutil.Dense(t, tensor.Float32, []int{C}, testutil.RandVals(r, C, 1, 0))
		m := testutil.Dense(t, tensor.Float32, []int{C}, testutil.RandVals(r, C, 1, 1))
		v := testutil.Dense(t, tensor.Float32, []int{C}, testutil.Abs(testutil.RandVals(r, C, 1, 1)))
		var ref [][]float64
		for _, asm := range []bool{false, true} {
			var got [][]float64
			withBnkern(asm, func() { got = bnRunAll(t, 2, format, shape, x, dy, scale, offset, m, v) })
			if ref == nil {
				ref = got
				continue
			}
			for i := range got {
				if j := testutil.BitDiff(ref[i], got[i], true); j >= 0 {
					t.Fatalf("%v: output %d element %d = %v with assembly, %v with Go loops", shape, i, j, got[i][j], ref[i][j])
				}
			}
		}
	}
}

// TestFusedBatchNormStreaming runs a float32 NHWC tensor large enough for
// the non-temporal stores (with bnkern.StreamBytes lowered to keep the test
// fast) against the references, and checks that the results match the
// Go loops' and do not depend on the thread count.
func TestFusedBatchNormStreaming(t *testing.T) {
	shape := []int{4, 16, 32, 128}
	n, _ := tensorx.Numel(shape)
	old := bnkern.StreamBytes
	bnkern.StreamBytes = n * 4
	defer func() { bnkern.StreamBytes = old }()
	r := rand.New(rand.NewSource(6))
	const C = 128
	xv := testutil.Round(tensor.Float32, testutil.RandVals(r, n, 2, -1))
	dyv := testutil.Round(tensor.Float32, testutil.RandVals(r, n, 1, 0.5))
	sv := testutil.Round(tensor.Float32, testutil.RandVals(r, C, 1, 1))
	ov := testutil.Round(tensor.Float32, testutil.RandVals(r, C, 1, 0))
	mv := testutil.Round(tensor.Float32, testutil.RandVals(r, C, 1, 0))
	vv := testutil.Round(tensor.Float32, testutil.Abs(testutil.RandVals(r, C, 1, 1)))
	x, dy := testutil.Dense(t, tensor.Float32, shape, xv), testutil.Dense(t, tensor.Float32, shape, dyv)
	scale, offset := testutil.Dense(t, tensor.Float32, []int{C}, sv), testutil.Dense(t, tensor.Float32, []int{C}, ov)
	m, v := testutil.Dense(t, tensor.Float32, []int{C}, mv), testutil.Dense(t, tensor.Float32, []int{C}, vv)

	got := bnRunAll(t, 1, "NHWC", shape, x, dy, scale, offset, m, v)
	train := bnref.Forward(xv, shape, "NHWC", sv, ov, nil, nil, 1e-3, 1, true)
	infer := bnref.Forward(xv, shape, "NHWC", sv, ov, mv, vv, 1e-3, 1, false)
	gdx, gds, gdo := bnref.Grad(dyv, xv, shape, "NHWC", sv, got[3], got[4], 1e-3, true)
	idx, ids, ido := bnref.Grad(dyv, xv, shape, "NHWC", sv, mv, vv, 1e-3, false)
	const atol, rtol = 2e-6, 1e-5
	bnClose(t, "training y", got[0], train.Y, atol, rtol)
	bnClose(t, "training mean", got[3], train.RS1, atol, rtol)
	bnClose(t, "training variance", got[4], train.RS2, atol, rtol)
	bnClose(t, "inference y", got[6], infer.Y, atol, rtol)
	bnClose(t, "training x_backprop", got[12], gdx, atol, rtol)
	bnClose(t, "training scale_backprop", got[13], gds, atol, rtol)
	bnClose(t, "training offset_backprop", got[14], gdo, atol, rtol)
	bnClose(t, "inference x_backprop", got[17], idx, atol, rtol)
	bnClose(t, "inference scale_backprop", got[18], ids, atol, rtol)
	bnClose(t, "inference offset_backprop", got[19], ido, atol, rtol)

	var two, goLoops [][]float64
	two = bnRunAll(t, 2, "NHWC", shape, x, dy, scale, offset, m, v)
	withBnkern(false, func() { goLoops = bnRunAll(t, 2, "NHWC", shape, x, dy, scale, offset, m, v) })
	for i := range got {
		if j := testutil.BitDiff(got[i], two[i], true); j >= 0 {
			t.Fatalf("output %d element %d differs between 1 and 2 threads", i, j)
		}
		if j := testutil.BitDiff(got[i], goLoops[i], true); j >= 0 {
			t.Fatalf("output %d element %d = %v, %v with the Go loops", i, j, got[i][j], goLoops[i][j])
		}
	}
}

// TestFusedBatchNormGradSpecVectors runs the spec's test vectors of the
// gradient ops (§7).
func TestFusedBatchNormGradSpecVectors(t *testing.T) {
	scale := bnF32Vec(t, []int{2}, 4, 4)
	t.Run("FBG1", func(t *testing.T) {
		dy := bnF32Vec(t, []int{1, 1, 6, 2}, 2, 2, 9, 9, -4, -4, 5, 5, 8, 8, 7, 7)
		gx := bnF32Vec(t, []int{1, 1, 6, 2}, 1, 1, 7, 7, 4, 4, -3, -3, -11, -11, 13, 13)
		for _, op := range []string{bnOpGradV1, bnOpGradV3} {
			in := []*tensor.Dense{dy, gx, scale, bnF32Vec(t, []int{2}, 1.833, 1.833), bnF32Vec(t, []int{2}, 57.472, 57.472)}
			if op == bnOpGradV3 {
				in = append(in, bnF32Vec(t, nil, 0))
			}
			out, err := registrytest.Run(t, op, forward.FusedBatchNormGradAttrs{Epsilon: bnPtr(float32(0.001))}, 1, in...)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Near(t, "x_backprop", testutil.Float64s(t, out[0]),
				[]float64{-1.34, -1.34, 2.47, 2.47, -4.44, -4.44, 0.17, 0.17, 1.60, 1.60, 1.53, 1.53}, 0.01)
			// −1.6488 is for the exact mean 11/6; the test's rounded
			// reserve_space_1 (1.833) gives −1.64765 (TF's tolerance: 0.01).
			testutil.Near(t, "scale_backprop", testutil.Float64s(t, out[1]), []float64{-1.6488, -1.6488}, 2e-3)
			want := (37 - 27*float64(float32(1.833))) / math.Sqrt(float64(float32(57.472))+float64(float32(0.001)))
			testutil.Near(t, "scale_backprop (rounded mean)", testutil.Float64s(t, out[1]), []float64{want, want}, 1e-5)
			testutil.Near(t, "offset_backprop", testutil.Float64s(t, out[2]), []float64{27, 27}, 1e-5)
			testutil.ShapeIs(t, "reserve_space_3", out[3], 0)
			testutil.ShapeIs(t, "reserve_space_4", out[4], 0)
		}
	})
	t.Run("FBG2", func(t *testing.T) {
		dy := bnF32Vec(t, []int{1, 1, 6, 1}, 1, 2, 3, 4, 5, 6)
		gx := bnF32Vec(t, []int{1, 1, 6, 1}, 5, 7, 9, 11, 13, 15)
		out, err := registrytest.Run(t, bnOpGradV1, bnGAttrs("NHWC", false, 0.001), 1, dy, gx,
			bnF32Vec(t, []int{1}, 4), bnF32Vec(t, []int{1}, 10), bnF32Vec(t, []int{1}, 11.67))
		if err != nil {
			t.Fatal(err)
		}
		testutil.Near(t, "x_backprop", testutil.Float64s(t, out[0]), []float64{1.170863, 2.341725, 3.512588, 4.683451, 5.854313, 7.025176}, 2e-6)
		testutil.Near(t, "scale_backprop", testutil.Float64s(t, out[1]), []float64{10.245048}, 1e-5)
		testutil.Near(t, "offset_backprop", testutil.Float64s(t, out[2]), []float64{21}, 0)
	})
	t.Run("FBG-empty", func(t *testing.T) {
		ex := bnF32Vec(t, []int{2, 0, 3, 3})
		three := bnF32Vec(t, []int{3}, 1, 2, 3)
		for _, training := range []bool{true, false} {
			out, err := registrytest.Run(t, bnOpGradV3, bnGAttrs("NHWC", training, 0.001), 1, ex, ex, three, three, three, bnF32Vec(t, nil, 0))
			if err != nil {
				t.Fatal(err)
			}
			testutil.ShapeIs(t, "x_backprop", out[0], 2, 0, 3, 3)
			testutil.Near(t, "scale_backprop", testutil.Float64s(t, out[1]), []float64{0, 0, 0}, 0)
			testutil.Near(t, "offset_backprop", testutil.Float64s(t, out[2]), []float64{0, 0, 0}, 0)
		}
	})
}

func TestFusedBatchNormGradAttrDefaults(t *testing.T) {
	for _, op := range []string{bnOpGradV1, bnOpGradV3} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := def.ParseAttrs(map[string]any{"exponential_avg_factor": 1.0}); err == nil {
			t.Fatalf("%s accepted exponential_avg_factor", op)
		}
	}
}

// TestFusedBatchNormGradErrors: the gradient ops' errors (spec §5).
func TestFusedBatchNormGradErrors(t *testing.T) {
	f := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.Dense(t, tensor.Float32, shape, make([]float64, n))
	}
	d := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.Dense(t, tensor.Float64, shape, make([]float64, n))
	}
	train := bnAttrs("NHWC", true, 1e-3, 1)
	gtrain := bnGAttrs("NHWC", true, 1e-3)
	ia, sh, dty := registry.ErrInvalidArgument, registry.ErrShape, registry.ErrDtype
	x := f(2, 2, 2, 3)
	c3 := f(3)
	cases := []struct {
		name  string
		op    string
		attrs any
		in    []*tensor.Dense
		kind  error
		msg   string
	}{
		{"grad-dy-rank3", bnOpGradV3, gtrain, []*tensor.Dense{f(2, 2, 3), x, c3, c3, c3, f()}, ia, "input must be 4 or 5-dimensional"},
		{"grad-x-rank3", bnOpGradV1, gtrain, []*tensor.Dense{x, f(2, 2, 3), c3, c3, c3}, ia, "input must be 4 or 5-dimensional"},
		{"grad-scale-2d", bnOpGradV3, gtrain, []*tensor.Dense{x, x, f(3, 1), c3, c3, f()}, ia, "scale must be 1-dimensional"},
		{"grad-mean-0d", bnOpGradV3, gtrain, []*tensor.Dense{x, x, c3, f(), c3, f()}, ia, "saved mean must be 1-dimensional"},
		{"grad-var-2d", bnOpGradV1, gtrain, []*tensor.Dense{x, x, c3, c3, f(1, 3)}, ia, "saved variance must be 1-dimensional"},
		{"grad-shapes", bnOpGradV3, gtrain, []*tensor.Dense{f(2, 2, 1, 3), x, c3, c3, c3, f()}, ia, "x and y_backprop must have same shape"},
		{"grad-scale-count", bnOpGradV3, gtrain, []*tensor.Dense{x, x, f(2), c3, c3, f()}, ia, "scale must have the same number of elements as the channels of x"},
		{"grad-rs1-count", bnOpGradV1, gtrain, []*tensor.Dense{x, x, c3, f(4), c3}, ia, "reserve_space_1 must have the same number of elements as the channels of x"},
		{"grad-rs2-count", bnOpGradV3, bnGAttrs("NHWC", false, 1e-3), []*tensor.Dense{x, x, c3, c3, f(1), f()}, ia, "reserve_space_2 must have the same number of elements as the channels of x"},
		{"grad-v1-ncdhw", bnOpGradV1, bnGAttrs("NCDHW", true, 1e-3), []*tensor.Dense{f(1, 3, 2, 2, 2), f(1, 3, 2, 2, 2), c3, c3, c3}, ia, "Invalid data format"},
		{"grad-v1-rank5", bnOpGradV1, gtrain, []*tensor.Dense{f(1, 2, 2, 2, 3), f(1, 2, 2, 2, 3), c3, c3, c3}, sh, "must be 4-dimensional"},
		{"grad-dtype-x", bnOpGradV3, gtrain, []*tensor.Dense{x, d(2, 2, 2, 3), c3, c3, c3, f()}, dty, "y_backprop"},
		{"grad-dtype-rs3", bnOpGradV3, gtrain, []*tensor.Dense{x, x, c3, c3, c3, d()}, dty, "reserve_space_3"},
		{"wrong-attrs-type", bnOpGradV3, train, []*tensor.Dense{x, x, c3, c3, c3, f()}, ia, "attrs must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registrytest.Run(t, tc.op, tc.attrs, 2, tc.in...)
			testutil.WantErr(t, err, tc.kind, tc.msg, tc.op)
		})
	}
}

// TestFusedBatchNormGradNCHWInference: tapegrad accepts the channels-first
// formats in inference mode (TensorFlow's CPU kernel refuses them; the
// maths does not depend on the layout).
func TestFusedBatchNormGradNCHWInference(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	shape := []int{2, 3, 2, 2}
	nhwc := []int{2, 2, 2, 3}
	n := 24
	x, dy := testutil.RandVals(r, n, 1, 0), testutil.RandVals(r, n, 1, 0)
	tr := func(v []float64) []float64 { // NCHW → NHWC
		out := make([]float64, n)
		for b := 0; b < 2; b++ {
			for c := 0; c < 3; c++ {
				for s := 0; s < 4; s++ {
					out[(b*4+s)*3+c] = v[(b*3+c)*4+s]
				}
			}
		}
		return out
	}
	c3 := func(v ...float64) *tensor.Dense { return testutil.Dense(t, tensor.Float64, []int{3}, v) }
	scale, m, v := c3(0.5, 1, -2), c3(0.1, 0.2, -0.3), c3(1, 2, 0.5)
	a, err := registrytest.Run(t, bnOpGradV1, bnGAttrs("NCHW", false, 1e-3), 1, testutil.Dense(t, tensor.Float64, shape, dy), testutil.Dense(t, tensor.Float64, shape, x), scale, m, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := registrytest.Run(t, bnOpGradV1, bnGAttrs("NHWC", false, 1e-3), 1, testutil.Dense(t, tensor.Float64, nhwc, tr(dy)), testutil.Dense(t, tensor.Float64, nhwc, tr(x)), scale, m, v)
	if err != nil {
		t.Fatal(err)
	}
	bnClose(t, "x_backprop", tr(testutil.Float64s(t, a[0])), testutil.Float64s(t, b[0]), 1e-15, 1e-14)
	bnClose(t, "scale_backprop", testutil.Float64s(t, a[1]), testutil.Float64s(t, b[1]), 1e-15, 1e-14)
	bnClose(t, "offset_backprop", testutil.Float64s(t, a[2]), testutil.Float64s(t, b[2]), 1e-15, 1e-14)
}

func TestFusedBatchNormGradOpSamples(t *testing.T) {
	for _, op := range []string{bnOpGradV1, bnOpGradV3} {
		registrytest.RunSamples(t, op, rand.New(rand.NewSource(1)), 6, nil)
	}
}

// ---------------------------------------------------------------------------
// Benchmark: workload W7 (FusedBatchNormV3 training, N32 56x56 C64 NHWC
// float32), forward+backward, at the benchmark's -cpu thread count. GB/s
// counts the tensor passes of bench_torch.py: fwdbwd 5 (package forward
// benchmarks fwd).

const bnW7Bytes = 32 * 56 * 56 * 64 * 4

func bnBenchW7(b *testing.B) {
	shape := []int{32, 56, 56, 64}
	r := rand.New(rand.NewSource(1))
	n := 32 * 56 * 56 * 64
	x := testutil.Dense(b, tensor.Float32, shape, testutil.RandVals(r, n, 1, 0))
	dy := testutil.Dense(b, tensor.Float32, shape, testutil.RandVals(r, n, 1, 0))
	scale := testutil.Dense(b, tensor.Float32, []int{64}, testutil.RandVals(r, 64, 1, 1))
	offset := testutil.Dense(b, tensor.Float32, []int{64}, testutil.RandVals(r, 64, 1, 0))
	empty := testutil.Dense(b, tensor.Float32, []int{0}, nil)
	fdef, _ := registry.Lookup(bnOpV3)
	gdef, _ := registry.Lookup(bnOpGradV3)
	alloc := &testutil.PoolAlloc{}
	threads := runtime.GOMAXPROCS(0)
	kc := &registry.KernelCtx{Alloc: alloc, Threads: threads}
	fa, err := fdef.NormalizeAttrs(bnAttrs("NHWC", true, 0.001, 1))
	if err != nil {
		b.Fatal(err)
	}
	ga, err := gdef.NormalizeAttrs(bnGAttrs("NHWC", true, 0.001))
	if err != nil {
		b.Fatal(err)
	}
	const passes = 5.0
	var fw [6]*tensor.Dense
	step := func() {
		res, err := registry.RunNormalized(fdef, kc, fa, []*tensor.Dense{x, scale, offset, empty, empty})
		if err != nil {
			b.Fatal(err)
		}
		// The kernel context reuses its result slice: keep the forward's
		// outputs before the gradient op runs.
		out := fw[:copy(fw[:], res)]
		g, err := registry.RunNormalized(gdef, kc, ga, []*tensor.Dense{dy, x, scale, out[3], out[4], out[5]})
		if err != nil {
			b.Fatal(err)
		}
		for _, d := range g {
			alloc.Release(d)
		}
		for _, d := range out {
			alloc.Release(d)
		}
	}
	testutil.BenchBytes(b, passes*bnW7Bytes, step)
}

// BenchmarkFusedBatchNormW7FwdBwd is W7's fwdbwd mode (the forward and
// its gradient op).
func BenchmarkFusedBatchNormW7FwdBwd(b *testing.B) { bnBenchW7(b) }
