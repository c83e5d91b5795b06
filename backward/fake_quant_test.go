package backward_test

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/golden"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// Gradient tests of the fake-quant family. Finite differences cannot see
// a straight-through estimator, so the forward ops' gradients are checked
// exactly against TensorFlow's rule (spec §4, re-implemented below from the
// spec) with gradcheck.CheckSurrogate, first and second order, for every
// num_bits, narrow_range, both dtypes, ranks 1..5, zero ranges, inputs on
// the nudged bounds and ±Inf; and against the finite differences of the
// clip function (CheckSurrogateFunc) away from the bounds. The gradient
// and adjoint ops are linear in their gradient inputs and are checked
// numerically (gradcheck, first and second order) on their samples; the
// forward ops' fine-grid samples are checked numerically too (see
// forward/fake_quant_samples.go).

const (
	fqArgsOp    = "FakeQuantWithMinMaxArgs"
	fqVarsOp    = "FakeQuantWithMinMaxVars"
	fqChannelOp = "FakeQuantWithMinMaxVarsPerChannel"
	fqArgsGrad  = "FakeQuantWithMinMaxArgsGradient"
	fqVarsGrad  = "FakeQuantWithMinMaxVarsGradient"
	fqChanGrad  = "FakeQuantWithMinMaxVarsPerChannelGradient"
	fqVarsAdj   = "tapegrad.FakeQuantWithMinMaxVarsGradientAdjoint"
	fqChanAdj   = "tapegrad.FakeQuantWithMinMaxVarsPerChannelGradientAdjoint"
)

// ---------------------------------------------------------------------------
// The rule, from the spec.

// fqRuleBounds returns the nudged range of [mn, mx] computed in float32
// (f32) or float64 arithmetic, and whether it is the min == max == 0 case.
func fqRuleBounds(mn, mx float64, bits int, narrow, f32 bool) (nmin, nmax float64, zero bool) {
	if mn == 0 && mx == 0 {
		return 0, 0, true
	}
	rd := func(v float64) float64 { return v }
	if f32 {
		rd = func(v float64) float64 { return float64(float32(v)) }
	}
	qmin := 0.0
	if narrow {
		qmin = 1
	}
	qmax := math.Exp2(float64(bits)) - 1
	scale := rd(rd(mx-mn) / (qmax - qmin))
	zpf := rd(qmin - rd(mn/scale))
	zp := math.Round(zpf)
	if zpf < qmin {
		zp = qmin
	} else if zpf > qmax {
		zp = qmax
	}
	return rd((qmin - zp) * scale), rd((qmax - zp) * scale), false
}

// fqRule is TensorFlow's straight-through rule for upstream u at inputs
// x with one range per channel (d = len(mins); 1 for the scalar ops):
// u where nmin <= x <= nmax (everything for a zero range), and the
// per-channel sums of u below / above, accumulated in float64.
func fqRule(x, u, mins, maxs []float64, bits int, narrow, f32 bool) (dx, dmin, dmax []float64) {
	d := len(mins)
	dx, dmin, dmax = make([]float64, len(x)), make([]float64, d), make([]float64, d)
	for i, v := range x {
		c := i % d
		nmin, nmax, zero := fqRuleBounds(mins[c], maxs[c], bits, narrow, f32)
		switch {
		case zero || v >= nmin && v <= nmax:
			dx[i] = u[i]
		case v < nmin:
			dmin[c] += u[i]
		case v > nmax:
			dmax[c] += u[i]
		}
	}
	return dx, dmin, dmax
}

// fqAdjRule is the adjoint of the rule: wx inside, wmin[c] below, wmax[c]
// above.
func fqAdjRule(x, wx, wmin, wmax, mins, maxs []float64, bits int, narrow, f32 bool) []float64 {
	d := len(mins)
	out := make([]float64, len(x))
	for i, v := range x {
		c := i % d
		nmin, nmax, zero := fqRuleBounds(mins[c], maxs[c], bits, narrow, f32)
		switch {
		case zero || v >= nmin && v <= nmax:
			out[i] = wx[i]
		case v < nmin:
			out[i] = wmin[c]
		case v > nmax:
			out[i] = wmax[c]
		}
	}
	return out
}

func fqF64(t testing.TB, d *tensor.Dense) []float64 {
	t.Helper()
	if d == nil {
		return nil
	}
	return testutil.Float64s(t, d)
}

// fqSumDense rounds float64 sums to dt (the kernels accumulate in float64
// and round once).
func fqSumDense(t testing.TB, dt tensor.Dtype, shape []int, v []float64) *tensor.Dense {
	return testutil.Dense(t, dt, shape, v)
}

// ---------------------------------------------------------------------------
// Configurations.

type fqCase struct {
	name   string
	op     string // forward op
	dt     tensor.Dtype
	bits   int
	narrow bool
	shape  []int
	x      []float64
	mins   []float64 // one per channel (PerChannel) or one (Vars, Args)
	maxs   []float64
}

func (c fqCase) attrs() any {
	if c.op == fqArgsOp {
		lo, hi := float32(c.mins[0]), float32(c.maxs[0])
		return forward.FakeQuantArgsAttrs{Min: &lo, Max: &hi, NumBits: c.bits, NarrowRange: c.narrow}
	}
	return forward.FakeQuantAttrs{NumBits: c.bits, NarrowRange: c.narrow}
}

// inputs returns the forward op's inputs.
func (c fqCase) inputs(t testing.TB) []*tensor.Dense {
	x := testutil.Dense(t, c.dt, c.shape, c.x)
	switch c.op {
	case fqArgsOp:
		return []*tensor.Dense{x}
	case fqVarsOp:
		return []*tensor.Dense{x, testutil.Dense(t, c.dt, nil, c.mins), testutil.Dense(t, c.dt, nil, c.maxs)}
	}
	return []*tensor.Dense{x, testutil.Dense(t, c.dt, []int{len(c.mins)}, c.mins), testutil.Dense(t, c.dt, []int{len(c.maxs)}, c.maxs)}
}

// rangeOf returns the ranges as the kernels see them (rounded to dt).
func (c fqCase) rangeOf() ([]float64, []float64) {
	mins, maxs := append([]float64(nil), c.mins...), append([]float64(nil), c.maxs...)
	if c.dt == tensor.Float32 || c.op == fqArgsOp { // Args' attrs are float32
		for i := range mins {
			mins[i], maxs[i] = float64(float32(mins[i])), float64(float32(maxs[i]))
		}
	}
	return mins, maxs
}

// fqDrawCases draws forward-op cases over every num_bits, narrow_range,
// dtype and op, with ranges of every kind and inputs on grid points, on
// the nudged bounds and next to them, far outside, and ±Inf.
func fqDrawCases(r *rand.Rand) []fqCase {
	var cases []fqCase
	shapes := [][]int{{6}, {3, 4}, {2, 2, 3}, {2, 1, 2, 3}, {1, 2, 1, 2, 3}}
	k := 0
	for bits := 2; bits <= 16; bits++ {
		for _, narrow := range []bool{false, true} {
			for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
				for _, op := range []string{fqChannelOp, fqVarsOp, fqArgsOp} {
					k++
					shape := shapes[k%len(shapes)]
					d := 1
					if op == fqChannelOp {
						d = shape[len(shape)-1]
					}
					c := fqCase{name: fmt.Sprintf("%s/%v/b%d/narrow=%v/%v", op, dt, bits, narrow, shape), op: op, dt: dt,
						bits: bits, narrow: narrow, shape: shape, mins: make([]float64, d), maxs: make([]float64, d)}
					for ch := 0; ch < d; ch++ {
						lo, hi := -0.5-3*r.Float64(), 0.5+3*r.Float64()
						switch r.Intn(5) {
						case 0:
							lo, hi = 0.2+r.Float64(), 1.5+r.Float64() // above 0
						case 1:
							lo, hi = -2.5-r.Float64(), -0.2-r.Float64() // below 0
						case 2:
							if op != fqArgsOp {
								lo, hi = 0, 0
							}
						}
						c.mins[ch], c.maxs[ch] = lo, hi
					}
					mins, maxs := c.rangeOf()
					n := 1
					for _, s := range shape {
						n *= s
					}
					c.x = make([]float64, n)
					for i := range c.x {
						ch := i % d
						nmin, nmax, _ := fqRuleBounds(mins[ch], maxs[ch], bits, narrow, dt == tensor.Float32)
						up, down := math.Inf(1), math.Inf(-1)
						switch r.Intn(7) {
						case 0:
							c.x[i] = nmin
						case 1:
							c.x[i] = nmax
						case 2: // the next value below nmin / above nmax in dt
							if dt == tensor.Float32 {
								c.x[i] = float64([]float32{math.Nextafter32(float32(nmin), float32(down)), math.Nextafter32(float32(nmax), float32(up))}[r.Intn(2)])
							} else {
								c.x[i] = []float64{math.Nextafter(nmin, down), math.Nextafter(nmax, up)}[r.Intn(2)]
							}
						case 3:
							c.x[i] = []float64{up, down}[r.Intn(2)]
						default:
							c.x[i] = nmin - 1 + (nmax-nmin+2)*r.Float64()
						}
					}
					cases = append(cases, c)
				}
			}
		}
	}
	return cases
}

// fqForwardFunc applies the case's forward op.
func (c fqCase) forwardFunc() gradcheck.Func {
	attrs := c.attrs()
	return func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return tp.Apply(c.op, attrs, in...)
	}
}

// rule returns the case's first-order rule for CheckSurrogate.
func (c fqCase) rule(t testing.TB) func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
	return func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
		mins, maxs := c.rangeOf()
		dx, dmin, dmax := fqRule(fqF64(t, in[0]), fqF64(t, up[0]), mins, maxs, c.bits, c.narrow, c.dt == tensor.Float32)
		out := []*tensor.Dense{testutil.Dense(t, c.dt, c.shape, dx)}
		switch c.op {
		case fqVarsOp:
			out = append(out, fqSumDense(t, c.dt, nil, dmin), fqSumDense(t, c.dt, nil, dmax))
		case fqChannelOp:
			out = append(out, fqSumDense(t, c.dt, []int{len(dmin)}, dmin), fqSumDense(t, c.dt, []int{len(dmax)}, dmax))
		}
		return out, nil
	}
}

// TestFakeQuantSurrogateFirstOrder checks the tape's gradients of every
// forward op exactly against the straight-through rule.
func TestFakeQuantSurrogateFirstOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i, c := range fqDrawCases(r) {
		if err := gradcheck.CheckSurrogate(c.forwardFunc(), c.inputs(t), c.rule(t), gradcheck.Options{Seed: int64(i)}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

// TestFakeQuantSurrogateSecondOrder checks the gradients of the gradients:
// with CreateGraph, the first-order gradients (dx, dmin, dmax) of the
// forward op for an upstream u are differentiated with respect to x, min,
// max and u. TensorFlow's view: zero with respect to x, min and max; the
// adjoint of the rule with respect to u.
func TestFakeQuantSurrogateSecondOrder(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i, c := range fqDrawCases(r) {
		if c.op == fqArgsOp && i%3 != 0 {
			continue // keep the test fast: Args is the simplest form
		}
		attrs := c.attrs()
		nin := 3
		if c.op == fqArgsOp {
			nin = 1
		}
		f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
			y := tp.Apply(c.op, attrs, in[:nin]...)[0]
			gs, err := tp.Grad([]autodiff.Value{y}, in[:nin], []autodiff.Value{in[nin]}, autodiff.GradOpts{CreateGraph: true})
			if err != nil {
				t.Fatalf("%s: first-order Grad: %v", c.name, err)
			}
			return gs
		}
		in := append(c.inputs(t), testutil.Dense(t, c.dt, c.shape, testutil.Normal(r, len(c.x))))
		rule := func(in, up []*tensor.Dense) ([]*tensor.Dense, error) {
			mins, maxs := c.rangeOf()
			wmin, wmax := []float64{0}, []float64{0}
			if nin == 3 {
				wmin, wmax = fqF64(t, up[1]), fqF64(t, up[2])
			}
			du := fqAdjRule(fqF64(t, in[0]), fqF64(t, up[0]), wmin, wmax, mins, maxs, c.bits, c.narrow, c.dt == tensor.Float32)
			out := make([]*tensor.Dense, len(in)) // nil: zero for x, min, max
			out[nin] = testutil.Dense(t, c.dt, c.shape, du)
			return out, nil
		}
		if err := gradcheck.CheckSurrogate(f, in, rule, gradcheck.Options{Seed: int64(i)}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

// TestFakeQuantThirdOrder differentiates the PerChannel gradient three
// times through the tape (gradient op → adjoint op → gradient op): the
// third derivative with respect to the first upstream gradient u, after
// contracting with w and v, is again the rule applied to v and must match.
func TestFakeQuantThirdOrder(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const d = 3
	shape := []int{4, d}
	mins, maxs := []float64{-1, 0.3, 0}, []float64{1.2, 2, 0}
	x := []float64{-1.5, 0.5, 3, 0.2, 0.1, 0, 5, -2, 7, 0.9, 1.9, -4}
	attrs := forward.FakeQuantAttrs{NumBits: 4}
	tp := autodiff.NewTape()
	xv := tp.Watch(testutil.Dense(t, tensor.Float64, shape, x))
	mn, mx := tp.Watch(testutil.Dense(t, tensor.Float64, []int{d}, mins)), tp.Watch(testutil.Dense(t, tensor.Float64, []int{d}, maxs))
	u := tp.Watch(testutil.Dense(t, tensor.Float64, shape, testutil.Normal(r, 12)))
	y := autodiff.FakeQuantPerChannel(xv, mn, mx, attrs)
	g1, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{xv, mn, mx}, []autodiff.Value{u}, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	w := tp.Watch(testutil.Dense(t, tensor.Float64, shape, testutil.Normal(r, 12)))
	// g2 = adjoint(w, 0, 0) as a function of w (and of u: not at all).
	g2, err := tp.Grad([]autodiff.Value{g1[0]}, []autodiff.Value{u}, []autodiff.Value{w}, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	v := testutil.Normal(r, 12)
	g3, err := tp.Grad([]autodiff.Value{g2[0]}, []autodiff.Value{w}, []autodiff.Value{tp.Constant(testutil.Dense(t, tensor.Float64, shape, v))}, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	got, err := g3[0].Float64s()
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := fqRule(x, v, mins, maxs, 4, false, false)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("third order: element %d = %v, want %v (got %v)", i, got[i], want[i], got)
		}
	}
}

// TestFakeQuantGradOpsNumeric runs the numerical first- and second-order
// checks on every sample of every op of the family (the sweep runs a few).
func TestFakeQuantGradOpsNumeric(t *testing.T) {
	for _, op := range []string{fqArgsOp, fqVarsOp, fqChannelOp, fqArgsGrad, fqVarsGrad, fqChanGrad, fqVarsAdj, fqChanAdj} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		for _, seed := range []int64{1, 2} {
			samples, err := gradcheck.OpSamples(def, seed, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range samples {
				if err := gradcheck.CheckSample(def, s, gradcheck.Options{Seed: seed}); err != nil {
					t.Errorf("%s seed %d: %v", op, seed, err)
				}
			}
		}
	}
}

// TestFakeQuantGradOpsPartialUpstream: gradients of the gradient ops when
// only some of their outputs are differentiated (the others' upstream
// gradients are nil and replaced by zeros), first and second order.
func TestFakeQuantGradOpsPartialUpstream(t *testing.T) {
	for _, op := range []string{fqVarsGrad, fqChanGrad} {
		def, err := registry.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		samples, err := gradcheck.OpSamples(def, 3, 4)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range samples {
			for _, outs := range [][]int{{0}, {1}, {2}, {1, 2}} {
				o := gradcheck.Options{Seed: 3, Wrt: s.Wrt, Outputs: outs}
				if err := gradcheck.Check(gradcheck.Op(op, s.Attrs), s.Inputs, o); err != nil {
					t.Errorf("%s %s outputs %v: %v", op, s.Name, outs, err)
				}
				if err := gradcheck.CheckSecondOrder(gradcheck.Op(op, s.Attrs), s.Inputs, o); err != nil {
					t.Errorf("%s %s outputs %v, second order: %v", op, s.Name, outs, err)
				}
			}
		}
	}
}

// TestFakeQuantNumericCheckIsSensitive: the fine-grid numerical check of
// the forward ops is not vacuous. A gradient that ignored the mask (the
// identity) or a rule with the wrong bounds must fail: here the surrogate
// rule's "all pass" variant is compared with the numerical Jacobian.
func TestFakeQuantNumericCheckIsSensitive(t *testing.T) {
	def, err := registry.Lookup(fqChannelOp)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := gradcheck.OpSamples(def, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	// An op whose gradient is the identity for x and zero for min/max
	// (what a naive straight-through estimator without clipping gives).
	s := samples[0]
	f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		y := tp.Apply(fqChannelOp, s.Attrs, in...)[0]
		// y + (x - StopGradient(x)) - (y - StopGradient(y)): value y,
		// gradient identity w.r.t. x.
		sg := func(v autodiff.Value) autodiff.Value { return tp.Apply("StopGradient", nil, v)[0] }
		return []autodiff.Value{autodiff.Add(sg(y), autodiff.Sub(in[0], sg(in[0])))}
	}
	o := gradcheck.Options{Seed: 1}.ForSample(s)
	if err := gradcheck.Check(f, s.Inputs, o); err == nil {
		t.Fatal("the fine-grid numerical check accepted an unclipped straight-through gradient")
	}
}

// fqClip is clamp(x, lo, hi) = lo + relu(x − lo) − relu(x − hi), built
// from differentiable ops (lo and hi broadcast against x): its derivative
// is [lo < x <= hi] for x, [x <= lo] for lo and [x > hi] for hi.
func fqClip(x, lo, hi autodiff.Value) autodiff.Value {
	return autodiff.Sub(autodiff.Add(lo, autodiff.Relu(autodiff.Sub(x, lo))), autodiff.Relu(autodiff.Sub(x, hi)))
}

// TestFakeQuantClipSurrogate compares the forward ops' tape gradients with
// the finite differences of the clip function (gradcheck's
// CheckSurrogateFunc), at every num_bits, on ranges straddling 0 and inputs
// away from both the raw and the nudged bounds (TensorFlow's rule uses the
// nudged ones; where they bracket an input differently the rule is by
// design not the clip's derivative).
func TestFakeQuantClipSurrogate(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for bits := 2; bits <= 16; bits++ {
		for _, narrow := range []bool{false, true} {
			for _, op := range []string{fqChannelOp, fqVarsOp, fqArgsOp} {
				shape := []int{3, 4}
				d := 4
				if op != fqChannelOp {
					d = 1
				}
				mins, maxs := make([]float64, d), make([]float64, d)
				for c := range mins {
					mins[c], maxs[c] = -0.3-2*r.Float64(), 0.3+2*r.Float64()
					if op == fqArgsOp { // float32 attrs
						mins[c], maxs[c] = float64(float32(mins[c])), float64(float32(maxs[c]))
					}
				}
				x := make([]float64, 12)
				for i := range x {
					c := i % d
					nmin, nmax, _ := fqRuleBounds(mins[c], maxs[c], bits, narrow, false)
					lo, hi := math.Max(mins[c], nmin), math.Min(maxs[c], nmax)
					gap := 0.05 * (hi - lo)
					switch r.Intn(4) {
					case 0:
						x[i] = math.Min(mins[c], nmin) - gap - r.Float64()
					case 1:
						x[i] = math.Max(maxs[c], nmax) + gap + r.Float64()
					default:
						x[i] = lo + gap + (hi-lo-2*gap)*r.Float64()
					}
				}
				c := fqCase{op: op, dt: tensor.Float64, bits: bits, narrow: narrow, shape: shape, x: x, mins: mins, maxs: maxs}
				attrs := c.attrs()
				var clip gradcheck.Func
				switch op {
				case fqArgsOp:
					clip = func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
						return []autodiff.Value{fqClip(in[0], tp.Scalar(tensor.Float64, mins[0]), tp.Scalar(tensor.Float64, maxs[0]))}
					}
				default:
					clip = func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
						return []autodiff.Value{fqClip(in[0], in[1], in[2])}
					}
				}
				f := func(tp *autodiff.Tape, in []autodiff.Value) []autodiff.Value { return tp.Apply(op, attrs, in...) }
				if err := gradcheck.CheckSurrogateFunc(f, clip, c.inputs(t), gradcheck.Options{Seed: int64(bits)}); err != nil {
					t.Fatalf("%s b%d narrow=%v: %v", op, bits, narrow, err)
				}
			}
		}
	}
}

// TestFakeQuantHighRankGradient checks the rank > 4 path of the PerChannel gradient
// (computed on the [rows, channels] view) on a rank-6 input.
func TestFakeQuantHighRankGradient(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	c := fqCase{name: "rank6", op: fqChannelOp, dt: tensor.Float32, bits: 6, shape: []int{2, 1, 2, 1, 2, 3},
		mins: []float64{-1, 0, 0.5}, maxs: []float64{1, 0, 2}}
	c.x = make([]float64, 24)
	for i := range c.x {
		c.x[i] = 4*r.Float64() - 2
	}
	if err := gradcheck.CheckSurrogate(c.forwardFunc(), c.inputs(t), c.rule(t), gradcheck.Options{Seed: 5}); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Golden cases, bit for bit.

// TestFakeQuantGoldenBitExact runs the repo's fake-quant golden cases and
// requires bit-identical outputs and input gradients (the runner's
// tolerance is 1e-6; the kernels are exact). The min/max gradient sums may
// differ from TensorFlow's float32 summation order in the last bit: they
// are compared to 1 ulp.
func TestFakeQuantGoldenBitExact(t *testing.T) {
	cases, err := golden.ReadFile(filepath.Join("..", "testdata", "golden", "fake_quant.json"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, c := range cases {
		if c.Err != nil {
			t.Fatalf("%s: %v", c, c.Err)
		}
		def, err := registry.Lookup(c.Op)
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := def.ParseAttrs(c.Attrs)
		if c.WantError {
			if err == nil {
				ins := make([]*tensor.Dense, len(c.Inputs))
				for j, in := range c.Inputs {
					if ins[j], err = in.Dense(); err != nil {
						t.Fatal(err)
					}
				}
				_, err = registry.Run(def, nil, attrs, ins)
			}
			if err == nil {
				t.Fatalf("%s: no error", c)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		tp := autodiff.NewTape(autodiff.Threads(2))
		ins := make([]autodiff.Value, len(c.Inputs))
		for j, in := range c.Inputs {
			d, err := in.Dense()
			if err != nil {
				t.Fatal(err)
			}
			ins[j] = tp.Watch(d)
		}
		outs := tp.Apply(c.Op, attrs, ins...)
		for i, want := range c.Outputs {
			fqGoldenBits(t, fmt.Sprintf("%s output %d", c, i), outs[i], want, 0)
		}
		if c.Grad != nil {
			ups := make([]autodiff.Value, len(outs))
			for i, u := range c.Grad.Upstream {
				d, err := u.Dense()
				if err != nil {
					t.Fatal(err)
				}
				ups[i] = tp.Constant(d)
			}
			gs, err := tp.Grad(outs, ins, ups, autodiff.GradOpts{})
			if err != nil {
				t.Fatal(err)
			}
			for j, want := range c.Grad.Expected {
				if want != nil {
					fqGoldenBits(t, fmt.Sprintf("%s gradient %d", c, j), gs[j], want, min(j, 1))
				}
			}
		}
		tp.Release()
		ran++
	}
	if ran < 9 {
		t.Fatalf("only %d golden cases ran", ran)
	}
}

// fqGoldenBits compares a float32 value with a golden tensor within ulps
// units in the last place (0: bit-identical).
func fqGoldenBits(t *testing.T, what string, v autodiff.Value, want *golden.Tensor, ulps int) {
	t.Helper()
	got, err := v.Float32s()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	w, ok := want.Data.([]float32)
	if !ok || len(w) != len(got) {
		t.Fatalf("%s: golden data %T of %d elements, got %d", what, want.Data, len(w), len(got))
	}
	for i := range w {
		a, b := math.Float32bits(got[i]), math.Float32bits(w[i])
		if a == b {
			continue
		}
		diff := int64(a) - int64(b)
		if ulps == 0 || diff > int64(ulps) || diff < -int64(ulps) || (got[i] < 0) != (w[i] < 0) {
			t.Fatalf("%s: element %d = %v (%#08x), golden %v (%#08x)", what, i, got[i], a, w[i], b)
		}
	}
}
