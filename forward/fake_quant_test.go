package forward

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/fqkern/fqref"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of the fake-quant family's forward ops: the spec's PerChannel test
// vectors bit for bit, an independent float32 emulation of the spec
// (package fqref) over every num_bits and narrow_range, Vars' division
// form, and the attrs. The tests that involve the gradient and adjoint
// ops (ties and bounds, the zero range, ranks, errors, the loops against
// the scalar rules, thread counts, allocations, samples and the W8
// benchmarks) are in backward/fake_quant_kernel_test.go, where every op
// of the family is registered.

// fqFill returns n copies of v.
func fqFill(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// ---------------------------------------------------------------------------
// Spec §7 test vectors.

func TestFakeQuantPerChannelSpecVectors(t *testing.T) {
	type vec struct {
		id       string
		bits     int
		narrow   bool
		min, max float32
		shape    []int
		in, want []float32
	}
	vecs := []vec{
		{"FQ1", 8, false, 0, 0, []int{4}, []float32{0, 0, 0, 0}, []float32{0, 0, 0, 0}},
		{"FQ2", 8, false, -0.1, 63.65, []int{4}, []float32{-0.1, 0.0, 63.75, 63.8}, []float32{0.0, 0.0, 63.75, 63.75}},
		{"FQ3", 8, true, -0.125, 63.375, []int{4}, []float32{-0.26, -0.25, -0.24, 63.3}, []float32{-0.25, -0.25, -0.25, 63.25}},
		{"FQ4", 8, false, -0.1, 63.65, []int{2, 3}, []float32{-0.1, 0.0, 0.1, 0.25, 63.75, 63.80}, []float32{0.0, 0.0, 0.0, 0.25, 63.75, 63.75}},
		{"FQ5", 8, false, -0.125, 63.625, []int{2, 3}, []float32{-0.26, -0.25, -0.24, 0.0, 63.5, 63.6}, []float32{-0.25, -0.25, -0.25, 0.0, 63.5, 63.5}},
		{"FQ6", 8, false, -0.125, 63.625, []int{1, 2, 3, 4},
			[]float32{-0.3, -0.25, -0.2, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 63.0, 63.25, 63.4, 63.5, 63.6, 63.7, 100, 100, 100, 100, 100, 1000},
			[]float32{-0.25, -0.25, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 63.0, 63.25, 63.5, 63.5, 63.5, 63.5, 63.5, 63.5, 63.5, 63.5, 63.5, 63.5}},
		{"FQ7", 8, true, -0.125, 63.375, []int{1, 2, 3, 4},
			[]float32{-0.3, -0.25, -0.2, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 63.0, 63.2, 63.25, 63.3, 63.4, 63.5, 100, 100, 100, 100, 100, 1000},
			[]float32{-0.25, -0.25, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 63.0, 63.25, 63.25, 63.25, 63.25, 63.25, 63.25, 63.25, 63.25, 63.25, 63.25, 63.25}},
		{"FQ8", 4, false, -0.4, 7.1, []int{2, 3}, []float32{-0.51, -0.5, -0.24, 0.0, 7.0, 7.1}, []float32{-0.5, -0.5, 0.0, 0.0, 7.0, 7.0}},
		{"FQ9", 4, true, -0.1, 6.9, []int{1, 2, 3, 4},
			[]float32{-0.1, 0.0, 0.1, 0.5, 1.0, 1.5, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 6.0, 6.5, 6.8, 6.9, 7.0, 7.1, 7.2, 100, 100, 100, 100, 1000},
			[]float32{0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 6.0, 6.5, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0}},
	}
	for _, v := range vecs {
		d := v.shape[len(v.shape)-1]
		attrs := FakeQuantAttrs{NumBits: v.bits, NarrowRange: v.narrow}
		for _, threads := range []int{1, 3} {
			out := registrytest.MustRun(t, fqChannel, attrs, threads,
				testutil.New(t, v.shape, v.in), testutil.New(t, []int{d}, fqFill(d, v.min)), testutil.New(t, []int{d}, fqFill(d, v.max)))
			testutil.EqualBits(t, v.id, out[0], v.want)
		}
		in64, want64 := make([]float64, len(v.in)), make([]float64, len(v.want))
		for i := range v.in {
			in64[i], want64[i] = float64(v.in[i]), float64(v.want[i])
		}
		mins, maxs := make([]float64, d), make([]float64, d)
		for c := range mins {
			mins[c], maxs[c] = float64(v.min), float64(v.max)
		}
		// float64 runs the same algorithm in float64 arithmetic: its
		// grid differs from float32's in the last bits where the range is
		// not exact in float32 (FQ2's 63.65 - -0.1 is 63.75 in float32
		// only), so the values agree to float32 precision.
		out := registrytest.MustRun(t, fqChannel, attrs, 1, testutil.New(t, v.shape, in64), testutil.New(t, []int{d}, mins), testutil.New(t, []int{d}, maxs))
		fqCloseTo(t, v.id+"/float64", out[0], want64, 1e-6)
	}
}

// TestFakeQuantVsEmulation compares every forward op with the float32
// emulation, bit for bit, over every num_bits and narrow_range, and the
// float64 kernels with the same algorithm in float64.
func TestFakeQuantVsEmulation(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for bits := 2; bits <= 16; bits++ {
		for _, narrow := range []bool{false, true} {
			attrs := FakeQuantAttrs{NumBits: bits, NarrowRange: narrow}
			// PerChannel, rank 3, 5 channels.
			const rows, d = 6, 5
			shape := []int{2, 3, d}
			mins, maxs := make([]float32, d), make([]float32, d)
			x := make([]float32, rows*d)
			for c := 0; c < d; c++ {
				mins[c], maxs[c] = fqref.RandomRange(r)
				col := fqref.RandomInputs(r, rows, mins[c], maxs[c])
				for i := 0; i < rows; i++ {
					x[i*d+c] = col[i]
				}
			}
			want := make([]float32, len(x))
			for i, v := range x {
				want[i] = fqref.Ref32(v, mins[i%d], maxs[i%d], bits, narrow, false)
			}
			out := registrytest.MustRun(t, fqChannel, attrs, 2, testutil.New(t, shape, x), testutil.New(t, []int{d}, mins), testutil.New(t, []int{d}, maxs))
			testutil.EqualBits(t, "PerChannel emulation", out[0], want)

			// float64.
			x64, mn64, mx64 := testutil.Convert[float64](x), testutil.Convert[float64](mins), testutil.Convert[float64](maxs)
			want64 := make([]float64, len(x))
			for i, v := range x64 {
				want64[i] = fqref.RefQuant(v, mn64[i%d], mx64[i%d], bits, narrow, false, func(v float64) float64 { return v })
			}
			out = registrytest.MustRun(t, fqChannel, attrs, 2, testutil.New(t, shape, x64), testutil.New(t, []int{d}, mn64), testutil.New(t, []int{d}, mx64))
			testutil.EqualBits(t, "PerChannel float64", out[0], want64)

			// Vars (division form) and Args (multiplication form), with a
			// valid range for Args.
			mn, mx := fqref.RandomRange(r)
			xs := fqref.RandomInputs(r, 40, mn, mx)
			wantV := make([]float32, len(xs))
			for i, v := range xs {
				wantV[i] = fqref.Ref32(v, mn, mx, bits, narrow, true)
			}
			out = registrytest.MustRun(t, fqVars, attrs, 2, testutil.New(t, []int{5, 8}, xs), testutil.New(t, nil, []float32{mn}), testutil.New(t, nil, []float32{mx}))
			testutil.EqualBits(t, "Vars emulation", out[0], wantV)
			if !(mn < mx) {
				mn, mx = -1.5, 2.25
			}
			wantA := make([]float32, len(xs))
			for i, v := range xs {
				wantA[i] = fqref.Ref32(v, mn, mx, bits, narrow, false)
			}
			out = registrytest.MustRun(t, fqArgs, FakeQuantArgsAttrs{Min: &mn, Max: &mx, NumBits: bits, NarrowRange: narrow}, 2, testutil.New(t, []int{40}, xs))
			testutil.EqualBits(t, "Args emulation", out[0], wantA)
		}
	}
}

// TestFakeQuantVarsDivision checks that Vars divides by the scale while
// PerChannel and Args multiply by the separately computed inverse scale:
// each agrees with its own emulation over 20 000 random cases, and on
// inputs where the two forms differ (found by searching the emulation)
// each op gives its own form's result.
func TestFakeQuantVarsDivision(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const n = 20000
	x, mins, maxs := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		a, b := float32(-r.Float64()*10), float32(r.Float64()*10)
		mins[i], maxs[i] = a, b
		x[i] = float32(float64(a) + (float64(b)-float64(a))*r.Float64())
	}
	attrs := FakeQuantAttrs{NumBits: 12}
	differ := 0
	for i := range x {
		v := registrytest.MustRun(t, fqVars, attrs, 1, testutil.New(t, []int{1}, []float32{x[i]}), testutil.New(t, nil, []float32{mins[i]}), testutil.New(t, nil, []float32{maxs[i]}))[0].Float32s()[0]
		if want := fqref.Ref32(x[i], mins[i], maxs[i], 12, false, true); math.Float32bits(v) != math.Float32bits(want) {
			t.Fatalf("Vars(%v in [%v, %v]) = %v, emulation %v", x[i], mins[i], maxs[i], v, want)
		}
		if v != fqref.Ref32(x[i], mins[i], maxs[i], 12, false, false) {
			differ++
		}
	}
	// One PerChannel call over all of them (one channel per element).
	out := registrytest.MustRun(t, fqChannel, attrs, 1, testutil.New(t, []int{n}, x), testutil.New(t, []int{n}, mins), testutil.New(t, []int{n}, maxs))
	want := make([]float32, n)
	for i := range want {
		want[i] = fqref.Ref32(x[i], mins[i], maxs[i], 12, false, false)
	}
	testutil.EqualBits(t, "PerChannel 20000", out[0], want)
	t.Logf("12 bits: division and multiplication by the inverse differ in %d of %d cases", differ, n)

	f := math.Float32frombits
	for _, c := range []struct {
		bits        int
		x, min, max uint32
		div, mul    float32
	}{
		{3, 0x40cd4ab7, 0xc098fd16, 0x4100cc2e, 7.331853, 5.49889},
		{9, 0xc0623235, 0xc11c6b0e, 0x405d1cd4, -3.5213675, -3.54726},
		{16, 0x40653222, 0xbf8bc2f8, 0x40afe163, 3.581135, 3.5812356},
	} {
		x, mn, mx := f(c.x), f(c.min), f(c.max)
		a := FakeQuantAttrs{NumBits: c.bits}
		v := registrytest.MustRun(t, fqVars, a, 1, testutil.New(t, []int{1}, []float32{x}), testutil.New(t, nil, []float32{mn}), testutil.New(t, nil, []float32{mx}))
		testutil.EqualBits(t, "Vars divides", v[0], []float32{c.div})
		p := registrytest.MustRun(t, fqChannel, a, 1, testutil.New(t, []int{1}, []float32{x}), testutil.New(t, []int{1}, []float32{mn}), testutil.New(t, []int{1}, []float32{mx}))
		testutil.EqualBits(t, "PerChannel multiplies", p[0], []float32{c.mul})
		g := registrytest.MustRun(t, fqArgs, FakeQuantArgsAttrs{Min: &mn, Max: &mx, NumBits: c.bits}, 1, testutil.New(t, []int{1}, []float32{x}))
		testutil.EqualBits(t, "Args multiplies", g[0], []float32{c.mul})
	}
}

// fqCloseTo compares with relative tolerance rtol (0: exactly).
func fqCloseTo(t testing.TB, what string, got *tensor.Dense, want []float64, rtol float64) {
	t.Helper()
	testutil.Close(t, what, testutil.Float64s(t, got), want, testutil.Tol{Rel: rtol})
}

// TestFakeQuantAttrs: TF defaults through the registry's attr parser, and
// explicit zeros of the Args range.
func TestFakeQuantAttrs(t *testing.T) {
	def, err := registry.Lookup(fqArgs)
	if err != nil {
		t.Fatal(err)
	}
	a, err := def.ParseAttrs(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	aa := a.(FakeQuantArgsAttrs)
	if *aa.Min != -6 || *aa.Max != 6 || aa.NumBits != 8 || aa.NarrowRange {
		t.Fatalf("Args defaults = %+v", aa)
	}
	a, err = def.ParseAttrs(map[string]any{"min": 0.0, "max": 1.5, "num_bits": 4.0, "narrow_range": true})
	if err != nil {
		t.Fatal(err)
	}
	aa = a.(FakeQuantArgsAttrs)
	if *aa.Min != 0 || *aa.Max != 1.5 || aa.NumBits != 4 || !aa.NarrowRange {
		t.Fatalf("Args attrs = %+v", aa)
	}
	// min 0 is honoured, not replaced by the default -6.
	out := registrytest.MustRun(t, fqArgs, aa, 1, testutil.New(t, []int{3}, []float32{-1, 0.7, 2}))
	want := []float32{0, fqref.Ref32(0.7, 0, 1.5, 4, true, false), 1.5}
	testutil.EqualBits(t, "Args min 0", out[0], want)
	def, err = registry.Lookup(fqChannel)
	if err != nil {
		t.Fatal(err)
	}
	a, err = def.ParseAttrs(map[string]any{"num_bits": 17.0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registrytest.Run(t, fqChannel, a, 1, testutil.New(t, []int{1}, []float32{1}), testutil.New(t, []int{1}, []float32{0}), testutil.New(t, []int{1}, []float32{1})); err == nil {
		t.Fatal("num_bits 17 from the parser was accepted")
	}
	a, err = def.ParseAttrs(nil)
	if err != nil || a.(FakeQuantAttrs).NumBits != 8 {
		t.Fatalf("PerChannel defaults = %+v, %v", a, err)
	}
}

// TestFakeQuantExplicitZeroNumBits: num_bits 0 given explicitly (as in a
// golden case) is refused as TensorFlow refuses it, while a zero field in a
// Go attr struct means the default 8.
func TestFakeQuantExplicitZeroNumBits(t *testing.T) {
	def, err := registry.Lookup("FakeQuantWithMinMaxVarsPerChannel")
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tensorx.New([]int{2}, []float32{0.5, -0.25})
	lo, _ := tensorx.New([]int{2}, []float32{-1, -1})
	hi, _ := tensorx.New([]int{2}, []float32{1, 1})
	a, err := def.ParseAttrsExact(map[string]any{"num_bits": 0.0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.Run(def, nil, a, []*tensor.Dense{x, lo, hi}); !errors.Is(err, registry.ErrInvalidArgument) {
		t.Fatalf("explicit num_bits 0: err = %v", err)
	}
	if _, err := registry.Run(def, nil, FakeQuantAttrs{}, []*tensor.Dense{x, lo, hi}); err != nil {
		t.Fatalf("zero Go field (default 8): %v", err)
	}
}
