package backward

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/fqkern"
	"github.com/tapegrad/tapegrad/internal/fqkern/fqref"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Op names of the family's forward ops, for the tests.
const (
	fqArgs    = "FakeQuantWithMinMaxArgs"
	fqVars    = "FakeQuantWithMinMaxVars"
	fqChannel = "FakeQuantWithMinMaxVarsPerChannel"
)

// Tests of the fake-quant family's kernels that involve the gradient and
// adjoint ops (registered in this package): the spec's gradient test
// vectors bit for bit, ties and exact bounds, the zero range, the gradient
// ops' masks and sums against a reference written from the spec (package
// fqref's emulation), the loops against the scalar rules, thread-count
// invariance, ranks, every error, the samples, allocations and the W8
// benchmarks. Each also runs the forward ops next to their gradients.

// fqFill returns n copies of v.
func fqFill(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// fqGrads are fixed "random" upstream gradients for the gradient vectors.
var fqGrads = []float32{0.5, -1.25, 2, 0.75, -3.5, 1.5, 0.125, -0.625, 4, -2.25, 1.75, 0.375, -1, 2.5, -0.25, 3, 0.875, -1.5, 2.25, -0.5, 1.25, -2.75, 0.625, 3.25}

func TestFakeQuantPerChannelGradientSpecVectors(t *testing.T) {
	type vec struct {
		id         string
		bits       int
		narrow     bool
		min, max   float32
		shape      []int
		in         []float32
		mask       []bool // inside the nudged range
		below, abv []int  // flat indices summed into the min / max gradients
	}
	rep := func(s []float32, n int) []float32 {
		var out []float32
		for i := 0; i < n; i++ {
			out = append(out, s...)
		}
		return out
	}
	repb := func(s []bool, n int) []bool {
		var out []bool
		for i := 0; i < n; i++ {
			out = append(out, s...)
		}
		return out
	}
	vecs := []vec{
		{"FQG1", 8, false, 0, 0, []int{4}, []float32{0, 0, 0, 0}, []bool{true, true, true, true}, nil, nil},
		{"FQG2", 8, false, -0.1, 63.65, []int{4}, []float32{-0.1, 0.0, 63.75, 63.8}, []bool{false, true, true, false}, []int{0}, []int{3}},
		{"FQG3", 8, true, -0.125, 63.375, []int{4}, []float32{-0.3, -0.25, 63.25, 63.3}, []bool{false, true, true, false}, []int{0}, []int{3}},
		{"FQG4", 8, false, -0.1, 63.65, []int{2, 3}, []float32{-0.1, 0.0, 0.1, 0.25, 63.75, 63.8},
			[]bool{false, true, true, true, true, false}, []int{0}, []int{5}},
		{"FQG5", 8, false, -0.1, 63.65, []int{1, 2, 3, 4}, rep([]float32{-0.1, 0.0, 63.75, 63.8}, 6),
			repb([]bool{false, true, true, false}, 6), []int{0, 4, 8, 12, 16, 20}, []int{3, 7, 11, 15, 19, 23}},
	}
	for _, v := range vecs {
		d := v.shape[len(v.shape)-1]
		n := len(v.in)
		g := fqGrads[:n]
		wantBi := make([]float32, n)
		for i := range wantBi {
			if v.mask[i] {
				wantBi[i] = g[i]
			}
		}
		wantMin, wantMax := make([]float32, d), make([]float32, d)
		for _, i := range v.below {
			wantMin[i%d] += g[i]
		}
		for _, i := range v.abv {
			wantMax[i%d] += g[i]
		}
		attrs := forward.FakeQuantAttrs{NumBits: v.bits, NarrowRange: v.narrow}
		out := registrytest.MustRun(t, fqChannelGrad, attrs, 2,
			testutil.New(t, v.shape, g), testutil.New(t, v.shape, v.in), testutil.New(t, []int{d}, fqFill(d, v.min)), testutil.New(t, []int{d}, fqFill(d, v.max)))
		testutil.EqualBits(t, v.id+"/backprops_wrt_input", out[0], wantBi)
		testutil.EqualBits(t, v.id+"/backprop_wrt_min", out[1], wantMin)
		testutil.EqualBits(t, v.id+"/backprop_wrt_max", out[2], wantMax)
	}
}

func TestFakeQuantScalarSpecVectors(t *testing.T) {
	f := func(v float32) *float32 { return &v }
	// WithArgsNoNudging_RegularRange.
	out := registrytest.MustRun(t, fqArgs, forward.FakeQuantArgsAttrs{Min: f(-10), Max: f(53.75)}, 1,
		testutil.New(t, []int{6}, []float32{-10.1, -10.0, -9.9, -9.75, 53.75, 53.8}))
	testutil.EqualBits(t, "WithArgsNoNudging", out[0], []float32{-10.0, -10.0, -10.0, -9.75, 53.75, 53.75})
	// WithArgsNudgedUp_4Bits_RegularRange: the test writes -0.0; TF
	// computes +0.0.
	out = registrytest.MustRun(t, fqArgs, forward.FakeQuantArgsAttrs{Min: f(-0.4), Max: f(7.1), NumBits: 4}, 1,
		testutil.New(t, []int{6}, []float32{-0.6, -0.5, -0.24, 0.0, 7.0, 7.1}))
	testutil.EqualBits(t, "WithArgsNudgedUp_4Bits", out[0], []float32{-0.5, -0.5, 0.0, 0.0, 7.0, 7.0})
	// api_def example, 16 bits.
	out = registrytest.MustRun(t, fqArgs, forward.FakeQuantArgsAttrs{Min: f(-5), Max: f(5), NumBits: 16}, 1,
		testutil.New(t, []int{3}, []float32{10.03, -10.23, 3}))
	testutil.EqualBits(t, "api_def example", out[0], []float32{4.9999237, -5.0000763, 3.0000763})
	// The defaults are [-6, 6], 8 bits: scale 12/255, zero point 127.5 → 128.
	out = registrytest.MustRun(t, fqArgs, nil, 1, testutil.New(t, []int{3}, []float32{-7, 0, 7}))
	sc := float32(12) / 255
	testutil.EqualBits(t, "Args defaults", out[0], []float32{-128 * sc, 0, 127 * sc})

	// WithVarsGradient_RegularRange.
	g := fqGrads[:6]
	out = registrytest.MustRun(t, fqVarsGrad, nil, 1, testutil.New(t, []int{6}, g), testutil.New(t, []int{6}, []float32{-0.26, -0.25, -0.24, 0.0, 63.5, 63.6}),
		testutil.New(t, nil, []float32{-0.125}), testutil.New(t, nil, []float32{63.625}))
	testutil.EqualBits(t, "VarsGradient/input", out[0], []float32{0, g[1], g[2], g[3], g[4], 0})
	testutil.EqualBits(t, "VarsGradient/min", out[1], []float32{g[0]})
	testutil.EqualBits(t, "VarsGradient/max", out[2], []float32{g[5]})
	// The Vars forward on FQ5's data (the division form agrees here).
	out = registrytest.MustRun(t, fqVars, nil, 1, testutil.New(t, []int{6}, []float32{-0.26, -0.25, -0.24, 0.0, 63.5, 63.6}),
		testutil.New(t, nil, []float32{-0.125}), testutil.New(t, nil, []float32{63.625}))
	testutil.EqualBits(t, "Vars", out[0], []float32{-0.25, -0.25, -0.25, 0.0, 63.5, 63.5})
	// ArgsGradient: inclusive bounds, same nudged range as above.
	out = registrytest.MustRun(t, fqArgsGrad, forward.FakeQuantArgsAttrs{Min: f(-0.125), Max: f(63.625)}, 1,
		testutil.New(t, []int{6}, g), testutil.New(t, []int{6}, []float32{-0.26, -0.25, -0.24, 0.0, 63.5, 63.6}))
	testutil.EqualBits(t, "ArgsGradient", out[0], []float32{0, g[1], g[2], g[3], g[4], 0})
}

// TestFakeQuantTiesAndBounds: exact halves round up (toward +∞), values
// exactly at the nudged bounds are inside for the gradient, the next float
// outside is outside, ±Inf clamp, and grid index 0 is +0.
func TestFakeQuantTiesAndBounds(t *testing.T) {
	// min -0.125, max 63.625, 8 bits: scale 0.25, zero point 0.5 → 1,
	// grid [-0.25, 63.5].
	lo, hi := float32(-0.25), float32(63.5)
	below, above := math.Nextafter32(lo, -1), math.Nextafter32(hi, 100)
	inf, ninf := float32(math.Inf(1)), float32(math.Inf(-1))
	x := []float32{-0.125, 0.125, 0.375, -0.375, 63.375, lo, hi, below, above, inf, ninf, -0.24, float32(math.Copysign(0, -1))}
	// -0.125 and 0.125, 0.375, 63.375 are exact half steps: they round up.
	want := []float32{0, 0.25, 0.5, -0.25, 63.5, lo, hi, lo, hi, hi, lo, -0.25, 0}
	for _, op := range []string{fqChannel, fqVars, fqArgs} {
		var out []*tensor.Dense
		switch op {
		case fqChannel:
			out = registrytest.MustRun(t, op, nil, 1, testutil.New(t, []int{len(x), 1}, x), testutil.New(t, []int{1}, []float32{-0.125}), testutil.New(t, []int{1}, []float32{63.625}))
		case fqVars:
			out = registrytest.MustRun(t, op, nil, 1, testutil.New(t, []int{len(x)}, x), testutil.New(t, nil, []float32{-0.125}), testutil.New(t, nil, []float32{63.625}))
		default:
			mn, mx := float32(-0.125), float32(63.625)
			out = registrytest.MustRun(t, op, forward.FakeQuantArgsAttrs{Min: &mn, Max: &mx}, 1, testutil.New(t, []int{len(x)}, x))
		}
		testutil.EqualBits(t, op+" ties/bounds", out[0], want)
	}
	// Gradients at the bounds: lo and hi inside, their neighbours and ±Inf
	// outside.
	gx := []float32{lo, hi, below, above, inf, ninf, 0}
	g := []float32{1, 2, 4, 8, 16, 32, 64}
	out := registrytest.MustRun(t, fqChannelGrad, nil, 1, testutil.New(t, []int{7, 1}, g), testutil.New(t, []int{7, 1}, gx), testutil.New(t, []int{1}, []float32{-0.125}), testutil.New(t, []int{1}, []float32{63.625}))
	testutil.EqualBits(t, "grad at bounds/input", out[0], []float32{1, 2, 0, 0, 0, 0, 64})
	testutil.EqualBits(t, "grad at bounds/min", out[1], []float32{4 + 32})
	testutil.EqualBits(t, "grad at bounds/max", out[2], []float32{8 + 16})
	// narrow_range ties: min -0.125, max 63.375 → grid [-0.25, 63.25].
	out = registrytest.MustRun(t, fqChannel, forward.FakeQuantAttrs{NarrowRange: true}, 1,
		testutil.New(t, []int{4}, []float32{-0.125, 0.125, 63.125, 63.25}), fqFillT(t, 4, -0.125), fqFillT(t, 4, 63.375))
	testutil.EqualBits(t, "narrow ties", out[0], []float32{0, 0.25, 63.25, 63.25})
}

func fqFillT(t testing.TB, n int, v float32) *tensor.Dense {
	return testutil.New(t, []int{n}, fqFill(n, v))
}

// TestFakeQuantZeroRange: min == max == 0 gives 0 (also for NaN and ±Inf
// inputs) and passes every gradient through, per channel.
func TestFakeQuantZeroRange(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	x := []float32{nan, 0.5, -inf, 0.3, inf, nan, 5, -2}
	mins := testutil.New(t, []int{2}, []float32{0, -1})
	maxs := testutil.New(t, []int{2}, []float32{0, 1})
	out := registrytest.MustRun(t, fqChannel, nil, 1, testutil.New(t, []int{4, 2}, x), mins, maxs)
	q := func(v float32) float32 { return fqref.Ref32(v, -1, 1, 8, false, false) }
	testutil.EqualBits(t, "zero channel", out[0], []float32{0, q(0.5), 0, q(0.3), 0, nan, 0, q(-2)})
	g := fqGrads[:8]
	out = registrytest.MustRun(t, fqChannelGrad, nil, 1, testutil.New(t, []int{4, 2}, g), testutil.New(t, []int{4, 2}, x), mins, maxs)
	testutil.EqualBits(t, "zero channel grad", out[0], []float32{g[0], g[1], g[2], g[3], g[4], 0, g[6], 0})
	testutil.EqualBits(t, "zero channel grad min", out[1], []float32{0, g[7]})
	testutil.EqualBits(t, "zero channel grad max", out[2], []float32{0, 0})
	out = registrytest.MustRun(t, fqVars, nil, 1, testutil.New(t, []int{4}, []float32{nan, inf, -3, 2}), testutil.New(t, nil, []float32{0}), testutil.New(t, nil, []float32{0}))
	testutil.EqualBits(t, "Vars zero", out[0], []float32{0, 0, 0, 0})
	out = registrytest.MustRun(t, fqVarsGrad, nil, 1, testutil.New(t, []int{4}, g[:4]), testutil.New(t, []int{4}, []float32{nan, inf, -3, 2}), testutil.New(t, nil, []float32{0}), testutil.New(t, nil, []float32{0}))
	testutil.EqualBits(t, "VarsGradient zero", out[0], g[:4])
	testutil.EqualBits(t, "VarsGradient zero min", out[1], []float32{0})
	testutil.EqualBits(t, "VarsGradient zero max", out[2], []float32{0})
}

// ---------------------------------------------------------------------------
// Gradient and adjoint ops against a reference written from spec §4.

// fqRefMasks returns, per element, -1 (below), 0 (inside) or 1 (above),
// or 2 for a NaN input, with the zero range passing everything.
func fqRefMasks(x, mins, maxs []float64, d, bits int, narrow bool, round func(float64) float64) []int {
	m := make([]int, len(x))
	for i, v := range x {
		c := i % d
		if mins[c] == 0 && maxs[c] == 0 {
			continue
		}
		nmin, nmax, _, _ := fqref.RefNudge(mins[c], maxs[c], bits, narrow, round)
		switch {
		case v >= nmin && v <= nmax:
		case v < nmin:
			m[i] = -1
		case v > nmax:
			m[i] = 1
		default:
			m[i] = 2
		}
	}
	return m
}

func TestFakeQuantGradientVsReference(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	shapes := [][]int{{7}, {4, 3}, {2, 3, 4}, {2, 2, 3, 5}, {3, 1}, {0, 3}, {2, 0}, {1, 1, 1, 1}}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		round := fqref.R
		if dt == tensor.Float64 {
			round = func(v float64) float64 { return v }
		}
		for si, shape := range shapes {
			bits, narrow := 2+si%15, si%2 == 1
			attrs := forward.FakeQuantAttrs{NumBits: bits, NarrowRange: narrow}
			d := shape[len(shape)-1]
			n := fqref.Numel(shape)
			mins, maxs := make([]float64, d), make([]float64, d)
			for c := range mins {
				a, b := fqref.RandomRange(r)
				if c == 1 {
					a, b = 0, 0
				}
				mins[c], maxs[c] = float64(a), float64(b)
			}
			x, g := make([]float64, n), make([]float64, n)
			for i := range x {
				c := i % d
				x[i] = float64(fqref.RandomInputs(r, 1, float32(mins[c]), float32(maxs[c]))[0])
				g[i] = float64(float32(r.NormFloat64()))
			}
			m := fqRefMasks(x, mins, maxs, d, bits, narrow, round)
			wantBi := make([]float64, n)
			wantMin, wantMax := make([]float64, d), make([]float64, d)
			for i := range x {
				switch m[i] {
				case 0:
					wantBi[i] = g[i]
				case -1:
					wantMin[i%d] += g[i]
				case 1:
					wantMax[i%d] += g[i]
				}
			}
			in := []*tensor.Dense{testutil.Dense(t, dt, shape, g), testutil.Dense(t, dt, shape, x), testutil.Dense(t, dt, []int{d}, mins), testutil.Dense(t, dt, []int{d}, maxs)}
			out := registrytest.MustRun(t, fqChannelGrad, attrs, 2, in...)
			fqCloseTo(t, "PerChannelGradient input", out[0], wantBi, 0)
			fqCloseTo(t, "PerChannelGradient min", out[1], wantMin, 1e-6)
			fqCloseTo(t, "PerChannelGradient max", out[2], wantMax, 1e-6)

			// Adjoint: d_backprops inside, d_min below, d_max above.
			dbi, dmn, dmx := make([]float64, n), make([]float64, d), make([]float64, d)
			for i := range dbi {
				dbi[i] = float64(float32(r.NormFloat64()))
			}
			for c := range dmn {
				dmn[c], dmx[c] = float64(float32(r.NormFloat64())), float64(float32(r.NormFloat64()))
			}
			want := make([]float64, n)
			for i := range want {
				switch m[i] {
				case 0:
					want[i] = dbi[i]
				case -1:
					want[i] = dmn[i%d]
				case 1:
					want[i] = dmx[i%d]
				}
			}
			out = registrytest.MustRun(t, fqChannelAdj, attrs, 2, testutil.Dense(t, dt, shape, dbi), testutil.Dense(t, dt, []int{d}, dmn), testutil.Dense(t, dt, []int{d}, dmx), in[1], in[2], in[3])
			fqCloseTo(t, "PerChannel adjoint", out[0], want, 0)

			// Scalar forms on channel 0's range (a new one if there is no
			// channel), the whole tensor.
			if d == 0 {
				a, b := fqref.RandomRange(r)
				mins, maxs = []float64{float64(a)}, []float64{float64(b)}
				dmn, dmx = []float64{1.5}, []float64{-2.5}
			}
			sm := fqRefMasks(x, mins[:1], maxs[:1], 1, bits, narrow, round)
			wantBi = make([]float64, n)
			var smin, smax float64
			want = make([]float64, n)
			for i := range x {
				switch sm[i] {
				case 0:
					wantBi[i], want[i] = g[i], dbi[i]
				case -1:
					smin += g[i]
					want[i] = dmn[0]
				case 1:
					smax += g[i]
					want[i] = dmx[0]
				}
			}
			s0 := func(v float64) *tensor.Dense { return testutil.Dense(t, dt, nil, []float64{v}) }
			out = registrytest.MustRun(t, fqVarsGrad, attrs, 2, in[0], in[1], s0(mins[0]), s0(maxs[0]))
			fqCloseTo(t, "VarsGradient input", out[0], wantBi, 0)
			fqCloseTo(t, "VarsGradient min", out[1], []float64{smin}, 1e-6)
			fqCloseTo(t, "VarsGradient max", out[2], []float64{smax}, 1e-6)
			out = registrytest.MustRun(t, fqVarsAdj, attrs, 2, testutil.Dense(t, dt, shape, dbi), s0(dmn[0]), s0(dmx[0]), in[1], s0(mins[0]), s0(maxs[0]))
			fqCloseTo(t, "Vars adjoint", out[0], want, 0)
			if mins[0] < maxs[0] {
				lo, hi := float32(mins[0]), float32(maxs[0])
				out = registrytest.MustRun(t, fqArgsGrad, forward.FakeQuantArgsAttrs{Min: &lo, Max: &hi, NumBits: bits, NarrowRange: narrow}, 2, in[0], in[1])
				fqCloseTo(t, "ArgsGradient", out[0], wantBi, 0)
			}
		}
	}
}

// TestFakeQuantThreadInvariance: outputs and the chunked min/max sums are
// bit-identical for any thread count, on a tensor spanning many chunks.
func TestFakeQuantThreadInvariance(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	const rows, d = 3001, 37
	x, g := make([]float32, rows*d), make([]float32, rows*d)
	mins, maxs := make([]float32, d), make([]float32, d)
	for c := range mins {
		mins[c], maxs[c] = float32(-r.Float64()), float32(r.Float64())
	}
	for i := range x {
		x[i] = float32(2.4*r.Float64() - 1.2)
		g[i] = float32(r.NormFloat64())
	}
	in := []*tensor.Dense{testutil.New(t, []int{rows, d}, g), testutil.New(t, []int{rows, d}, x), testutil.New(t, []int{d}, mins), testutil.New(t, []int{d}, maxs)}
	ref := registrytest.MustRun(t, fqChannelGrad, nil, 1, in...)
	refF := registrytest.MustRun(t, fqChannel, nil, 1, in[1:]...)
	refV := registrytest.MustRun(t, fqVarsGrad, nil, 1, in[0], in[1], testutil.New(t, nil, []float32{-0.7}), testutil.New(t, nil, []float32{0.9}))
	for _, threads := range []int{2, 3, 8} {
		out := registrytest.MustRun(t, fqChannelGrad, nil, threads, in...)
		for k := range out {
			testutil.EqualBits(t, "PerChannelGradient threads", out[k], ref[k].Float32s())
		}
		testutil.EqualBits(t, "PerChannel threads", registrytest.MustRun(t, fqChannel, nil, threads, in[1:]...)[0], refF[0].Float32s())
		outV := registrytest.MustRun(t, fqVarsGrad, nil, threads, in[0], in[1], testutil.New(t, nil, []float32{-0.7}), testutil.New(t, nil, []float32{0.9}))
		for k := range outV {
			testutil.EqualBits(t, "VarsGradient threads", outV[k], refV[k].Float32s())
		}
	}
	// The min/max sums are accumulated in float64: compare with a float64
	// sum rounded once.
	wantMin, wantMax := make([]float64, d), make([]float64, d)
	for i, v := range x {
		c := i % d
		nmin, nmax, _, _ := fqref.RefNudge(float64(mins[c]), float64(maxs[c]), 8, false, fqref.R)
		if float64(v) < nmin {
			wantMin[c] += float64(g[i])
		} else if float64(v) > nmax {
			wantMax[c] += float64(g[i])
		}
	}
	for c := range wantMin {
		if ref[1].Float32s()[c] != float32(wantMin[c]) || ref[2].Float32s()[c] != float32(wantMax[c]) {
			t.Fatalf("channel %d: sums %v %v, want %v %v", c, ref[1].Float32s()[c], ref[2].Float32s()[c], float32(wantMin[c]), float32(wantMax[c]))
		}
	}
}

// TestFakeQuantRanks: PerChannel accepts any rank >= 1 (the channel is the
// last axis) and empty tensors; its gradient op rank 1..4.
func TestFakeQuantRanks(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	for _, shape := range [][]int{{3}, {2, 3}, {1, 2, 3}, {2, 1, 2, 3}, {1, 2, 1, 2, 3}, {2, 1, 1, 1, 2, 3}} {
		n := fqref.Numel(shape)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(3*r.Float64() - 1.5)
		}
		mins, maxs := []float32{-1, -0.3, 0.2}, []float32{1, 0.9, 1.1}
		want := make([]float32, n)
		for i, v := range x {
			want[i] = fqref.Ref32(v, mins[i%3], maxs[i%3], 5, true, false)
		}
		out := registrytest.MustRun(t, fqChannel, forward.FakeQuantAttrs{NumBits: 5, NarrowRange: true}, 2, testutil.New(t, shape, x), testutil.New(t, []int{3}, mins), testutil.New(t, []int{3}, maxs))
		testutil.EqualBits(t, "rank "+tensorx.FormatShape(shape), out[0], want)
	}
	for _, shape := range [][]int{{0}, {0, 4}, {3, 0}, {2, 0, 5}} {
		d := shape[len(shape)-1]
		x := testutil.New(t, shape, []float32{})
		mn, mx := testutil.New(t, []int{d}, fqFill(d, -1)), testutil.New(t, []int{d}, fqFill(d, 1))
		out := registrytest.MustRun(t, fqChannel, nil, 1, x, mn, mx)
		if !tensorx.SameShape(out[0].Shape(), shape) {
			t.Fatalf("empty %v: shape %v", shape, out[0].Shape())
		}
		out = registrytest.MustRun(t, fqChannelGrad, nil, 1, x, x, mn, mx)
		testutil.EqualBits(t, "empty grad min", out[1], make([]float32, d))
		testutil.EqualBits(t, "empty grad max", out[2], make([]float32, d))
	}
}

// ---------------------------------------------------------------------------
// Errors.

func TestFakeQuantErrors(t *testing.T) {
	x31 := testutil.New(t, []int{3, 1}, []float32{1, 2, 4})
	v := func(s []int, x ...float32) *tensor.Dense { return testutil.New(t, s, x) }
	run := func(op string, attrs any, in ...*tensor.Dense) error {
		_, err := registrytest.Run(t, op, attrs, 1, in...)
		return err
	}
	// FQE1..FQE4 (quantization_ops_test.py test_invalid_inputs).
	testutil.WantErr(t, run(fqChannel, nil, x31, v([]int{1, 1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannel+":", "`min` must be rank 1 but is rank 2")
	testutil.WantErr(t, run(fqChannel, nil, x31, v([]int{2}, 0, 0.1), v([]int{1}, 1)), registry.ErrShape, fqChannel+":", "min has incorrect size, expected 1 was 2")
	testutil.WantErr(t, run(fqChannel, nil, x31, v([]int{1}, 1), v([]int{1, 1}, 1)), registry.ErrShape, fqChannel+":", "`max` must be rank 1 but is rank 2")
	testutil.WantErr(t, run(fqChannel, nil, x31, v([]int{1}, 0), v([]int{2}, 1, 1.1)), registry.ErrShape, fqChannel+":", "max has incorrect size, expected 1 was 2")
	// num_bits, every op.
	for _, bits := range []int{1, 17, -3} {
		a := forward.FakeQuantAttrs{NumBits: bits}
		f1, f3 := v([]int{3}, 1, 2, 3), v([]int{3}, 0, 0, 0)
		s := v(nil, 0)
		for op, in := range map[string][]*tensor.Dense{
			fqChannel:     {f1, f3, f1},
			fqChannelGrad: {f1, f1, f3, f1},
			fqChannelAdj:  {f1, f3, f3, f1, f3, f1},
			fqVars:        {f1, s, s},
			fqVarsGrad:    {f1, f1, s, s},
			fqVarsAdj:     {f1, s, s, f1, s, s},
		} {
			testutil.WantErr(t, run(op, a, in...), registry.ErrInvalidArgument, op+":", "num_bits must be between 2 and 16, inclusive")
		}
		aa := forward.FakeQuantArgsAttrs{NumBits: bits}
		testutil.WantErr(t, run(fqArgs, aa, f1), registry.ErrInvalidArgument, fqArgs+":", "num_bits must be between 2 and 16")
		testutil.WantErr(t, run(fqArgsGrad, aa, f1, f1), registry.ErrInvalidArgument, fqArgsGrad+":", "num_bits must be between 2 and 16")
	}
	// Args: min >= max (and NaN).
	one, zero, nan := float32(1), float32(0), float32(math.NaN())
	testutil.WantErr(t, run(fqArgs, forward.FakeQuantArgsAttrs{Min: &one, Max: &one}, x31), registry.ErrInvalidArgument, "min has to be smaller than max, was: 1 >= 1")
	testutil.WantErr(t, run(fqArgs, forward.FakeQuantArgsAttrs{Min: &one, Max: &zero}, x31), registry.ErrInvalidArgument, "min has to be smaller than max, was: 1 >= 0")
	testutil.WantErr(t, run(fqArgsGrad, forward.FakeQuantArgsAttrs{Min: &nan}, x31, x31), registry.ErrInvalidArgument, fqArgsGrad+": min has to be smaller than max")
	// Gradient shape mismatches.
	testutil.WantErr(t, run(fqArgsGrad, nil, v([]int{3}, 1, 2, 3), x31), registry.ErrShape, fqArgsGrad+":", "gradient and input must be the same size")
	testutil.WantErr(t, run(fqVarsGrad, nil, v([]int{3}, 1, 2, 3), x31, v(nil, 0), v(nil, 1)), registry.ErrShape, fqVarsGrad+":", "gradient and input must be the same size")
	testutil.WantErr(t, run(fqChannelGrad, nil, v([]int{1, 3}, 1, 2, 3), x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannelGrad+":", "gradient and input must be the same size")
	testutil.WantErr(t, run(fqChannelAdj, nil, v([]int{1, 3}, 1, 2, 3), v([]int{1}, 0), v([]int{1}, 0), x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannelAdj+":", "gradient and input must be the same size")
	testutil.WantErr(t, run(fqVarsAdj, nil, v([]int{3}, 1, 2, 3), v(nil, 0), v(nil, 0), x31, v(nil, 0), v(nil, 1)), registry.ErrShape, fqVarsAdj+":", "gradient and input must be the same size")
	// Vars: rank-0 min/max.
	testutil.WantErr(t, run(fqVars, nil, x31, v([]int{1}, 0), v(nil, 1)), registry.ErrShape, fqVars+":", "`min` must be rank 0 but is rank 1")
	testutil.WantErr(t, run(fqVars, nil, x31, v(nil, 0), v([]int{1, 1}, 1)), registry.ErrShape, fqVars+":", "`max` must be rank 0 but is rank 2")
	testutil.WantErr(t, run(fqVarsGrad, nil, x31, x31, v([]int{1}, 0), v(nil, 1)), registry.ErrShape, fqVarsGrad+":", "`min` must be rank 0")
	testutil.WantErr(t, run(fqVarsAdj, nil, x31, v([]int{1}, 0), v(nil, 0), x31, v(nil, 0), v(nil, 1)), registry.ErrShape, fqVarsAdj+":", "`d_min` must be rank 0")
	// PerChannel: rank-0 inputs; gradient rank > 4.
	testutil.WantErr(t, run(fqChannel, nil, v(nil, 1), v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannel+":", "input must be at least rank 1")
	testutil.WantErr(t, run(fqChannelGrad, nil, v(nil, 1), v(nil, 1), v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, "input must be at least rank 1")
	x5 := v([]int{1, 1, 1, 1, 2}, 1, 2)
	testutil.WantErr(t, run(fqChannelGrad, nil, x5, x5, v([]int{2}, 0, 0), v([]int{2}, 1, 1)), registry.ErrShape, fqChannelGrad+":", "must be at most rank 4")
	testutil.WantErr(t, run(fqChannelGrad, nil, x31, x31, v([]int{2}, 0, 0), v([]int{1}, 1)), registry.ErrShape, "min has incorrect size, expected 1 was 2")
	testutil.WantErr(t, run(fqChannelAdj, nil, x31, v([]int{2}, 0, 0), v([]int{1}, 0), x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, "d_min has incorrect size")
	// Dtypes.
	m64 := testutil.New(t, []int{1}, []float64{0})
	testutil.WantErr(t, run(fqChannel, nil, x31, m64, v([]int{1}, 1)), registry.ErrDtype, fqChannel+": min has dtype float64, expected float32")
	testutil.WantErr(t, run(fqChannelGrad, nil, testutil.New(t, []int{3, 1}, []float64{1, 2, 3}), x31, m64, m64), registry.ErrDtype, fqChannelGrad+": inputs has dtype float32")
	testutil.WantErr(t, run(fqVars, nil, x31, testutil.New(t, nil, []float64{0}), v(nil, 1)), registry.ErrDtype, fqVars)
	testutil.WantErr(t, run(fqArgs, nil, testutil.New(t, []int{2}, []int32{1, 2})), registry.ErrDtype, fqArgs)
	testutil.WantErr(t, run(fqArgsGrad, nil, x31, testutil.New(t, []int{3, 1}, []float64{1, 2, 3})), registry.ErrDtype, fqArgsGrad)
	// Input counts (checked by the registry).
	testutil.WantErr(t, run(fqChannel, nil, x31), registry.ErrInvalidArgument, fqChannel)
	// Attrs of the wrong type.
	testutil.WantErr(t, run(fqChannel, forward.FakeQuantArgsAttrs{}, x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrInvalidArgument, fqChannel)
}

// TestFakeQuantSamplesValid: the sample generators produce configurations
// the ops accept, with inputs away from the nudged bounds.
func TestFakeQuantSamplesValid(t *testing.T) {
	for _, op := range []string{fqArgs, fqArgsGrad, fqVars, fqVarsGrad, fqVarsAdj, fqChannel, fqChannelGrad, fqChannelAdj} {
		for seed := int64(1); seed <= 3; seed++ {
			registrytest.RunSamples(t, op, rand.New(rand.NewSource(seed)), 3, registrytest.KC(1))
		}
	}
	// The layouts keep every input at least the gap from its channel's
	// nudged bounds.
	r := rand.New(rand.NewSource(1))
	for _, c := range append(append([]fqref.Config(nil), fqref.FineConfigs...), fqref.CoarseConfigs...) {
		for _, perChannel := range []bool{true, false} {
			fine := c.Bits >= 15 && !c.Zero
			l := c.Layout(r, perChannel, fine)
			qmin, qmax := fqkern.QuantRange(c.Bits, c.Narrow)
			for i, v := range l.X {
				k := i % l.D
				if l.Mins[k] == 0 && l.Maxs[k] == 0 {
					continue
				}
				g := fqkern.Nudge(l.Mins[k], l.Maxs[k], qmin, qmax)
				if math.Abs(v-g.NMin) < 5*fqref.SampleEps || math.Abs(v-g.NMax) < 5*fqref.SampleEps {
					t.Fatalf("%s: input %v too close to the nudged range [%v, %v]", c.Name, v, g.NMin, g.NMax)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Benchmark W8 (cmd/bench/README.md): N32 56x56 C64 NHWC float32, 8 bits.

func fqW8(b *testing.B) []*tensor.Dense {
	r := rand.New(rand.NewSource(1))
	const n, h, w, c = 32, 56, 56, 64
	x, g := make([]float32, n*h*w*c), make([]float32, n*h*w*c)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		g[i] = float32(r.NormFloat64())
	}
	mins, maxs := make([]float32, c), make([]float32, c)
	for k := range mins {
		mins[k], maxs[k] = float32(-2-r.Float64()), float32(2+r.Float64())
	}
	return []*tensor.Dense{testutil.New(b, []int{n, h, w, c}, g), testutil.New(b, []int{n, h, w, c}, x), testutil.New(b, []int{c}, mins), testutil.New(b, []int{c}, maxs)}
}

// fqBenchRun runs the ops of steps (op name, attrs, inputs) once per
// iteration on one thread. Buffers are recycled (recycler), so every
// iteration reuses the same ones, like the tape's arena in steady state,
// and the allocations reported are the kernels' own.
func fqBenchRun(b *testing.B, steps ...fqBenchStep) {
	alloc := &testutil.Recycler{}
	kc := &registry.KernelCtx{Alloc: alloc, Threads: 1}
	defs := make([]*registry.OpDef, len(steps))
	attrs := make([]any, len(steps))
	for i, s := range steps {
		def, err := registry.Lookup(s.op)
		if err != nil {
			b.Fatal(err)
		}
		if attrs[i], err = def.NormalizeAttrs(s.attrs); err != nil {
			b.Fatal(err)
		}
		defs[i] = def
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		alloc.Reset()
		for k, s := range steps {
			if _, err := registry.RunNormalized(defs[k], kc, attrs[k], s.in); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// fqBenchStep is one op call of a benchmark.
type fqBenchStep struct {
	op    string
	attrs any
	in    []*tensor.Dense
}

func benchW8(b *testing.B, backward bool) {
	in := fqW8(b)
	attrs := forward.FakeQuantAttrs{NumBits: 8}
	steps := []fqBenchStep{{fqChannel, attrs, in[1:]}}
	if backward {
		steps = append(steps, fqBenchStep{fqChannelGrad, attrs, in})
	}
	fqBenchRun(b, steps...)
}

// BenchmarkFakeQuantW8Forward is W8's fwd mode on one thread.
func BenchmarkFakeQuantW8Forward(b *testing.B) { benchW8(b, false) }

// BenchmarkFakeQuantW8ForwardBackward is the forward plus the fused
// gradient op (input, min and max gradients) on one thread.
func BenchmarkFakeQuantW8ForwardBackward(b *testing.B) { benchW8(b, true) }

// fqVarsBench returns W8's inputs and gradients with a per-tensor range
// [-2.5, 2.75] (scalars), in dtype dt.
func fqVarsBench(b *testing.B, dt tensor.Dtype) (g, x, mn, mx *tensor.Dense) {
	in := fqW8(b)
	conv := func(t *tensor.Dense) *tensor.Dense {
		return testutil.Dense(b, dt, tensorx.Shape(t), testutil.Convert[float64](t.Float32s()))
	}
	return conv(in[0]), conv(in[1]), testutil.Dense(b, dt, nil, []float64{-2.5}), testutil.Dense(b, dt, nil, []float64{2.75})
}

// BenchmarkFakeQuantVarsForward is the per-tensor forward (the division
// form) on W8's tensor, one thread: what nn.FakeQuantActivation runs.
func BenchmarkFakeQuantVarsForward(b *testing.B) {
	_, x, mn, mx := fqVarsBench(b, tensor.Float32)
	fqBenchRun(b, fqBenchStep{fqVars, nil, []*tensor.Dense{x, mn, mx}})
}

// BenchmarkFakeQuantVarsForwardBackward adds the per-tensor gradient op.
func BenchmarkFakeQuantVarsForwardBackward(b *testing.B) {
	g, x, mn, mx := fqVarsBench(b, tensor.Float32)
	fqBenchRun(b, fqBenchStep{fqVars, nil, []*tensor.Dense{x, mn, mx}}, fqBenchStep{fqVarsGrad, nil, []*tensor.Dense{g, x, mn, mx}})
}

// BenchmarkFakeQuantVarsForwardBackward64 is the same in float64 (the Go
// loops).
func BenchmarkFakeQuantVarsForwardBackward64(b *testing.B) {
	g, x, mn, mx := fqVarsBench(b, tensor.Float64)
	fqBenchRun(b, fqBenchStep{fqVars, nil, []*tensor.Dense{x, mn, mx}}, fqBenchStep{fqVarsGrad, nil, []*tensor.Dense{g, x, mn, mx}})
}

// BenchmarkFakeQuantArgsGradient is the Args gradient op on W8's tensor.
func BenchmarkFakeQuantArgsGradient(b *testing.B) {
	g, x, _, _ := fqVarsBench(b, tensor.Float32)
	lo, hi := float32(-2.5), float32(2.75)
	fqBenchRun(b, fqBenchStep{fqArgsGrad, forward.FakeQuantArgsAttrs{Min: &lo, Max: &hi}, []*tensor.Dense{g, x}})
}

// ---------------------------------------------------------------------------
// The fqkern loops against the scalar rules.

// fqFloor is floor(v) in T.
func fqFloor[T tensorx.Float](v T) T { return T(math.Floor(float64(v))) }

// quantMul is the scalar forward rule of one element with multiplication
// by the inverse scale (Args, PerChannel), the reference of the fqkern
// loops: floor(((clamp(x) − nmin)·inv − qzero) + 0.5)·scale, the clamp
// min(x, nmax) first, as TensorFlow.
func quantMul[T tensorx.Float](g fqkern.Grid[T], x T) T {
	v := x
	if v > g.NMax {
		v = g.NMax
	}
	if v < g.NMin {
		v = g.NMin
	}
	t := T(T(v-g.NMin) * g.Inv)
	return T(fqFloor(T(T(t-g.QZero)+0.5)) * g.Scale)
}

// quantDiv is the scalar forward rule of one element of Vars, which
// divides by the scale (TensorFlow's Vars functor does), the reference of
// the dividing fqkern loops: floor(((clamp(x) − nmin)/scale − qzero) +
// 0.5)·scale, the clamp min(x, nmax) first.
func quantDiv[T tensorx.Float](g fqkern.Grid[T], x T) T {
	v := x
	if v > g.NMax {
		v = g.NMax
	}
	if v < g.NMin {
		v = g.NMin
	}
	t := T(T(v-g.NMin) / g.Scale)
	return T(fqFloor(T(T(t-g.QZero)+0.5)) * g.Scale)
}

// fqGradBounds are the bounds of the straight-through gradient of one
// channel for the scalar references: the nudged range, or (-Inf, +Inf)
// with zero set for the min == max == 0 case.
type fqGradBounds[T tensorx.Float] struct {
	lo, hi T
	zero   bool
}

// fqBounds returns the gradient bounds of every grid.
func fqBounds[T tensorx.Float](grids []fqkern.Grid[T]) []fqGradBounds[T] {
	b := make([]fqGradBounds[T], len(grids))
	for c, g := range grids {
		if g.Zero {
			b[c] = fqGradBounds[T]{lo: T(math.Inf(-1)), hi: T(math.Inf(1)), zero: true}
			continue
		}
		b[c] = fqGradBounds[T]{lo: g.NMin, hi: g.NMax}
	}
	return b
}

// fqGrids nudges every channel's range.
func fqGrids[T tensorx.Float](mins, maxs []T, qmin, qmax int) []fqkern.Grid[T] {
	grids := make([]fqkern.Grid[T], len(mins))
	for c := range grids {
		grids[c] = fqkern.Nudge(mins[c], maxs[c], qmin, qmax)
	}
	return grids
}

// fqScalarForward is the scalar forward loop: quantMul (quantDiv if div)
// per element, 0 in the min == max == 0 channels (NaN inputs included).
func fqScalarForward[T tensorx.Float](grids []fqkern.Grid[T], x []T, div bool) []T {
	y := make([]T, len(x))
	for i, v := range x {
		g := grids[i%len(grids)]
		switch {
		case g.Zero:
		case div:
			y[i] = quantDiv(g, v)
		default:
			y[i] = quantMul(g, v)
		}
	}
	return y
}

// fqScalarGradient is the scalar gradient loop: the input gradient and
// the per-channel float64 sums below / above, in element order.
func fqScalarGradient[T tensorx.Float](b []fqGradBounds[T], g, x []T) (bi []T, below, above []float64) {
	d := len(b)
	bi = make([]T, len(x))
	below, above = make([]float64, d), make([]float64, d)
	for i, v := range x {
		p := b[i%d]
		switch {
		case v >= p.lo && v <= p.hi, p.zero:
			bi[i] = g[i]
		case v < p.lo:
			below[i%d] += float64(g[i])
		case v > p.hi:
			above[i%d] += float64(g[i])
		}
	}
	return bi, below, above
}

// fqScalarAdjoint is the scalar adjoint loop.
func fqScalarAdjoint[T tensorx.Float](b []fqGradBounds[T], dbi, dmin, dmax, x []T) []T {
	d := len(b)
	out := make([]T, len(x))
	for i, v := range x {
		p := b[i%d]
		switch {
		case v >= p.lo && v <= p.hi, p.zero:
			out[i] = dbi[i]
		case v < p.lo:
			out[i] = dmin[i%d]
		case v > p.hi:
			out[i] = dmax[i%d]
		}
	}
	return out
}

// fqEdgeInputs returns n inputs for the grids (channel = index mod d):
// fqRandomInputs' mix plus the nudged bounds, rounding ties of the grid
// ((k + ½)·scale above nmin) and their float neighbours, ±0, NaN.
func fqEdgeInputs[T tensorx.Float](r *rand.Rand, grids []fqkern.Grid[T], mins, maxs []T, n int) []T {
	x := make([]T, n)
	next := func(v T, dir float64) T {
		if _, ok := any(v).(float32); ok {
			return T(math.Nextafter32(float32(v), float32(dir)))
		}
		return T(math.Nextafter(float64(v), dir))
	}
	for i := range x {
		c := i % len(grids)
		g := grids[c]
		tie := T(g.NMin + T(T(T(r.Intn(255))+0.5)*g.Scale))
		switch r.Intn(6) {
		case 0:
			x[i] = []T{g.NMin, g.NMax, tie, T(math.NaN()), T(math.Copysign(0, -1)), 0}[r.Intn(6)]
		case 1:
			v := []T{g.NMin, g.NMax, tie}[r.Intn(3)]
			x[i] = next(v, math.Inf(2*r.Intn(2)-1))
		default:
			x[i] = T(fqref.RandomInputs(r, 1, float32(mins[c]), float32(maxs[c]))[0])
		}
	}
	return x
}

// fqSame reports equal bits, or both NaN (NaN payloads are unspecified).
func fqSame[T tensorx.Float](a, b T) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float64bits(float64(a)) == math.Float64bits(float64(b))
}

func testFakeQuantLoops[T tensorx.Float](t *testing.T, dt tensor.Dtype) {
	r := rand.New(rand.NewSource(21))
	// Channel counts around the vector width and the table period; row
	// counts spanning several parallel chunks for some.
	cases := []struct{ d, rows int }{
		{1, 70001}, {3, 5}, {7, 9000}, {8, 3}, {64, 1100}, {65, 600}, {129, 300}, {1030, 40}, {5, 1},
	}
	for _, cs := range cases {
		d, n := cs.d, cs.d*cs.rows
		mins, maxs := make([]T, d), make([]T, d)
		for c := range mins {
			a, b := fqref.RandomRange(r)
			switch c % 11 {
			case 3:
				a, b = 0, 0
			case 7:
				a = float32(math.NaN())
			}
			mins[c], maxs[c] = T(a), T(b)
		}
		if d == 1 { // one ordinary range for the long single-channel case
			mins[0], maxs[0] = -1.5, 2
		}
		grids := fqGrids(mins, maxs, 0, 255)
		x := fqEdgeInputs(r, grids, mins, maxs, n)
		g, dbi := make([]T, n), make([]T, n)
		for i := range g {
			g[i], dbi[i] = T(r.NormFloat64()), T(r.NormFloat64())
		}
		dmin, dmax := make([]T, d), make([]T, d)
		for c := range dmin {
			dmin[c], dmax[c] = T(r.NormFloat64()), T(r.NormFloat64())
		}
		b := fqBounds(grids)
		wantY := fqScalarForward(grids, x, false)
		wantBi, wantB, wantA := fqScalarGradient(b, g, x)
		wantAdj := fqScalarAdjoint(b, dbi, dmin, dmax, x)
		mk := func(v []T, shape ...int) *tensor.Dense { return testutil.New(t, shape, v) }
		var refSums []*tensor.Dense
		for _, threads := range []int{1, 2} {
			what := func(s string) string { return fmt.Sprintf("%v d=%d n=%d threads=%d: %s", dt, d, n, threads, s) }
			y := registrytest.MustRun(t, fqChannel, nil, threads, mk(x, cs.rows, d), mk(mins, d), mk(maxs, d))[0]
			fqSameAll(t, what("forward"), tensorx.MustSlice[T](y), wantY)
			out := registrytest.MustRun(t, fqChannelGrad, nil, threads, mk(g, cs.rows, d), mk(x, cs.rows, d), mk(mins, d), mk(maxs, d))
			fqSameAll(t, what("input gradient"), tensorx.MustSlice[T](out[0]), wantBi)
			for k, want := range [][]float64{wantB, wantA} {
				got := tensorx.MustSlice[T](out[1+k])
				for c := range want {
					// float64 sums in another order, rounded to T once.
					if err := math.Abs(float64(got[c]) - want[c]); !(err <= 1e-6*math.Abs(want[c])+1e-9) {
						t.Fatalf("%s: channel %d: %v, want %v", what("min/max gradient"), c, got[c], want[c])
					}
				}
			}
			if refSums == nil {
				refSums = out[1:]
			} else {
				fqSameAll(t, what("min gradient vs 1 thread"), tensorx.MustSlice[T](out[1]), tensorx.MustSlice[T](refSums[0]))
				fqSameAll(t, what("max gradient vs 1 thread"), tensorx.MustSlice[T](out[2]), tensorx.MustSlice[T](refSums[1]))
			}
			adj := registrytest.MustRun(t, fqChannelAdj, nil, threads, mk(dbi, cs.rows, d), mk(dmin, d), mk(dmax, d), mk(x, cs.rows, d), mk(mins, d), mk(maxs, d))[0]
			fqSameAll(t, what("adjoint"), tensorx.MustSlice[T](adj), wantAdj)
		}
	}
}

// fqSameAll checks got against want element by element with fqSame.
func fqSameAll[T tensorx.Float](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !fqSame(got[i], want[i]) {
			t.Fatalf("%s: element %d: %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestFakeQuantLoopsVsScalar runs the PerChannel forward, gradient and
// adjoint ops (the fqkern loops: assembly for float32 where the CPU has
// it) against the scalar loops over many channel counts and special
// inputs, bit for bit (the min/max sums to float64 accuracy, and bit for
// bit across thread counts).
func TestFakeQuantLoopsVsScalar(t *testing.T) {
	testFakeQuantLoops[float32](t, tensor.Float32)
	testFakeQuantLoops[float64](t, tensor.Float64)
}

// fqScalarRanges are per-tensor ranges for TestFakeQuantPerTensorLoops:
// ordinary ones (0 on the grid or nudged), a one-sided one, the
// degenerate ones TensorFlow does not check (min == max != 0, min > max),
// the zero range (also as −0, +0), a NaN and an infinite end.
var fqScalarRanges = [][2]float32{
	{-1.5, 2}, {-0.1, 63.65}, {0, 6}, {-6, 6}, {-3.25, -0.5}, {0.7, 0.7}, {2, -1}, {0, 0},
	{float32(math.Copysign(0, -1)), 0}, {float32(math.NaN()), 1}, {float32(math.Inf(-1)), 1},
}

// testFakeQuantPerTensorLoops runs the per-tensor ops (Vars forward,
// gradient and adjoint; Args forward and gradient) against the scalar
// loops, bit for bit, over lengths around the vector width and the table
// period, and one spanning three parallel chunks (on 1, 2 and 3 threads),
// with edge inputs (the min/max sums to float64 accuracy, and bit for bit
// across thread counts).
func testFakeQuantPerTensorLoops[T tensorx.Float](t *testing.T, dt tensor.Dtype) {
	r := rand.New(rand.NewSource(23))
	lengths := []int{1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 1000, 2*fqkern.GrainElems + 77}
	for ri, rg := range fqScalarRanges {
		for _, bits := range []int{8, 3, 16} {
			narrow := ri%2 == 1
			qmin, qmax := fqkern.QuantRange(bits, narrow)
			mins, maxs := []T{T(rg[0])}, []T{T(rg[1])}
			grids := []fqkern.Grid[T]{fqkern.Nudge(mins[0], maxs[0], qmin, qmax)}
			b := fqBounds(grids)
			attrs := forward.FakeQuantAttrs{NumBits: bits, NarrowRange: narrow}
			lo, hi := rg[0], rg[1]
			args := forward.FakeQuantArgsAttrs{Min: &lo, Max: &hi, NumBits: bits, NarrowRange: narrow}
			for _, n := range lengths {
				threads := []int{1}
				if n > fqkern.GrainElems { // several chunks: once per range
					if bits != 8 {
						continue
					}
					threads = []int{1, 2, 3}
				}
				x := fqEdgeInputs(r, grids, mins, maxs, n)
				g, dbi := make([]T, n), make([]T, n)
				for i := range g {
					g[i], dbi[i] = T(r.NormFloat64()), T(r.NormFloat64())
					if r.Intn(40) == 0 {
						g[i] = []T{T(math.NaN()), T(math.Inf(-1)), T(math.Copysign(0, -1))}[r.Intn(3)]
					}
				}
				dmin, dmax := []T{T(r.NormFloat64())}, []T{T(r.NormFloat64())}
				wantY := fqScalarForward(grids, x, true)
				wantBi, wantB, wantA := fqScalarGradient(b, g, x)
				wantAdj := fqScalarAdjoint(b, dbi, dmin, dmax, x)
				mk := func(v []T, shape ...int) *tensor.Dense { return testutil.New(t, shape, v) }
				var refSums []*tensor.Dense
				for _, threads := range threads {
					what := func(s string) string {
						return fmt.Sprintf("%v range %v bits %d narrow %v n=%d threads=%d: %s", dt, rg, bits, narrow, n, threads, s)
					}
					y := registrytest.MustRun(t, fqVars, attrs, threads, mk(x, n), mk(mins), mk(maxs))[0]
					fqSameAll(t, what("Vars forward"), tensorx.MustSlice[T](y), wantY)
					out := registrytest.MustRun(t, fqVarsGrad, attrs, threads, mk(g, n), mk(x, n), mk(mins), mk(maxs))
					fqSameAll(t, what("Vars input gradient"), tensorx.MustSlice[T](out[0]), wantBi)
					for k, want := range []float64{wantB[0], wantA[0]} {
						got := float64(tensorx.MustSlice[T](out[1+k])[0])
						if !(math.Abs(got-want) <= 1e-6*math.Abs(want)+1e-9) && !fqSame(got, want) {
							t.Fatalf("%s: %v, want %v", what("Vars min/max gradient"), got, want)
						}
					}
					if refSums == nil {
						refSums = out[1:]
					} else {
						fqSameAll(t, what("Vars min gradient vs 1 thread"), tensorx.MustSlice[T](out[1]), tensorx.MustSlice[T](refSums[0]))
						fqSameAll(t, what("Vars max gradient vs 1 thread"), tensorx.MustSlice[T](out[2]), tensorx.MustSlice[T](refSums[1]))
					}
					adj := registrytest.MustRun(t, fqVarsAdj, attrs, threads, mk(dbi, n), mk(dmin), mk(dmax), mk(x, n), mk(mins), mk(maxs))[0]
					fqSameAll(t, what("Vars adjoint"), tensorx.MustSlice[T](adj), wantAdj)
					if !(lo < hi) {
						continue // Args refuses the range
					}
					// Args' float32 range widened to T is the same range.
					ya := registrytest.MustRun(t, fqArgs, args, threads, mk(x, n))[0]
					fqSameAll(t, what("Args forward"), tensorx.MustSlice[T](ya), fqScalarForward(grids, x, false))
					ga := registrytest.MustRun(t, fqArgsGrad, args, threads, mk(g, n), mk(x, n))[0]
					fqSameAll(t, what("Args gradient"), tensorx.MustSlice[T](ga), wantBi)
				}
			}
		}
	}
}

// TestFakeQuantPerTensorLoops runs the per-tensor ops (the fqkern loops
// with one channel: the dividing forward for Vars) against the scalar
// loops.
func TestFakeQuantPerTensorLoops(t *testing.T) {
	testFakeQuantPerTensorLoops[float32](t, tensor.Float32)
	testFakeQuantPerTensorLoops[float64](t, tensor.Float64)
}

// ---------------------------------------------------------------------------
// Allocations.

// fqParAllocBound is what a call may allocate when its loops run on two
// threads: the closure handed to internal/parallel, the table header it
// copies, and the gradient's per-worker sums.
const fqParAllocBound = 8

// TestFakeQuantAllocations checks that a steady-state call of every op of
// the family (forward, gradient and adjoint; Args, Vars, PerChannel;
// float32 and float64, the zero range included, inputs of several
// parallel chunks) allocates nothing on one thread when its buffers are
// recycled, and at most fqParAllocBound objects on two: the tables live
// in the kernel's frame with their rows in recycled scratch, the loops run
// without a closure, the results go through kc.Results.
func TestFakeQuantAllocations(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	mk := func(dt tensor.Dtype, vals func(i int) float64, shape ...int) *tensor.Dense {
		n := 1
		for _, s := range shape {
			n *= s
		}
		v := make([]float64, n)
		for i := range v {
			v[i] = vals(i)
		}
		return testutil.Dense(t, dt, shape, v)
	}
	normal := func(int) float64 { return 2 * r.NormFloat64() }
	big := 3*fqkern.GrainElems + 5 // four chunks of one channel
	lo, hi := float32(-1.5), float32(2)
	args := forward.FakeQuantArgsAttrs{Min: &lo, Max: &hi}
	var cases []struct {
		name  string
		op    string
		attrs any
		in    []*tensor.Dense
	}
	add := func(name, op string, attrs any, in ...*tensor.Dense) {
		cases = append(cases, struct {
			name  string
			op    string
			attrs any
			in    []*tensor.Dense
		}{name, op, attrs, in})
	}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, n := range []int{30, big} {
			x, g := mk(dt, normal, n), mk(dt, normal, n)
			mn, mx := mk(dt, func(int) float64 { return -1.25 }), mk(dt, func(int) float64 { return 2.5 })
			zero := mk(dt, func(int) float64 { return 0 })
			name := fmt.Sprintf("%v n=%d", dt, n)
			add(name, fqArgs, args, x)
			add(name, fqArgsGrad, args, g, x)
			add(name, fqVars, nil, x, mn, mx)
			add(name+" zero range", fqVars, nil, x, zero, zero)
			add(name, fqVarsGrad, nil, g, x, mn, mx)
			add(name+" zero range", fqVarsGrad, nil, g, x, zero, zero)
			add(name, fqVarsAdj, nil, g, mn, mx, x, mn, mx)
		}
		// PerChannel: 5 channels (one of them min == max == 0), and 64
		// channels over four chunks.
		for _, shape := range [][]int{{4, 6, 5}, {4, 1024, 64}} {
			d := shape[len(shape)-1]
			x, g := mk(dt, normal, shape...), mk(dt, normal, shape...)
			mn := mk(dt, func(c int) float64 { return float64(map[bool]int{true: 0, false: -1 - c%3}[c == 3]) }, d)
			mx := mk(dt, func(c int) float64 { return float64(map[bool]int{true: 0, false: 1 + c%4}[c == 3]) }, d)
			dmn, dmx := mk(dt, normal, d), mk(dt, normal, d)
			name := fmt.Sprintf("%v %v", dt, shape)
			add(name, fqChannel, nil, x, mn, mx)
			add(name, fqChannelGrad, nil, g, x, mn, mx)
			add(name, fqChannelAdj, nil, g, dmn, dmx, x, mn, mx)
		}
	}
	for _, c := range cases {
		for _, threads := range []int{1, 2} {
			run := registrytest.KernelRun(t, c.op+" "+c.name, c.op, c.attrs, threads, c.in)
			run()
			n := testing.AllocsPerRun(20, run)
			t.Logf("%s %s, %d threads: %v allocations per run", c.op, c.name, threads, n)
			bound := 0.0
			if threads > 1 {
				bound = fqParAllocBound
			}
			if n > bound {
				t.Errorf("%s %s, %d threads: %v allocations per run, want at most %v", c.op, c.name, threads, n, bound)
			}
		}
	}
}

// fqCloseTo compares with relative tolerance rtol (0: exactly).
func fqCloseTo(t testing.TB, what string, got *tensor.Dense, want []float64, rtol float64) {
	t.Helper()
	testutil.Close(t, what, testutil.Float64s(t, got), want, testutil.Tol{Rel: rtol})
}
