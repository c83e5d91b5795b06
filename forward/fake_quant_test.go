package forward

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Tests of the fake-quant family: the spec's test vectors bit for bit,
// ties and exact bounds, an independent float32 emulation of the spec over
// every num_bits and narrow_range, the gradient ops' masks and sums, the
// adjoint ops, thread-count invariance, every error, and the W8 benchmark.

// fqPoisonAlloc hands out NaN-filled buffers unless zeroed ones are asked
// for, so a kernel that leaves an output element unwritten fails.
type fqPoisonAlloc struct{}

func (fqPoisonAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	d, err := tensorx.Zeros(dt, shape)
	if err != nil || zeroed {
		return d, err
	}
	switch dt {
	case tensor.Float32:
		for i, s := 0, d.Float32s(); i < len(s); i++ {
			s[i] = float32(math.NaN())
		}
	case tensor.Float64:
		for i, s := 0, d.Float64s(); i < len(s); i++ {
			s[i] = math.NaN()
		}
	}
	return d, nil
}

func (fqPoisonAlloc) Release(*tensor.Dense) {}

// fqRun runs op with attrs on a poisoned allocator with threads goroutines.
func fqRun(t testing.TB, op string, attrs any, threads int, in ...*tensor.Dense) ([]*tensor.Dense, error) {
	t.Helper()
	def, err := registry.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	return registry.Run(def, &registry.KernelCtx{Alloc: fqPoisonAlloc{}, Threads: threads}, attrs, in)
}

// fqMustRun is fqRun that fails the test on error.
func fqMustRun(t testing.TB, op string, attrs any, threads int, in ...*tensor.Dense) []*tensor.Dense {
	t.Helper()
	out, err := fqRun(t, op, attrs, threads, in...)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return out
}

func fqT32(t testing.TB, shape []int, v ...float32) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func fqT64(t testing.TB, shape []int, v ...float64) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fqFill returns n copies of v.
func fqFill(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// fqBitsEqual fails unless got and want are bit-identical float32 slices
// (so +0 and -0 differ; NaN matches NaN).
func fqBitsEqual(t testing.TB, what string, got *tensor.Dense, want []float32) {
	t.Helper()
	g, err := tensorx.Slice[float32](got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range g {
		if math.Float32bits(g[i]) != math.Float32bits(want[i]) && !(g[i] != g[i] && want[i] != want[i]) {
			t.Fatalf("%s: element %d = %v (%#08x), want %v (%#08x); got %v", what, i, g[i], math.Float32bits(g[i]), want[i], math.Float32bits(want[i]), g)
		}
	}
}

// fqBitsEqual64 is fqBitsEqual for float64.
func fqBitsEqual64(t testing.TB, what string, got *tensor.Dense, want []float64) {
	t.Helper()
	g, err := tensorx.Slice[float64](got)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range g {
		if math.Float64bits(g[i]) != math.Float64bits(want[i]) && !(g[i] != g[i] && want[i] != want[i]) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g[i], want[i])
		}
	}
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
			out := fqMustRun(t, fqChannel, attrs, threads,
				fqT32(t, v.shape, v.in...), fqT32(t, []int{d}, fqFill(d, v.min)...), fqT32(t, []int{d}, fqFill(d, v.max)...))
			fqBitsEqual(t, v.id, out[0], v.want)
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
		out := fqMustRun(t, fqChannel, attrs, 1, fqT64(t, v.shape, in64...), fqT64(t, []int{d}, mins...), fqT64(t, []int{d}, maxs...))
		fqCloseTo(t, v.id+"/float64", out[0], want64, 1e-6)
	}
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
		attrs := FakeQuantAttrs{NumBits: v.bits, NarrowRange: v.narrow}
		out := fqMustRun(t, fqChannelGrad, attrs, 2,
			fqT32(t, v.shape, g...), fqT32(t, v.shape, v.in...), fqT32(t, []int{d}, fqFill(d, v.min)...), fqT32(t, []int{d}, fqFill(d, v.max)...))
		fqBitsEqual(t, v.id+"/backprops_wrt_input", out[0], wantBi)
		fqBitsEqual(t, v.id+"/backprop_wrt_min", out[1], wantMin)
		fqBitsEqual(t, v.id+"/backprop_wrt_max", out[2], wantMax)
	}
}

func TestFakeQuantScalarSpecVectors(t *testing.T) {
	f := func(v float32) *float32 { return &v }
	// WithArgsNoNudging_RegularRange.
	out := fqMustRun(t, fqArgs, FakeQuantArgsAttrs{Min: f(-10), Max: f(53.75)}, 1,
		fqT32(t, []int{6}, -10.1, -10.0, -9.9, -9.75, 53.75, 53.8))
	fqBitsEqual(t, "WithArgsNoNudging", out[0], []float32{-10.0, -10.0, -10.0, -9.75, 53.75, 53.75})
	// WithArgsNudgedUp_4Bits_RegularRange: the test writes -0.0; TF
	// computes +0.0.
	out = fqMustRun(t, fqArgs, FakeQuantArgsAttrs{Min: f(-0.4), Max: f(7.1), NumBits: 4}, 1,
		fqT32(t, []int{6}, -0.6, -0.5, -0.24, 0.0, 7.0, 7.1))
	fqBitsEqual(t, "WithArgsNudgedUp_4Bits", out[0], []float32{-0.5, -0.5, 0.0, 0.0, 7.0, 7.0})
	// api_def example, 16 bits.
	out = fqMustRun(t, fqArgs, FakeQuantArgsAttrs{Min: f(-5), Max: f(5), NumBits: 16}, 1,
		fqT32(t, []int{3}, 10.03, -10.23, 3))
	fqBitsEqual(t, "api_def example", out[0], []float32{4.9999237, -5.0000763, 3.0000763})
	// The defaults are [-6, 6], 8 bits: scale 12/255, zero point 127.5 → 128.
	out = fqMustRun(t, fqArgs, nil, 1, fqT32(t, []int{3}, -7, 0, 7))
	sc := float32(12) / 255
	fqBitsEqual(t, "Args defaults", out[0], []float32{-128 * sc, 0, 127 * sc})

	// WithVarsGradient_RegularRange.
	g := fqGrads[:6]
	out = fqMustRun(t, fqVarsGrad, nil, 1, fqT32(t, []int{6}, g...), fqT32(t, []int{6}, -0.26, -0.25, -0.24, 0.0, 63.5, 63.6),
		fqT32(t, nil, -0.125), fqT32(t, nil, 63.625))
	fqBitsEqual(t, "VarsGradient/input", out[0], []float32{0, g[1], g[2], g[3], g[4], 0})
	fqBitsEqual(t, "VarsGradient/min", out[1], []float32{g[0]})
	fqBitsEqual(t, "VarsGradient/max", out[2], []float32{g[5]})
	// The Vars forward on FQ5's data (the division form agrees here).
	out = fqMustRun(t, fqVars, nil, 1, fqT32(t, []int{6}, -0.26, -0.25, -0.24, 0.0, 63.5, 63.6),
		fqT32(t, nil, -0.125), fqT32(t, nil, 63.625))
	fqBitsEqual(t, "Vars", out[0], []float32{-0.25, -0.25, -0.25, 0.0, 63.5, 63.5})
	// ArgsGradient: inclusive bounds, same nudged range as above.
	out = fqMustRun(t, fqArgsGrad, FakeQuantArgsAttrs{Min: f(-0.125), Max: f(63.625)}, 1,
		fqT32(t, []int{6}, g...), fqT32(t, []int{6}, -0.26, -0.25, -0.24, 0.0, 63.5, 63.6))
	fqBitsEqual(t, "ArgsGradient", out[0], []float32{0, g[1], g[2], g[3], g[4], 0})
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
			out = fqMustRun(t, op, nil, 1, fqT32(t, []int{len(x), 1}, x...), fqT32(t, []int{1}, -0.125), fqT32(t, []int{1}, 63.625))
		case fqVars:
			out = fqMustRun(t, op, nil, 1, fqT32(t, []int{len(x)}, x...), fqT32(t, nil, -0.125), fqT32(t, nil, 63.625))
		default:
			mn, mx := float32(-0.125), float32(63.625)
			out = fqMustRun(t, op, FakeQuantArgsAttrs{Min: &mn, Max: &mx}, 1, fqT32(t, []int{len(x)}, x...))
		}
		fqBitsEqual(t, op+" ties/bounds", out[0], want)
	}
	// Gradients at the bounds: lo and hi inside, their neighbours and ±Inf
	// outside.
	gx := []float32{lo, hi, below, above, inf, ninf, 0}
	g := []float32{1, 2, 4, 8, 16, 32, 64}
	out := fqMustRun(t, fqChannelGrad, nil, 1, fqT32(t, []int{7, 1}, g...), fqT32(t, []int{7, 1}, gx...), fqT32(t, []int{1}, -0.125), fqT32(t, []int{1}, 63.625))
	fqBitsEqual(t, "grad at bounds/input", out[0], []float32{1, 2, 0, 0, 0, 0, 64})
	fqBitsEqual(t, "grad at bounds/min", out[1], []float32{4 + 32})
	fqBitsEqual(t, "grad at bounds/max", out[2], []float32{8 + 16})
	// narrow_range ties: min -0.125, max 63.375 → grid [-0.25, 63.25].
	out = fqMustRun(t, fqChannel, FakeQuantAttrs{NarrowRange: true}, 1,
		fqT32(t, []int{4}, -0.125, 0.125, 63.125, 63.25), fqFillT(t, 4, -0.125), fqFillT(t, 4, 63.375))
	fqBitsEqual(t, "narrow ties", out[0], []float32{0, 0.25, 63.25, 63.25})
}

func fqFillT(t testing.TB, n int, v float32) *tensor.Dense {
	return fqT32(t, []int{n}, fqFill(n, v)...)
}

// TestFakeQuantZeroRange: min == max == 0 gives 0 (also for NaN and ±Inf
// inputs) and passes every gradient through, per channel.
func TestFakeQuantZeroRange(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	x := []float32{nan, 0.5, -inf, 0.3, inf, nan, 5, -2}
	mins := fqT32(t, []int{2}, 0, -1)
	maxs := fqT32(t, []int{2}, 0, 1)
	out := fqMustRun(t, fqChannel, nil, 1, fqT32(t, []int{4, 2}, x...), mins, maxs)
	q := func(v float32) float32 { return fqRef32(v, -1, 1, 8, false, false) }
	fqBitsEqual(t, "zero channel", out[0], []float32{0, q(0.5), 0, q(0.3), 0, nan, 0, q(-2)})
	g := fqGrads[:8]
	out = fqMustRun(t, fqChannelGrad, nil, 1, fqT32(t, []int{4, 2}, g...), fqT32(t, []int{4, 2}, x...), mins, maxs)
	fqBitsEqual(t, "zero channel grad", out[0], []float32{g[0], g[1], g[2], g[3], g[4], 0, g[6], 0})
	fqBitsEqual(t, "zero channel grad min", out[1], []float32{0, g[7]})
	fqBitsEqual(t, "zero channel grad max", out[2], []float32{0, 0})
	out = fqMustRun(t, fqVars, nil, 1, fqT32(t, []int{4}, nan, inf, -3, 2), fqT32(t, nil, 0), fqT32(t, nil, 0))
	fqBitsEqual(t, "Vars zero", out[0], []float32{0, 0, 0, 0})
	out = fqMustRun(t, fqVarsGrad, nil, 1, fqT32(t, []int{4}, g[:4]...), fqT32(t, []int{4}, nan, inf, -3, 2), fqT32(t, nil, 0), fqT32(t, nil, 0))
	fqBitsEqual(t, "VarsGradient zero", out[0], g[:4])
	fqBitsEqual(t, "VarsGradient zero min", out[1], []float32{0})
	fqBitsEqual(t, "VarsGradient zero max", out[2], []float32{0})
}

// ---------------------------------------------------------------------------
// An independent emulation of the spec: every operation in float64,
// rounded to float32 (for + − × ÷ of float32 operands this is the
// correctly rounded float32 result).

func fqR(v float64) float64 { return float64(float32(v)) }

// fqRefNudge returns the nudged range, scale and inverse scale.
func fqRefNudge(mn, mx float64, bits int, narrow bool, round func(float64) float64) (nmin, nmax, scale, inv float64) {
	qmin := 0.0
	if narrow {
		qmin = 1
	}
	qmax := math.Exp2(float64(bits)) - 1
	scale = round(round(mx-mn) / (qmax - qmin))
	inv = round((qmax - qmin) / round(mx-mn))
	zpf := round(qmin - round(mn/scale))
	var zp float64
	switch {
	case zpf < qmin:
		zp = qmin
	case zpf > qmax:
		zp = qmax
	default:
		zp = math.Round(zpf)
	}
	return round((qmin - zp) * scale), round((qmax - zp) * scale), scale, inv
}

// fqRefQuant quantises x as the spec's §3 with the given rounding
// (fqR: float32; identity: float64); div selects the Vars form.
func fqRefQuant(x, mn, mx float64, bits int, narrow, div bool, round func(float64) float64) float64 {
	if mn == 0 && mx == 0 {
		return 0
	}
	nmin, nmax, scale, inv := fqRefNudge(mn, mx, bits, narrow, round)
	qz := math.Floor(round(round(-nmin*inv) + 0.5))
	xc := x
	if xc > nmax {
		xc = nmax
	}
	if xc < nmin {
		xc = nmin
	}
	var tt float64
	if div {
		tt = round(round(xc-nmin) / scale)
	} else {
		tt = round(round(xc-nmin) * inv)
	}
	return round(math.Floor(round(round(tt-qz)+0.5)) * scale)
}

func fqRef32(x, mn, mx float32, bits int, narrow, div bool) float32 {
	return float32(fqRefQuant(float64(x), float64(mn), float64(mx), bits, narrow, div, fqR))
}

// fqRandomRange draws ranges of every kind, including degenerate ones TF
// does not check (min > max, min == max != 0).
func fqRandomRange(r *rand.Rand) (float32, float32) {
	a := float32(r.NormFloat64() * math.Exp2(float64(r.Intn(12)-6)))
	b := float32(r.NormFloat64() * math.Exp2(float64(r.Intn(12)-6)))
	switch r.Intn(10) {
	case 0:
		return a, a // min == max
	case 1:
		return max(a, b), min(a, b) // min > max
	case 2:
		return 0, float32(math.Abs(float64(b)))
	case 3:
		return -float32(math.Abs(float64(a))), 0
	}
	return min(a, b), max(a, b)
}

// fqRandomInputs draws inputs around [mn, mx]: grid points, exact half
// steps, bounds, values outside, ±Inf.
func fqRandomInputs(r *rand.Rand, n int, mn, mx float32) []float32 {
	x := make([]float32, n)
	w := float64(mx) - float64(mn)
	for i := range x {
		switch r.Intn(8) {
		case 0:
			x[i] = float32(math.Inf(2*r.Intn(2) - 1))
		case 1:
			x[i] = []float32{mn, mx, 0}[r.Intn(3)]
		case 2: // a tie of a 2..16-bit grid (exact halves when the grid is)
			x[i] = float32(float64(mn) + w*float64(2*r.Intn(64)+1)/128)
		default:
			x[i] = float32(float64(mn) + w*(1.4*r.Float64()-0.2))
		}
	}
	return x
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
				mins[c], maxs[c] = fqRandomRange(r)
				col := fqRandomInputs(r, rows, mins[c], maxs[c])
				for i := 0; i < rows; i++ {
					x[i*d+c] = col[i]
				}
			}
			want := make([]float32, len(x))
			for i, v := range x {
				want[i] = fqRef32(v, mins[i%d], maxs[i%d], bits, narrow, false)
			}
			out := fqMustRun(t, fqChannel, attrs, 2, fqT32(t, shape, x...), fqT32(t, []int{d}, mins...), fqT32(t, []int{d}, maxs...))
			fqBitsEqual(t, "PerChannel emulation", out[0], want)

			// float64.
			x64, mn64, mx64 := fq64s(x), fq64s(mins), fq64s(maxs)
			want64 := make([]float64, len(x))
			for i, v := range x64 {
				want64[i] = fqRefQuant(v, mn64[i%d], mx64[i%d], bits, narrow, false, func(v float64) float64 { return v })
			}
			out = fqMustRun(t, fqChannel, attrs, 2, fqT64(t, shape, x64...), fqT64(t, []int{d}, mn64...), fqT64(t, []int{d}, mx64...))
			fqBitsEqual64(t, "PerChannel float64", out[0], want64)

			// Vars (division form) and Args (multiplication form), with a
			// valid range for Args.
			mn, mx := fqRandomRange(r)
			xs := fqRandomInputs(r, 40, mn, mx)
			wantV := make([]float32, len(xs))
			for i, v := range xs {
				wantV[i] = fqRef32(v, mn, mx, bits, narrow, true)
			}
			out = fqMustRun(t, fqVars, attrs, 2, fqT32(t, []int{5, 8}, xs...), fqT32(t, nil, mn), fqT32(t, nil, mx))
			fqBitsEqual(t, "Vars emulation", out[0], wantV)
			if !(mn < mx) {
				mn, mx = -1.5, 2.25
			}
			wantA := make([]float32, len(xs))
			for i, v := range xs {
				wantA[i] = fqRef32(v, mn, mx, bits, narrow, false)
			}
			out = fqMustRun(t, fqArgs, FakeQuantArgsAttrs{Min: &mn, Max: &mx, NumBits: bits, NarrowRange: narrow}, 2, fqT32(t, []int{40}, xs...))
			fqBitsEqual(t, "Args emulation", out[0], wantA)
		}
	}
}

func fq64s(s []float32) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = float64(v)
	}
	return out
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
		v := fqMustRun(t, fqVars, attrs, 1, fqT32(t, []int{1}, x[i]), fqT32(t, nil, mins[i]), fqT32(t, nil, maxs[i]))[0].Float32s()[0]
		if want := fqRef32(x[i], mins[i], maxs[i], 12, false, true); math.Float32bits(v) != math.Float32bits(want) {
			t.Fatalf("Vars(%v in [%v, %v]) = %v, emulation %v", x[i], mins[i], maxs[i], v, want)
		}
		if v != fqRef32(x[i], mins[i], maxs[i], 12, false, false) {
			differ++
		}
	}
	// One PerChannel call over all of them (one channel per element).
	out := fqMustRun(t, fqChannel, attrs, 1, fqT32(t, []int{n}, x...), fqT32(t, []int{n}, mins...), fqT32(t, []int{n}, maxs...))
	want := make([]float32, n)
	for i := range want {
		want[i] = fqRef32(x[i], mins[i], maxs[i], 12, false, false)
	}
	fqBitsEqual(t, "PerChannel 20000", out[0], want)
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
		v := fqMustRun(t, fqVars, a, 1, fqT32(t, []int{1}, x), fqT32(t, nil, mn), fqT32(t, nil, mx))
		fqBitsEqual(t, "Vars divides", v[0], []float32{c.div})
		p := fqMustRun(t, fqChannel, a, 1, fqT32(t, []int{1}, x), fqT32(t, []int{1}, mn), fqT32(t, []int{1}, mx))
		fqBitsEqual(t, "PerChannel multiplies", p[0], []float32{c.mul})
		g := fqMustRun(t, fqArgs, FakeQuantArgsAttrs{Min: &mn, Max: &mx, NumBits: c.bits}, 1, fqT32(t, []int{1}, x))
		fqBitsEqual(t, "Args multiplies", g[0], []float32{c.mul})
	}
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
		nmin, nmax, _, _ := fqRefNudge(mins[c], maxs[c], bits, narrow, round)
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
		round := fqR
		if dt == tensor.Float64 {
			round = func(v float64) float64 { return v }
		}
		for si, shape := range shapes {
			bits, narrow := 2+si%15, si%2 == 1
			attrs := FakeQuantAttrs{NumBits: bits, NarrowRange: narrow}
			d := shape[len(shape)-1]
			n := fqNumel(shape)
			mins, maxs := make([]float64, d), make([]float64, d)
			for c := range mins {
				a, b := fqRandomRange(r)
				if c == 1 {
					a, b = 0, 0
				}
				mins[c], maxs[c] = float64(a), float64(b)
			}
			x, g := make([]float64, n), make([]float64, n)
			for i := range x {
				c := i % d
				x[i] = float64(fqRandomInputs(r, 1, float32(mins[c]), float32(maxs[c]))[0])
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
			in := []*tensor.Dense{fqCastT(t, dt, shape, g), fqCastT(t, dt, shape, x), fqCastT(t, dt, []int{d}, mins), fqCastT(t, dt, []int{d}, maxs)}
			out := fqMustRun(t, fqChannelGrad, attrs, 2, in...)
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
			out = fqMustRun(t, fqChannelAdj, attrs, 2, fqCastT(t, dt, shape, dbi), fqCastT(t, dt, []int{d}, dmn), fqCastT(t, dt, []int{d}, dmx), in[1], in[2], in[3])
			fqCloseTo(t, "PerChannel adjoint", out[0], want, 0)

			// Scalar forms on channel 0's range (a new one if there is no
			// channel), the whole tensor.
			if d == 0 {
				a, b := fqRandomRange(r)
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
			s0 := func(v float64) *tensor.Dense { return fqCastT(t, dt, nil, []float64{v}) }
			out = fqMustRun(t, fqVarsGrad, attrs, 2, in[0], in[1], s0(mins[0]), s0(maxs[0]))
			fqCloseTo(t, "VarsGradient input", out[0], wantBi, 0)
			fqCloseTo(t, "VarsGradient min", out[1], []float64{smin}, 1e-6)
			fqCloseTo(t, "VarsGradient max", out[2], []float64{smax}, 1e-6)
			out = fqMustRun(t, fqVarsAdj, attrs, 2, fqCastT(t, dt, shape, dbi), s0(dmn[0]), s0(dmx[0]), in[1], s0(mins[0]), s0(maxs[0]))
			fqCloseTo(t, "Vars adjoint", out[0], want, 0)
			if mins[0] < maxs[0] {
				lo, hi := float32(mins[0]), float32(maxs[0])
				out = fqMustRun(t, fqArgsGrad, FakeQuantArgsAttrs{Min: &lo, Max: &hi, NumBits: bits, NarrowRange: narrow}, 2, in[0], in[1])
				fqCloseTo(t, "ArgsGradient", out[0], wantBi, 0)
			}
		}
	}
}

func fqCastT(t testing.TB, dt tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	t.Helper()
	if dt == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		return fqT32(t, shape, f...)
	}
	return fqT64(t, shape, append([]float64(nil), v...)...)
}

// fqCloseTo compares with relative tolerance rtol (0: exactly).
func fqCloseTo(t testing.TB, what string, got *tensor.Dense, want []float64, rtol float64) {
	t.Helper()
	g, err := tensorx.Float64s(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(g), len(want))
	}
	for i := range g {
		if g[i] != want[i] && !(math.Abs(g[i]-want[i]) <= rtol*math.Abs(want[i])) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g[i], want[i])
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
	in := []*tensor.Dense{fqT32(t, []int{rows, d}, g...), fqT32(t, []int{rows, d}, x...), fqT32(t, []int{d}, mins...), fqT32(t, []int{d}, maxs...)}
	ref := fqMustRun(t, fqChannelGrad, nil, 1, in...)
	refF := fqMustRun(t, fqChannel, nil, 1, in[1:]...)
	refV := fqMustRun(t, fqVarsGrad, nil, 1, in[0], in[1], fqT32(t, nil, -0.7), fqT32(t, nil, 0.9))
	for _, threads := range []int{2, 3, 8} {
		out := fqMustRun(t, fqChannelGrad, nil, threads, in...)
		for k := range out {
			fqBitsEqual(t, "PerChannelGradient threads", out[k], ref[k].Float32s())
		}
		fqBitsEqual(t, "PerChannel threads", fqMustRun(t, fqChannel, nil, threads, in[1:]...)[0], refF[0].Float32s())
		outV := fqMustRun(t, fqVarsGrad, nil, threads, in[0], in[1], fqT32(t, nil, -0.7), fqT32(t, nil, 0.9))
		for k := range outV {
			fqBitsEqual(t, "VarsGradient threads", outV[k], refV[k].Float32s())
		}
	}
	// The min/max sums are accumulated in float64: compare with a float64
	// sum rounded once.
	wantMin, wantMax := make([]float64, d), make([]float64, d)
	for i, v := range x {
		c := i % d
		nmin, nmax, _, _ := fqRefNudge(float64(mins[c]), float64(maxs[c]), 8, false, fqR)
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
		n := fqNumel(shape)
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(3*r.Float64() - 1.5)
		}
		mins, maxs := []float32{-1, -0.3, 0.2}, []float32{1, 0.9, 1.1}
		want := make([]float32, n)
		for i, v := range x {
			want[i] = fqRef32(v, mins[i%3], maxs[i%3], 5, true, false)
		}
		out := fqMustRun(t, fqChannel, FakeQuantAttrs{NumBits: 5, NarrowRange: true}, 2, fqT32(t, shape, x...), fqT32(t, []int{3}, mins...), fqT32(t, []int{3}, maxs...))
		fqBitsEqual(t, "rank "+fqShapeString(shape), out[0], want)
	}
	for _, shape := range [][]int{{0}, {0, 4}, {3, 0}, {2, 0, 5}} {
		d := shape[len(shape)-1]
		x := fqT32(t, shape)
		mn, mx := fqT32(t, []int{d}, fqFill(d, -1)...), fqT32(t, []int{d}, fqFill(d, 1)...)
		out := fqMustRun(t, fqChannel, nil, 1, x, mn, mx)
		if !tensorx.SameShape(out[0].Shape(), shape) {
			t.Fatalf("empty %v: shape %v", shape, out[0].Shape())
		}
		out = fqMustRun(t, fqChannelGrad, nil, 1, x, x, mn, mx)
		fqBitsEqual(t, "empty grad min", out[1], make([]float32, d))
		fqBitsEqual(t, "empty grad max", out[2], make([]float32, d))
	}
}

// ---------------------------------------------------------------------------
// Errors.

func fqWantErr(t *testing.T, err, kind error, substr ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v (%v)", kind, substr)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %q does not wrap %v", err, kind)
	}
	for _, s := range substr {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

func TestFakeQuantErrors(t *testing.T) {
	x31 := fqT32(t, []int{3, 1}, 1, 2, 4)
	v := func(s []int, x ...float32) *tensor.Dense { return fqT32(t, s, x...) }
	run := func(op string, attrs any, in ...*tensor.Dense) error {
		_, err := fqRun(t, op, attrs, 1, in...)
		return err
	}
	// FQE1..FQE4 (quantization_ops_test.py test_invalid_inputs).
	fqWantErr(t, run(fqChannel, nil, x31, v([]int{1, 1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannel+":", "`min` must be rank 1 but is rank 2")
	fqWantErr(t, run(fqChannel, nil, x31, v([]int{2}, 0, 0.1), v([]int{1}, 1)), registry.ErrShape, fqChannel+":", "min has incorrect size, expected 1 was 2")
	fqWantErr(t, run(fqChannel, nil, x31, v([]int{1}, 1), v([]int{1, 1}, 1)), registry.ErrShape, fqChannel+":", "`max` must be rank 1 but is rank 2")
	fqWantErr(t, run(fqChannel, nil, x31, v([]int{1}, 0), v([]int{2}, 1, 1.1)), registry.ErrShape, fqChannel+":", "max has incorrect size, expected 1 was 2")
	// num_bits, every op.
	for _, bits := range []int{1, 17, -3} {
		a := FakeQuantAttrs{NumBits: bits}
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
			fqWantErr(t, run(op, a, in...), registry.ErrInvalidArgument, op+":", "num_bits must be between 2 and 16, inclusive")
		}
		aa := FakeQuantArgsAttrs{NumBits: bits}
		fqWantErr(t, run(fqArgs, aa, f1), registry.ErrInvalidArgument, fqArgs+":", "num_bits must be between 2 and 16")
		fqWantErr(t, run(fqArgsGrad, aa, f1, f1), registry.ErrInvalidArgument, fqArgsGrad+":", "num_bits must be between 2 and 16")
	}
	// Args: min >= max (and NaN).
	one, zero, nan := float32(1), float32(0), float32(math.NaN())
	fqWantErr(t, run(fqArgs, FakeQuantArgsAttrs{Min: &one, Max: &one}, x31), registry.ErrInvalidArgument, "min has to be smaller than max, was: 1 >= 1")
	fqWantErr(t, run(fqArgs, FakeQuantArgsAttrs{Min: &one, Max: &zero}, x31), registry.ErrInvalidArgument, "min has to be smaller than max, was: 1 >= 0")
	fqWantErr(t, run(fqArgsGrad, FakeQuantArgsAttrs{Min: &nan}, x31, x31), registry.ErrInvalidArgument, fqArgsGrad+": min has to be smaller than max")
	// Gradient shape mismatches.
	fqWantErr(t, run(fqArgsGrad, nil, v([]int{3}, 1, 2, 3), x31), registry.ErrShape, fqArgsGrad+":", "gradient and input must be the same size")
	fqWantErr(t, run(fqVarsGrad, nil, v([]int{3}, 1, 2, 3), x31, v(nil, 0), v(nil, 1)), registry.ErrShape, fqVarsGrad+":", "gradient and input must be the same size")
	fqWantErr(t, run(fqChannelGrad, nil, v([]int{1, 3}, 1, 2, 3), x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannelGrad+":", "gradient and input must be the same size")
	fqWantErr(t, run(fqChannelAdj, nil, v([]int{1, 3}, 1, 2, 3), v([]int{1}, 0), v([]int{1}, 0), x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannelAdj+":", "gradient and input must be the same size")
	fqWantErr(t, run(fqVarsAdj, nil, v([]int{3}, 1, 2, 3), v(nil, 0), v(nil, 0), x31, v(nil, 0), v(nil, 1)), registry.ErrShape, fqVarsAdj+":", "gradient and input must be the same size")
	// Vars: rank-0 min/max.
	fqWantErr(t, run(fqVars, nil, x31, v([]int{1}, 0), v(nil, 1)), registry.ErrShape, fqVars+":", "`min` must be rank 0 but is rank 1")
	fqWantErr(t, run(fqVars, nil, x31, v(nil, 0), v([]int{1, 1}, 1)), registry.ErrShape, fqVars+":", "`max` must be rank 0 but is rank 2")
	fqWantErr(t, run(fqVarsGrad, nil, x31, x31, v([]int{1}, 0), v(nil, 1)), registry.ErrShape, fqVarsGrad+":", "`min` must be rank 0")
	fqWantErr(t, run(fqVarsAdj, nil, x31, v([]int{1}, 0), v(nil, 0), x31, v(nil, 0), v(nil, 1)), registry.ErrShape, fqVarsAdj+":", "`d_min` must be rank 0")
	// PerChannel: rank-0 inputs; gradient rank > 4.
	fqWantErr(t, run(fqChannel, nil, v(nil, 1), v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, fqChannel+":", "input must be at least rank 1")
	fqWantErr(t, run(fqChannelGrad, nil, v(nil, 1), v(nil, 1), v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, "input must be at least rank 1")
	x5 := v([]int{1, 1, 1, 1, 2}, 1, 2)
	fqWantErr(t, run(fqChannelGrad, nil, x5, x5, v([]int{2}, 0, 0), v([]int{2}, 1, 1)), registry.ErrShape, fqChannelGrad+":", "must be at most rank 4")
	fqWantErr(t, run(fqChannelGrad, nil, x31, x31, v([]int{2}, 0, 0), v([]int{1}, 1)), registry.ErrShape, "min has incorrect size, expected 1 was 2")
	fqWantErr(t, run(fqChannelAdj, nil, x31, v([]int{2}, 0, 0), v([]int{1}, 0), x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrShape, "d_min has incorrect size")
	// Dtypes.
	m64 := fqT64(t, []int{1}, 0)
	fqWantErr(t, run(fqChannel, nil, x31, m64, v([]int{1}, 1)), registry.ErrDtype, fqChannel+": min has dtype float64, expected float32")
	fqWantErr(t, run(fqChannelGrad, nil, fqT64(t, []int{3, 1}, 1, 2, 3), x31, m64, m64), registry.ErrDtype, fqChannelGrad+": inputs has dtype float32")
	fqWantErr(t, run(fqVars, nil, x31, fqT64(t, nil, 0), v(nil, 1)), registry.ErrDtype, fqVars)
	fqWantErr(t, run(fqArgs, nil, fqT(t, []int{2}, []int32{1, 2})), registry.ErrDtype, fqArgs)
	fqWantErr(t, run(fqArgsGrad, nil, x31, fqT64(t, []int{3, 1}, 1, 2, 3)), registry.ErrDtype, fqArgsGrad)
	// Input counts (checked by the registry).
	fqWantErr(t, run(fqChannel, nil, x31), registry.ErrInvalidArgument, fqChannel)
	// Attrs of the wrong type.
	fqWantErr(t, run(fqChannel, FakeQuantArgsAttrs{}, x31, v([]int{1}, 0), v([]int{1}, 1)), registry.ErrInvalidArgument, fqChannel)
}

func fqT[T tensorx.Elem](t testing.TB, shape []int, v []T) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
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
	out := fqMustRun(t, fqArgs, aa, 1, fqT32(t, []int{3}, -1, 0.7, 2))
	want := []float32{0, fqRef32(0.7, 0, 1.5, 4, true, false), 1.5}
	fqBitsEqual(t, "Args min 0", out[0], want)
	def, err = registry.Lookup(fqChannel)
	if err != nil {
		t.Fatal(err)
	}
	a, err = def.ParseAttrs(map[string]any{"num_bits": 17.0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fqRun(t, fqChannel, a, 1, fqT32(t, []int{1}, 1), fqT32(t, []int{1}, 0), fqT32(t, []int{1}, 1)); err == nil {
		t.Fatal("num_bits 17 from the parser was accepted")
	}
	a, err = def.ParseAttrs(nil)
	if err != nil || a.(FakeQuantAttrs).NumBits != 8 {
		t.Fatalf("PerChannel defaults = %+v, %v", a, err)
	}
}

// TestFakeQuantSamplesValid: the sample generators produce configurations
// the ops accept, with inputs away from the nudged bounds.
func TestFakeQuantSamplesValid(t *testing.T) {
	for _, op := range []string{fqArgs, fqArgsGrad, fqVars, fqVarsGrad, fqVarsAdj, fqChannel, fqChannelGrad, fqChannelAdj} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		for seed := int64(1); seed <= 3; seed++ {
			samples := def.Samples(rand.New(rand.NewSource(seed)))
			if len(samples) < 3 {
				t.Fatalf("%s: %d samples", op, len(samples))
			}
			for _, s := range samples {
				if _, err := fqRun(t, op, s.Attrs, 1, s.Inputs...); err != nil {
					t.Fatalf("%s sample %s: %v", op, s.Name, err)
				}
			}
		}
	}
	// The layouts keep every input at least the gap from its channel's
	// nudged bounds.
	r := rand.New(rand.NewSource(1))
	for _, c := range append(append([]fqConfig(nil), fqFineConfigs...), fqCoarseConfigs...) {
		for _, perChannel := range []bool{true, false} {
			fine := c.bits >= 15 && !c.zero
			l := c.layout(r, perChannel, fine)
			qmin, qmax := fqQuantRange(c.bits, c.narrow)
			for i, v := range l.x {
				k := i % l.d
				if l.mins[k] == 0 && l.maxs[k] == 0 {
					continue
				}
				g := fqNudge(l.mins[k], l.maxs[k], qmin, qmax)
				if math.Abs(v-g.nmin) < 5*fqSampleEps || math.Abs(v-g.nmax) < 5*fqSampleEps {
					t.Fatalf("%s: input %v too close to the nudged range [%v, %v]", c.name, v, g.nmin, g.nmax)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Benchmark W8 (perf/WORKLOADS.md): N32 56x56 C64 NHWC float32, 8 bits.

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
	return []*tensor.Dense{fqT32(b, []int{n, h, w, c}, g...), fqT32(b, []int{n, h, w, c}, x...), fqT32(b, []int{c}, mins...), fqT32(b, []int{c}, maxs...)}
}

// fqReuseAlloc returns the same buffers on every call, like the tape's
// arena in steady state.
type fqReuseAlloc struct{ bufs map[string]*tensor.Dense }

func (a *fqReuseAlloc) Alloc(dt tensor.Dtype, shape []int, zeroed bool) (*tensor.Dense, error) {
	key := dt.String() + fqShapeString(shape)
	if d, ok := a.bufs[key]; ok && !zeroed {
		return d, nil
	}
	d, err := tensorx.Zeros(dt, shape)
	if err == nil && !zeroed {
		a.bufs[key] = d
	}
	return d, err
}

func (a *fqReuseAlloc) Release(*tensor.Dense) {}

func benchW8(b *testing.B, backward bool) {
	in := fqW8(b)
	kc := &registry.KernelCtx{Alloc: &fqReuseAlloc{bufs: map[string]*tensor.Dense{}}, Threads: 1}
	fwd, _ := registry.Lookup(fqChannel)
	bwd, _ := registry.Lookup(fqChannelGrad)
	attrs := FakeQuantAttrs{NumBits: 8}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := registry.Run(fwd, kc, attrs, in[1:]); err != nil {
			b.Fatal(err)
		}
		if backward {
			if _, err := registry.Run(bwd, kc, attrs, in); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkFakeQuantW8Forward is W8's fwd mode on one thread.
func BenchmarkFakeQuantW8Forward(b *testing.B) { benchW8(b, false) }

// BenchmarkFakeQuantW8ForwardBackward is the forward plus the fused
// gradient op (input, min and max gradients) on one thread.
func BenchmarkFakeQuantW8ForwardBackward(b *testing.B) { benchW8(b, true) }

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
