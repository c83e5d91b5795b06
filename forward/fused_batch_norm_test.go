package forward

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/bnkern"
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

// ---------------------------------------------------------------------------
// Naive float64 references, written from the spec.

// bnRefChannel returns the channel count of x and the channel of each
// flat index.
func bnRefChannel(shape []int, format string) (int, func(i int) int) {
	if format == "NCHW" || format == "NCDHW" {
		inner := 1
		for _, d := range shape[2:] {
			inner *= d
		}
		C := shape[1]
		return C, func(i int) int { return (i / inner) % C }
	}
	C := shape[len(shape)-1]
	return C, func(i int) int { return i % C }
}

type bnRefOut struct {
	y, batchMean, batchVar, rs1, rs2 []float64
}

// bnRefForward is FusedBatchNorm from spec §2: two-pass statistics in
// float64.
func bnRefForward(x []float64, shape []int, format string, scale, offset, mean, variance []float64, eps, factor float64, training bool) bnRefOut {
	C, ch := bnRefChannel(shape, format)
	out := bnRefOut{y: make([]float64, len(x)), batchMean: make([]float64, C), batchVar: make([]float64, C),
		rs1: make([]float64, C), rs2: make([]float64, C)}
	if len(x) == 0 {
		for c := 0; c < C; c++ {
			out.batchMean[c], out.batchVar[c] = math.NaN(), math.NaN()
			out.rs1[c], out.rs2[c] = math.NaN(), math.NaN()
		}
		return out
	}
	n := float64(len(x) / C)
	mu := make([]float64, C)
	vr := make([]float64, C)
	if training {
		for i, v := range x {
			mu[ch(i)] += v
		}
		for c := range mu {
			mu[c] /= n
		}
		for i, v := range x {
			d := v - mu[ch(i)]
			vr[ch(i)] += d * d
		}
		for c := range vr {
			vr[c] /= n
		}
		bessel := n / math.Max(n-1, 1)
		for c := 0; c < C; c++ {
			out.rs1[c], out.rs2[c] = mu[c], vr[c]
			if factor == 1 {
				out.batchMean[c], out.batchVar[c] = mu[c], vr[c]*bessel
			} else {
				out.batchMean[c] = (1-factor)*mean[c] + factor*mu[c]
				out.batchVar[c] = (1-factor)*variance[c] + factor*bessel*vr[c]
			}
		}
	} else {
		copy(mu, mean)
		copy(vr, variance)
		copy(out.batchMean, mean)
		copy(out.batchVar, variance)
		copy(out.rs1, mean)
		copy(out.rs2, variance)
	}
	for i, v := range x {
		c := ch(i)
		out.y[i] = (v-mu[c])/math.Sqrt(vr[c]+eps)*scale[c] + offset[c]
	}
	return out
}

// bnRefGrad is FusedBatchNormGrad from spec §3.
func bnRefGrad(dy, x []float64, shape []int, format string, scale, m, v []float64, eps float64, training bool) (dx, dscale, doffset []float64) {
	C, ch := bnRefChannel(shape, format)
	dx = make([]float64, len(x))
	dscale = make([]float64, C)
	doffset = make([]float64, C)
	if len(x) == 0 {
		return
	}
	n := float64(len(x) / C)
	sdy := make([]float64, C)
	sdyxc := make([]float64, C)
	for i := range x {
		c := ch(i)
		sdy[c] += dy[i]
		sdyxc[c] += dy[i] * (x[i] - m[c])
	}
	for c := 0; c < C; c++ {
		r := 1 / math.Sqrt(v[c]+eps)
		dscale[c] = sdyxc[c] * r
		doffset[c] = sdy[c]
	}
	for i := range x {
		c := ch(i)
		r := 1 / math.Sqrt(v[c]+eps)
		if training {
			dx[i] = scale[c] * r * (dy[i] - sdy[c]/n - (x[i]-m[c])*r*r*sdyxc[c]/n)
		} else {
			dx[i] = dy[i] * scale[c] * r
		}
	}
	return
}

func bnAttrs(format string, training bool, eps, factor float32) FusedBatchNormAttrs {
	return FusedBatchNormAttrs{Epsilon: &eps, ExponentialAvgFactor: &factor, DataFormat: format, IsTraining: &training}
}

func bnGAttrs(format string, training bool, eps float32) FusedBatchNormGradAttrs {
	return FusedBatchNormGradAttrs{Epsilon: &eps, DataFormat: format, IsTraining: &training}
}

// ---------------------------------------------------------------------------
// Forward and gradient kernels against the references.

type bnGridCase struct {
	format string
	shape  []int
}

var bnGrid = []bnGridCase{
	{"NHWC", []int{2, 3, 4, 5}},
	{"NHWC", []int{1, 1, 1, 1}},
	{"NHWC", []int{3, 5, 7, 2}},
	{"NHWC", []int{2, 2, 2, 33}},
	{"NHWC", []int{4, 32, 32, 16}}, // several reduction chunks
	{"NHWC", []int{2, 3, 5, 24}},   // float32: assembly, 30 rows (not a multiple of 4)
	{"NHWC", []int{3, 1, 3, 11}},   // float32: assembly with 3 tail channels
	{"NCHW", []int{2, 3, 4, 5}},
	{"NCHW", []int{1, 1, 1, 1}},
	{"NCHW", []int{3, 5, 7, 2}},
	{"NCHW", []int{2, 7, 1, 1}}, // inner == 1: the channels-last path
	{"NCHW", []int{4, 32, 32, 16}},
	{"NDHWC", []int{2, 3, 2, 2, 4}},
	{"NDHWC", []int{1, 3, 2, 3, 19}},
	{"NCDHW", []int{1, 2, 3, 1, 5}},
	{"NCDHW", []int{2, 3, 2, 2, 4}},
}

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
		for _, gc := range bnGrid {
			for _, md := range bnModes {
				for _, op := range []string{bnOpV1, bnOpV3} {
					if op == bnOpV1 && len(gc.shape) == 5 {
						continue
					}
					name := fmt.Sprintf("%v/%s/%s/%v/%s", dt, op, gc.format, gc.shape, md.name)
					t.Run(name, func(t *testing.T) {
						bnCheckForward(t, r, dt, op, gc, md)
					})
				}
			}
		}
	}
}

func bnCheckForward(t *testing.T, r *rand.Rand, dt tensor.Dtype, op string, gc bnGridCase, md bnMode) {
	n, _ := tensorx.Numel(gc.shape)
	C, _ := bnRefChannel(gc.shape, gc.format)
	x := testutil.Round(dt, testutil.RandVals(r, n, 2, 1.5))
	scale := testutil.Round(dt, testutil.RandVals(r, C, 1, 0))
	offset := testutil.Round(dt, testutil.RandVals(r, C, 1, 0))
	mean, variance := []float64{}, []float64{}
	if md.stats {
		mean = testutil.Round(dt, testutil.RandVals(r, C, 1, 0.5))
		variance = testutil.Round(dt, testutil.RandVals(r, C, 0.2, 1.5))
	}
	eps := float32(1e-3)
	want := bnRefForward(x, gc.shape, gc.format, scale, offset, mean, variance, float64(eps), float64(md.factor), md.training)
	atol, rtol := 1e-13, 1e-12
	if dt == tensor.Float32 {
		atol, rtol = 2e-6, 1e-5
	}
	var first []*tensor.Dense
	for _, threads := range []int{1, 3} {
		out, err := registrytest.Run(t, op, bnAttrs(gc.format, md.training, eps, md.factor), threads,
			testutil.Dense(t, dt, gc.shape, x), testutil.Dense(t, dt, []int{C}, scale), testutil.Dense(t, dt, []int{C}, offset),
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
		testutil.ShapeIs(t, "y", out[0], gc.shape...)
		for i := 1; i < 5; i++ {
			testutil.ShapeIs(t, fmt.Sprintf("output %d", i), out[i], C)
		}
		bnClose(t, "y", testutil.Float64s(t, out[0]), want.y, atol, rtol)
		bnClose(t, "batch_mean", testutil.Float64s(t, out[1]), want.batchMean, atol, rtol)
		bnClose(t, "batch_variance", testutil.Float64s(t, out[2]), want.batchVar, atol, rtol)
		bnClose(t, "reserve_space_1", testutil.Float64s(t, out[3]), want.rs1, atol, rtol)
		bnClose(t, "reserve_space_2", testutil.Float64s(t, out[4]), want.rs2, atol, rtol)
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

func TestFusedBatchNormGradGrid(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		for _, gc := range bnGrid {
			for _, training := range []bool{true, false} {
				for _, op := range []string{bnOpGradV1, bnOpGradV3} {
					if op == bnOpGradV1 && len(gc.shape) == 5 {
						continue
					}
					name := fmt.Sprintf("%v/%s/%s/%v/training=%v", dt, op, gc.format, gc.shape, training)
					t.Run(name, func(t *testing.T) {
						bnCheckGrad(t, r, dt, op, gc, training)
					})
				}
			}
		}
	}
}

func bnCheckGrad(t *testing.T, r *rand.Rand, dt tensor.Dtype, op string, gc bnGridCase, training bool) {
	n, _ := tensorx.Numel(gc.shape)
	C, _ := bnRefChannel(gc.shape, gc.format)
	x := testutil.Round(dt, testutil.RandVals(r, n, 2, 1.5))
	dy := testutil.Round(dt, testutil.RandVals(r, n, 1, 0.2))
	scale := testutil.Round(dt, testutil.RandVals(r, C, 1, 0))
	var m, v []float64
	if training {
		// The forward's reserve spaces: batch mean and biased variance.
		ref := bnRefForward(x, gc.shape, gc.format, scale, scale, nil, nil, 0, 1, true)
		m, v = testutil.Round(dt, ref.rs1), testutil.Round(dt, ref.rs2)
	} else {
		m = testutil.Round(dt, testutil.RandVals(r, C, 1, 0.5))
		v = testutil.Round(dt, testutil.RandVals(r, C, 0.2, 1.5))
	}
	eps := float32(1e-3)
	wdx, wds, wdo := bnRefGrad(dy, x, gc.shape, gc.format, scale, m, v, float64(eps), training)
	atol, rtol := 1e-12, 1e-11
	if dt == tensor.Float32 {
		atol, rtol = 1e-5, 1e-4
	}
	var first []*tensor.Dense
	for _, threads := range []int{1, 3} {
		in := []*tensor.Dense{testutil.Dense(t, dt, gc.shape, dy), testutil.Dense(t, dt, gc.shape, x), testutil.Dense(t, dt, []int{C}, scale),
			testutil.Dense(t, dt, []int{C}, m), testutil.Dense(t, dt, []int{C}, v)}
		if op == bnOpGradV3 {
			in = append(in, testutil.Dense(t, dt, nil, []float64{0}))
		}
		out, err := registrytest.Run(t, op, bnGAttrs(gc.format, training, eps), threads, in...)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 5 {
			t.Fatalf("%d outputs, want 5", len(out))
		}
		testutil.ShapeIs(t, "x_backprop", out[0], gc.shape...)
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
		C, _ := bnRefChannel(shape, format)
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

// withBnkern runs fn with the assembly kernels of package bnkern on or
// off (the portable Go loops).
func withBnkern(asm bool, fn func()) {
	old := bnkern.Enabled
	bnkern.Enabled = asm && old
	defer func() { bnkern.Enabled = old }()
	fn()
}

// TestFusedBatchNormAsmMatchesGo: the float32 channels-last paths give
// bit-identical results with the assembly row kernels and with the
// portable Go loops, including channel tails and row counts that are not
// a multiple of four.
func TestFusedBatchNormAsmMatchesGo(t *testing.T) {
	if !bnkern.Enabled {
		t.Log("no assembly kernels on this CPU/build: comparing the Go loops with themselves")
	}
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
// the non-temporal stores (with bnStreamBytes lowered to keep the test
// fast) against the references, and checks that the results match the
// Go loops' and do not depend on the thread count.
func TestFusedBatchNormStreaming(t *testing.T) {
	shape := []int{4, 16, 32, 128}
	n, _ := tensorx.Numel(shape)
	old := bnStreamBytes
	bnStreamBytes = n * 4
	defer func() { bnStreamBytes = old }()
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
	train := bnRefForward(xv, shape, "NHWC", sv, ov, nil, nil, 1e-3, 1, true)
	infer := bnRefForward(xv, shape, "NHWC", sv, ov, mv, vv, 1e-3, 1, false)
	gdx, gds, gdo := bnRefGrad(dyv, xv, shape, "NHWC", sv, got[3], got[4], 1e-3, true)
	idx, ids, ido := bnRefGrad(dyv, xv, shape, "NHWC", sv, mv, vv, 1e-3, false)
	const atol, rtol = 2e-6, 1e-5
	bnClose(t, "training y", got[0], train.y, atol, rtol)
	bnClose(t, "training mean", got[3], train.rs1, atol, rtol)
	bnClose(t, "training variance", got[4], train.rs2, atol, rtol)
	bnClose(t, "inference y", got[6], infer.y, atol, rtol)
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

// TestFusedBatchNormLargeBatchNoDrift: float32 statistics of a large
// batch with a mean far from zero stay accurate (float64 accumulation).
func TestFusedBatchNormLargeBatchNoDrift(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	shape := []int{64, 64, 64, 2} // 131072 elements per channel
	n, _ := tensorx.Numel(shape)
	x := testutil.Round(tensor.Float32, testutil.RandVals(r, n, 0.5, 300))
	ref := bnRefForward(x, shape, "NHWC", []float64{1, 1}, []float64{0, 0}, nil, nil, 1e-3, 1, true)
	empty := testutil.Dense(t, tensor.Float32, []int{0}, nil)
	one := testutil.Dense(t, tensor.Float32, []int{2}, []float64{1, 1})
	zero := testutil.Dense(t, tensor.Float32, []int{2}, []float64{0, 0})
	out, err := registrytest.Run(t, bnOpV3, bnAttrs("NHWC", true, 1e-3, 1), 2, testutil.Dense(t, tensor.Float32, shape, x), one, zero, empty, empty)
	if err != nil {
		t.Fatal(err)
	}
	// float32 rounding of the results only.
	bnClose(t, "reserve_space_1 (mean)", testutil.Float64s(t, out[3]), ref.rs1, 0, 1e-7)
	bnClose(t, "reserve_space_2 (biased variance)", testutil.Float64s(t, out[4]), ref.rs2, 0, 2e-7)
	bnClose(t, "batch_variance", testutil.Float64s(t, out[2]), ref.batchVar, 0, 2e-7)
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
	t.Run("FBG1", func(t *testing.T) {
		dy := bnF32Vec(t, []int{1, 1, 6, 2}, 2, 2, 9, 9, -4, -4, 5, 5, 8, 8, 7, 7)
		gx := bnF32Vec(t, []int{1, 1, 6, 2}, 1, 1, 7, 7, 4, 4, -3, -3, -11, -11, 13, 13)
		for _, op := range []string{bnOpGradV1, bnOpGradV3} {
			in := []*tensor.Dense{dy, gx, scale, bnF32Vec(t, []int{2}, 1.833, 1.833), bnF32Vec(t, []int{2}, 57.472, 57.472)}
			if op == bnOpGradV3 {
				in = append(in, bnF32Vec(t, nil, 0))
			}
			out, err := registrytest.Run(t, op, FusedBatchNormGradAttrs{Epsilon: bnF32(0.001)}, 1, in...)
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
	gtrain := bnGAttrs("NHWC", true, 1e-3)
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

func TestFusedBatchNormSamples(t *testing.T) {
	for _, op := range []string{bnOpV1, bnOpV3, bnOpGradV1, bnOpGradV3} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		ss := def.Samples(rand.New(rand.NewSource(1)))
		if len(ss) < 6 {
			t.Fatalf("%s: %d samples", op, len(ss))
		}
		for _, s := range ss {
			if _, err := registry.Run(def, nil, s.Attrs, s.Inputs); err != nil {
				t.Fatalf("%s sample %s: %v", op, s.Name, err)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Benchmarks: workload W7 (FusedBatchNormV3 training, N32 56x56 C64 NHWC
// float32), forward and forward+backward, at the benchmark's -cpu thread
// count. GB/s counts the tensor passes of bench_torch.py: fwd 2, fwdbwd 5.

const bnW7Bytes = 32 * 56 * 56 * 64 * 4

func bnBenchW7(b *testing.B, withGrad bool) {
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
	passes := 2.0
	if withGrad {
		passes = 5
	}
	step := func() {
		out, err := registry.RunNormalized(fdef, kc, fa, []*tensor.Dense{x, scale, offset, empty, empty})
		if err != nil {
			b.Fatal(err)
		}
		if withGrad {
			g, err := registry.RunNormalized(gdef, kc, ga, []*tensor.Dense{dy, x, scale, out[3], out[4], out[5]})
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range g {
				alloc.Release(d)
			}
		}
		for _, d := range out {
			alloc.Release(d)
		}
	}
	step() // warm the buffers
	b.SetBytes(int64(passes * bnW7Bytes))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.StopTimer()
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(sec*1e3, "ms/op")
	b.ReportMetric(passes*bnW7Bytes/sec/1e9, "GB/s")
}

// BenchmarkFusedBatchNormW7Fwd is W7's fwd mode.
func BenchmarkFusedBatchNormW7Fwd(b *testing.B) { bnBenchW7(b, false) }

// BenchmarkFusedBatchNormW7FwdBwd is W7's fwdbwd mode (the forward and
// its gradient op).
func BenchmarkFusedBatchNormW7FwdBwd(b *testing.B) { bnBenchW7(b, true) }
