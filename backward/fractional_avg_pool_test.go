package backward_test

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/golden"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// TestFractionalAvgPoolSecondOrderChain checks a nonlinear composition to
// second order: y = FractionalAvgPool(x), z = y·y pooled again over given
// sequences, so FractionalAvgPoolGrad's gradient and the tapegrad adjoint
// op both take part; with seeds from the tape's source (deterministic
// false), which gradcheck seeds identically for every evaluation.
func TestFractionalAvgPoolSecondOrderChain(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.6, 1}, Overlapping: true}
	// y is [2,4,5,2] (7/1.44 → 4, 8/1.6 → 5), pooled again to [2,2,3,2].
	zr, zc := testutil.Int64s(t, 0, 2, 4), testutil.Int64s(t, 0, 2, 3, 5)
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y, _, _ := autodiff.FractionalAvgPool(in[0], a)
		sq := autodiff.Mul(y, y)
		z := autodiff.FractionalAvgPoolWithSequences(sq, tp.Constant(zr), tp.Constant(zc), false)
		return []autodiff.Value{y, z}
	}
	x := testutil.RandDense(t, r, 2, 7, 8, 2)
	checkOrders(t, "", f, []*tensor.Dense{x}, gradcheck.Options{Seed: 1}, gradcheck.Options{Seed: 2})
}

// TestFractionalAvgPoolThirdOrder differentiates a gradient of a gradient:
// the second-order check of a function returning the first-order
// gradient of a pooled square.
func TestFractionalAvgPoolThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(22))
	a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Deterministic: true, Seed: 4, Seed2: 2}
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y, _, _ := autodiff.FractionalAvgPool(autodiff.Mul(in[0], in[0]), a)
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{in[0]}, []autodiff.Value{in[1]}, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			return []autodiff.Value{y}
		}
		return g
	}
	in := []*tensor.Dense{testutil.RandDense(t, r, 1, 6, 5, 2), testutil.RandDense(t, r, 1, 4, 3, 2)}
	if err := gradcheck.CheckSecondOrder(f, in, gradcheck.Options{Seed: 3}); err != nil {
		t.Fatal(err)
	}
}

// TestFractionalAvgPoolGolden runs the golden cases of
// testdata/golden/fractional_avg_pool.json (as cmd/opcheck does).
func TestFractionalAvgPoolGolden(t *testing.T) {
	cases, err := golden.ReadFile(filepath.Join("..", "testdata", "golden", "fractional_avg_pool.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, c := range cases {
		for _, threads := range []int{1, 3} {
			res := golden.Run(c, golden.Options{Threads: threads})
			if !res.Passed() {
				t.Errorf("%s (threads %d): %s", c.Name, threads, strings.Join(res.Failures, "; "))
			}
			for _, w := range res.Warnings {
				t.Logf("%s: warning: %s", c.Name, w)
			}
		}
	}
}

// TestFractionalAvgPoolSpecExample checks the op documentation's example
// (spec §4): one axis 20 5 16 3 7 with sequence [0, 2, 4] overlapping gives
// 41/3 and 26/3, as does the generated [0, 2, 5]; non-overlapping [0, 2, 5]
// gives 12.5 and 26/3.
func TestFractionalAvgPoolSpecExample(t *testing.T) {
	x := testutil.New(t, []int{1, 1, 5, 1}, []float64{20, 5, 16, 3, 7})
	rows := fpInt64s(0, 1)
	for _, c := range []struct {
		cols        []int64
		overlapping bool
		want        []float64
	}{
		{[]int64{0, 2, 4}, true, []float64{41.0 / 3, 26.0 / 3}},
		{[]int64{0, 2, 5}, true, []float64{41.0 / 3, 26.0 / 3}},
		{[]int64{0, 2, 5}, false, []float64{12.5, 26.0 / 3}},
	} {
		out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{Overlapping: c.overlapping}, x, rows, fpInt64s(c.cols...))
		testutil.Near(t, fmt.Sprintf("cols %v overlapping %v", c.cols, c.overlapping), out[0].Float64s(), c.want, 1e-15)
	}
	// FAP6: the example through the gradient op.
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: true}, fpInt64s(1, 1, 5, 1), testutil.New(t, []int{1, 1, 2, 1}, []float64{3, 3}), fpInt64s(0, 1), fpInt64s(0, 2, 5))
	testutil.Near(t, "FAP6", out[0].Float64s(), []float64{1, 1, 2, 1, 1}, 1e-15)
}

// TestFractionalAvgPoolGradSpecVectors checks FAP4 and FAP5 (FAP2, FAP3
// and FAP7, of the forward op, are checked in package forward).
func TestFractionalAvgPoolGradSpecVectors(t *testing.T) {
	// FAP4.
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{}, fpInt64s(1, 4, 4, 1), testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 2, 3, 4}), fpInt64s(0, 2, 4), fpInt64s(0, 2, 4))
	testutil.Near(t, "FAP4", out[0].Float64s(), []float64{.25, .25, .5, .5, .25, .25, .5, .5, .75, .75, 1, 1, .75, .75, 1, 1}, 1e-15)
	// FAP5.
	out = registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: true}, fpInt64s(1, 5, 5, 1), testutil.New(t, []int{1, 2, 2, 1}, []float64{3, 6, 9, 12}), fpInt64s(0, 2, 5), fpInt64s(0, 2, 5))
	third := 1.0 / 3
	testutil.Near(t, "FAP5", out[0].Float64s(), []float64{
		third, third, 1, 2 * third, 2 * third,
		third, third, 1, 2 * third, 2 * third,
		4 * third, 4 * third, 10 * third, 2, 2,
		1, 1, 7 * third, 4 * third, 4 * third,
		1, 1, 7 * third, 4 * third, 4 * third,
	}, 1e-15)
}

// TestFractionalAvgPoolWithSequencesForward runs
// tapegrad.FractionalAvgPoolWithSequences over the forward grid (package
// forward compares FractionalAvgPool with the naive reference there) with
// the sequences FractionalAvgPool drew: the same float32 outputs, for 1
// and 3 threads.
func TestFractionalAvgPoolWithSequencesForward(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, c := range fpForwardGrid() {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		xv := make([]float64, n*h*w*ch)
		for i := range xv {
			xv[i] = r.NormFloat64() * 10
		}
		name := fmt.Sprintf("%v/%v/pseudo=%v/ov=%v", c.shape, c.attrs.PoolingRatio, c.attrs.PseudoRandom, c.attrs.Overlapping)
		for _, threads := range []int{1, 3} {
			x32 := testutil.Convert[float32](xv)
			o32 := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), "FractionalAvgPool", c.attrs, testutil.New(t, c.shape, x32))
			// Same input through the sequences op.
			os := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{Overlapping: c.attrs.Overlapping}, testutil.New(t, c.shape, x32), o32[1], o32[2])
			testutil.SameBits(t, name+"/seq-f32", os[0].Float32s(), o32[0].Float32s())
			testutil.SameBits(t, name+"/seq-ref", os[0].Float32s(), testutil.FracPoolAvg(x32, n, h, w, ch, o32[1].Int64s(), o32[2].Int64s(), c.attrs.Overlapping))
		}
	}
}

// TestFractionalAvgPoolIntegerTruncation checks integer averages truncate
// toward zero, negative sums included.
func TestFractionalAvgPoolIntegerTruncation(t *testing.T) {
	x := testutil.New(t, []int{1, 1, 6, 1}, []int32{-3, -4, 5, 2, 7, -1})
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{}, x, fpInt64s(0, 1), fpInt64s(0, 2, 4, 6))
	// (-7)/2 = -3, 7/2 = 3, 6/2 = 3.
	if fmt.Sprint(out[0].Int32s()) != "[-3 3 3]" {
		t.Fatalf("int32 averages %v, want [-3 3 3]", out[0].Int32s())
	}
}

// TestFractionalAvgPoolSignedZero checks that an all −0 cell averages to
// +0, as TensorFlow's zero-initialised accumulator gives, forward and
// backward.
func TestFractionalAvgPoolSignedZero(t *testing.T) {
	nz := math.Copysign(0, -1)
	x := testutil.New(t, []int{1, 1, 4, 1}, []float64{nz, nz, nz, 1})
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{}, x, fpInt64s(0, 1), fpInt64s(0, 2, 3, 4))
	if v := out[0].Float64s(); math.Signbit(v[0]) || math.Signbit(v[1]) {
		t.Fatalf("forward of −0 cells: %v", v)
	}
	g := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{}, fpInt64s(1, 1, 4, 1), testutil.New(t, []int{1, 1, 3, 1}, []float32{float32(nz), float32(nz), 2}), fpInt64s(0, 1), fpInt64s(0, 2, 3, 4))
	if v := g[0].Float32s(); math.Signbit(float64(v[0])) || math.Signbit(float64(v[2])) || v[3] != 2 {
		t.Fatalf("gradient of −0: %v", v)
	}
	// Overlapping: single and multiple contributions.
	g = registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: true}, fpInt64s(1, 1, 4, 1), testutil.New(t, []int{1, 1, 2, 1}, []float64{nz, nz}), fpInt64s(0, 1), fpInt64s(0, 2, 4))
	for i, v := range g[0].Float64s() {
		if v != 0 || math.Signbit(v) {
			t.Fatalf("overlapping gradient of −0: element %d = %v", i, v)
		}
	}
}

// TestFractionalAvgPoolGrad compares FractionalAvgPoolGrad with the naive
// float64-accumulating reference, bit for bit in every dtype, over
// generated and hand-written sequences (incomplete coverage, sequences
// longer than needed) and thread counts.
func TestFractionalAvgPoolGrad(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	type gc struct {
		shape      []int
		rows, cols []int64
	}
	cases := []gc{
		{[]int{1, 5, 5, 1}, []int64{0, 2, 5}, []int64{0, 2, 5}},
		{[]int{2, 1, 5, 3}, []int64{0, 1}, []int64{0, 2, 4}},
		{[]int{2, 9, 8, 3}, []int64{0, 1, 3, 5, 7, 9, 20}, []int64{0, 3, 6, 8}},
	}
	for i := 0; i < 12; i++ {
		h, w := 2+r.Intn(30), 2+r.Intn(30)
		oh, ow := 1+r.Intn(h), 1+r.Intn(w)
		cases = append(cases, gc{[]int{1 + r.Intn(3), h, w, 1 + r.Intn(5)},
			fpSampleSeq(h, oh, r.Intn(2) == 0, r.Uint64()), fpSampleSeq(w, ow, r.Intn(2) == 0, r.Uint64())})
	}
	for _, c := range cases {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		oh, ow := len(c.rows)-1, len(c.cols)-1
		if c.rows[oh] > int64(h) { // the third case: one extra entry
			oh--
		}
		dv := make([]float64, n*oh*ow*ch)
		for i := range dv {
			dv[i] = r.NormFloat64() * 7
		}
		st := fpInt64s(int64(n), int64(h), int64(w), int64(ch))
		rs, cs := c.rows[:oh+1], c.cols[:ow+1]
		for _, ov := range []bool{false, true} {
			name := fmt.Sprintf("%v rows %v cols %v ov=%v", c.shape, c.rows, c.cols, ov)
			a := forward.FractionalPoolGradAttrs{Overlapping: ov}
			for _, threads := range []int{1, 3} {
				dyShape := []int{n, oh, ow, ch}
				kc := func() *registry.KernelCtx { return registrytest.SeededKC(threads, 1) }
				o := registrytest.MustRunKC(t, kc(), "FractionalAvgPoolGrad", a, st, testutil.New(t, dyShape, dv), fpInt64s(c.rows...), fpInt64s(c.cols...))
				testutil.SameBits(t, name+"/f64", o[0].Float64s(), testutil.FracPoolAvgGrad(dv, n, n, h, w, ch, rs, cs, ov))
				d32 := testutil.Convert[float32](dv)
				o = registrytest.MustRunKC(t, kc(), "FractionalAvgPoolGrad", a, st, testutil.New(t, dyShape, d32), fpInt64s(c.rows...), fpInt64s(c.cols...))
				testutil.SameBits(t, name+"/f32", o[0].Float32s(), testutil.FracPoolAvgGrad(d32, n, n, h, w, ch, rs, cs, ov))
				di := testutil.Convert[int32](dv)
				o = registrytest.MustRunKC(t, kc(), "FractionalAvgPoolGrad", a, st, testutil.New(t, dyShape, di), fpInt64s(c.rows...), fpInt64s(c.cols...))
				testutil.SameBits(t, name+"/i32", o[0].Int32s(), testutil.FracPoolAvgGrad(di, n, n, h, w, ch, rs, cs, ov))
				dl := testutil.Convert[int64](dv)
				o = registrytest.MustRunKC(t, kc(), "FractionalAvgPoolGrad", a, st, testutil.New(t, dyShape, dl), fpInt64s(c.rows...), fpInt64s(c.cols...))
				testutil.SameBits(t, name+"/i64", o[0].Int64s(), testutil.FracPoolAvgGrad(dl, n, n, h, w, ch, rs, cs, ov))
			}
		}
	}
}

// TestFractionalAvgPoolAdjoint checks <AvgPoolWithSequences(x), y> ==
// <x, AvgPoolGrad(y)>: the tapegrad op is the adjoint of the gradient op.
func TestFractionalAvgPoolAdjoint(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 10; i++ {
		n, h, w, c := 1+r.Intn(2), 2+r.Intn(12), 2+r.Intn(12), 1+r.Intn(3)
		rows, cols := fpSampleSeq(h, 1+r.Intn(h), i%2 == 0, uint64(i)), fpSampleSeq(w, 1+r.Intn(w), i%3 == 0, uint64(i+50))
		ov := i%2 == 1
		x := forward.SampleNormal(r, n, h, w, c)
		y := forward.SampleNormal(r, n, len(rows)-1, len(cols)-1, c)
		px := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{Overlapping: ov}, x, fpInt64s(rows...), fpInt64s(cols...))[0]
		gy := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: ov}, fpInt64s(int64(n), int64(h), int64(w), int64(c)), y, fpInt64s(rows...), fpInt64s(cols...))[0]
		l, rr := 0.0, 0.0
		for k, v := range px.Float64s() {
			l += v * y.Float64s()[k]
		}
		for k, v := range x.Float64s() {
			rr += v * gy.Float64s()[k]
		}
		if math.Abs(l-rr) > 1e-12*(1+math.Abs(l)) {
			t.Fatalf("case %d: <Px, y> = %v, <x, P'y> = %v", i, l, rr)
		}
	}
}

// TestFractionalAvgPoolGradSmallerBatch checks an out_backprop with fewer
// images than the original input (valid in TensorFlow: the other images
// get zero gradient), and its adjoint through output_batch.
func TestFractionalAvgPoolGradSmallerBatch(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	rows, cols := []int64{0, 2, 5}, []int64{0, 3, 4}
	dy := forward.SampleNormal(r, 1, 2, 2, 3)
	for _, ov := range []bool{false, true} {
		o := registrytest.MustRunKC(t, registrytest.SeededKC(2, 1), "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: ov}, fpInt64s(3, 5, 4, 3), dy, fpInt64s(rows...), fpInt64s(cols...))[0].Float64s()
		want := testutil.FracPoolAvgGrad(dy.Float64s(), 1, 1, 5, 4, 3, rows, cols, ov)
		want = append(want, make([]float64, 2*5*4*3)...)
		testutil.SameBits(t, fmt.Sprintf("ov=%v", ov), o, want)
		x := forward.SampleNormal(r, 3, 5, 4, 3)
		p := registrytest.MustRunKC(t, registrytest.SeededKC(2, 1), "tapegrad.FractionalAvgPoolWithSequences", forward.FractionalPoolSeqAttrs{Overlapping: ov, OutputBatch: 1}, x, fpInt64s(rows...), fpInt64s(cols...))[0]
		if fmt.Sprint(p.Shape()) != "(1, 2, 2, 3)" {
			t.Fatalf("output_batch 1: shape %v", p.Shape())
		}
		testutil.SameBits(t, "output_batch", p.Float64s(), testutil.FracPoolAvg(x.Float64s()[:5*4*3], 1, 5, 4, 3, rows, cols, ov))
	}
}

// TestFractionalAvgPoolLargeThreads runs FractionalAvgPool and its
// gradient on a batch large enough that their loops split across
// goroutines, with and without overlapping cells, and checks that 1, 2
// and 3 threads give the reference's values.
func TestFractionalAvgPoolLargeThreads(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	const n, h, w, c = 8, 36, 36, 16
	xv := make([]float32, n*h*w*c)
	for i := range xv {
		xv[i] = float32(r.NormFloat64())
	}
	for _, ov := range []bool{false, true} {
		a := forward.FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Overlapping: ov,
			Deterministic: true, Seed: 7, Seed2: 8}
		ref := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), "FractionalAvgPool", a, testutil.New(t, []int{n, h, w, c}, xv))
		rows, cols := ref[1].Int64s(), ref[2].Int64s()
		oh, ow := len(rows)-1, len(cols)-1
		dv := make([]float32, n*oh*ow*c)
		for i := range dv {
			dv[i] = float32(r.NormFloat64())
		}
		name := fmt.Sprintf("ov=%v", ov)
		for _, threads := range []int{1, 2, 3} {
			kc := registrytest.SeededKC(threads, 1)
			out := registrytest.MustRunKC(t, kc, "FractionalAvgPool", a, testutil.New(t, []int{n, h, w, c}, xv))
			testutil.SameBits(t, name+"/fwd", out[0].Float32s(), testutil.FracPoolAvg(xv, n, h, w, c, rows, cols, ov))
			g := registrytest.MustRunKC(t, kc, "FractionalAvgPoolGrad", forward.FractionalPoolGradAttrs{Overlapping: ov},
				fpInt64s(n, h, w, c), testutil.New(t, []int{n, oh, ow, c}, dv), ref[1], ref[2])
			testutil.SameBits(t, name+"/grad", g[0].Float32s(), testutil.FracPoolAvgGrad(dv, n, n, h, w, c, rows, cols, ov))
		}
	}
}
