package gradcheck

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Func applies ops to the inputs on tape t and returns the outputs to
// check. in[j] is the tape value of the j-th input (a watched leaf for
// floating inputs, a constant otherwise). Errors are reported through the
// tape (its sticky error), which the checks return.
type Func func(t *autodiff.Tape, in []autodiff.Value) []autodiff.Value

// Default tolerances and step. They apply to the fields of Options left
// at zero.
const (
	// DefaultEps is the finite-difference step for float64.
	DefaultEps = 1e-6
	// DefaultAtol is the absolute tolerance for float64.
	DefaultAtol = 1e-5
	// DefaultRtol is the relative tolerance for float64.
	DefaultRtol = 1e-3

	// Float32Eps is the step used when a float32 input or output is
	// checked (Options.AllowFloat32): float32 carries ~7 digits, so the
	// step must be much larger than in float64 for the difference
	// f(x+eps) − f(x−eps) to keep a few significant digits.
	Float32Eps = 1e-3
	// Float32Atol is the absolute tolerance when float32 is involved.
	Float32Atol = 1e-3
	// Float32Rtol is the relative tolerance when float32 is involved.
	Float32Rtol = 1e-2
)

// Options configure the checks. Zero values mean defaults.
type Options struct {
	// Eps is the finite-difference step (DefaultEps, or Float32Eps when
	// float32 is involved).
	Eps float64
	// Atol and Rtol are the tolerances of |analytical − numerical| <=
	// Atol + Rtol·|numerical| (DefaultAtol/DefaultRtol, or
	// Float32Atol/Float32Rtol when float32 is involved). For
	// CheckSurrogate, both zero mean exact equality.
	Atol, Rtol float64
	// NondetTol is the tolerance for nondeterministic functions: f and its
	// gradient are evaluated twice at the same point and must agree within
	// it (0: exactly).
	NondetTol float64
	// Fast compares random projections uᵀ·J·v instead of full
	// vector-Jacobian products (two evaluations per input instead of two
	// per input element).
	Fast bool
	// Seed seeds the random upstream gradients and projections, and the
	// tapes the function runs on.
	Seed int64
	// Wrt lists the inputs to check; nil means every floating input.
	Wrt []int
	// Outputs lists the outputs to check; nil means every floating output.
	Outputs []int
	// AllowFloat32 permits checking float32 inputs and outputs (refused
	// otherwise: finite differences in float32 are too coarse for the
	// default tolerances). The float32 defaults then apply.
	AllowFloat32 bool
}

// ForSample returns o with the overrides of sample s applied: its Atol
// and Rtol when non-zero, and its Wrt and Outputs when non-nil.
func (o Options) ForSample(s registry.Sample) Options {
	if s.Atol != 0 {
		o.Atol = s.Atol
	}
	if s.Rtol != 0 {
		o.Rtol = s.Rtol
	}
	if s.Wrt != nil {
		o.Wrt = s.Wrt
	}
	if s.Outputs != nil {
		o.Outputs = s.Outputs
	}
	return o
}

// Kind classifies a Failure.
type Kind int

// The kinds of failure.
const (
	// Mismatch: the tape's gradient differs from the numerical one.
	Mismatch Kind = iota
	// Nondeterministic: two evaluations at the same point differ by more
	// than Options.NondetTol.
	Nondeterministic
	// SurrogateMismatch: the tape's gradient differs from the rule given
	// to CheckSurrogate, or from the finite differences of the surrogate
	// function given to CheckSurrogateFunc.
	SurrogateMismatch
)

func (k Kind) String() string {
	switch k {
	case Mismatch:
		return "gradient mismatch"
	case Nondeterministic:
		return "nondeterminism"
	case SurrogateMismatch:
		return "surrogate gradient mismatch"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Failure is the error returned when a comparison fails. It describes the
// worst element of the first failing (output, input) pair.
type Failure struct {
	// Kind says what was compared.
	Kind Kind
	// Order is 1 for Check and CheckSurrogate, 2 for CheckSecondOrder.
	Order int
	// Fast is set when the failure comes from a random projection
	// (Options.Fast); Index is then nil.
	Fast bool
	// Where says which evaluation differed, for Nondeterministic:
	// "outputs" or "gradients".
	Where string
	// Output is the index of the output (of f) whose gradient is wrong, or
	// -1 for the gradient of all checked outputs together. For Order 2 it
	// is the index of the input whose first-order gradient was
	// differentiated.
	Output int
	// Input is the index of the input the gradient is taken with respect
	// to. For Order 2 with Upstream set, it is instead the index of the
	// output whose upstream gradient was the variable.
	Input int
	// Upstream is set (Order 2 only) when the derivative is taken with
	// respect to the upstream gradient of output Input rather than with
	// respect to an input.
	Upstream bool
	// Index is the multi-index of the worst element, into the input's
	// shape (nil for Fast; into the output's shape for Nondeterministic
	// outputs).
	Index []int
	// Numerical is the reference value: the finite-difference product
	// (of the surrogate function for CheckSurrogateFunc), the rule's value
	// (CheckSurrogate) or the first evaluation (Nondeterministic).
	Numerical float64
	// Analytical is the tape's value (the second evaluation for
	// Nondeterministic).
	Analytical float64
	// Atol and Rtol are the tolerances used; Tolerance is the bound the
	// worst element exceeded, Atol + Rtol·|Numerical| (NondetTol for
	// Nondeterministic).
	Atol, Rtol, Tolerance float64
	// Bad is the number of elements out of tolerance, of Total compared
	// for this pair.
	Bad, Total int
}

// Error describes the failure on one line.
func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString("gradcheck: ")
	switch f.Order {
	case 2:
		b.WriteString("second-order ")
	default:
		b.WriteString("first-order ")
	}
	b.WriteString(f.Kind.String())
	if f.Fast {
		b.WriteString(" (fast mode, random projection)")
	}
	if f.Kind == Nondeterministic {
		fmt.Fprintf(&b, " in the %s", f.Where)
	}
	b.WriteString(": ")
	b.WriteString(f.pair())
	if f.Index != nil {
		fmt.Fprintf(&b, " at %v", f.Index)
	}
	diff := math.Abs(f.Analytical - f.Numerical)
	switch f.Kind {
	case Nondeterministic:
		fmt.Fprintf(&b, ": first %.10g, second %.10g (|diff| %.3g > NondetTol %.3g)", f.Numerical, f.Analytical, diff, f.Tolerance)
	case SurrogateMismatch:
		fmt.Fprintf(&b, ": surrogate %.10g, tape %.10g (|diff| %.3g > tolerance %.3g", f.Numerical, f.Analytical, diff, f.Tolerance)
		if f.Atol == 0 && f.Rtol == 0 {
			b.WriteString(": exact comparison)")
		} else {
			fmt.Fprintf(&b, " = atol %.3g + rtol %.3g·|surrogate|)", f.Atol, f.Rtol)
		}
	default:
		fmt.Fprintf(&b, ": numerical %.10g, analytical %.10g (|diff| %.3g > tolerance %.3g = atol %.3g + rtol %.3g·|numerical|)",
			f.Numerical, f.Analytical, diff, f.Tolerance, f.Atol, f.Rtol)
	}
	if f.Total > 1 {
		fmt.Fprintf(&b, "; %d of %d elements out of tolerance", f.Bad, f.Total)
	}
	return b.String()
}

func (f *Failure) pair() string {
	if f.Kind == Nondeterministic && f.Where == "outputs" {
		if f.Order == 2 {
			return fmt.Sprintf("the gradient of input %d", f.Output)
		}
		return fmt.Sprintf("output %d", f.Output)
	}
	var of string
	switch {
	case f.Output < 0:
		of = "all checked outputs"
	case f.Order == 2:
		of = fmt.Sprintf("the gradient of input %d", f.Output)
	default:
		of = fmt.Sprintf("output %d", f.Output)
	}
	wrt := fmt.Sprintf("input %d", f.Input)
	if f.Upstream {
		wrt = fmt.Sprintf("the upstream gradient of output %d", f.Input)
	}
	return "d(" + of + ")/d(" + wrt + ")"
}

// fn is the internal form of a checked function: errors explicit.
type fn func(t *autodiff.Tape, in []autodiff.Value) ([]autodiff.Value, error)

func wrap(f Func) fn {
	return func(t *autodiff.Tape, in []autodiff.Value) ([]autodiff.Value, error) {
		return f(t, in), nil
	}
}

// Op returns a Func that applies the registered op name with attrs to all
// its inputs (a variadic op such as AddN takes them all).
func Op(name string, attrs any) Func {
	return func(t *autodiff.Tape, in []autodiff.Value) []autodiff.Value {
		return t.Apply(name, attrs, in...)
	}
}

// Check compares the tape's first-order gradients of f at inputs with
// central finite differences; see the package documentation. It returns
// nil if they agree, a *Failure if they do not, and any other error if f
// cannot be evaluated or differentiated.
func Check(f Func, inputs []*tensor.Dense, opts Options) error {
	if f == nil {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: nil function")
	}
	c, err := newChecker(wrap(f), inputs, opts, 1)
	if err != nil {
		return err
	}
	return c.check()
}

// CheckSecondOrder checks the gradients of the first-order gradients of f
// (gradgradcheck): with random upstream gradients u for f's checked
// outputs, it applies the first-order check to
//
//	g(inputs, u) = Tape.Grad(outputs, inputs, u, GradOpts{CreateGraph: true})
//
// with respect to the checked inputs and u. A Failure has Order 2; see
// its Output, Input and Upstream fields.
func CheckSecondOrder(f Func, inputs []*tensor.Dense, opts Options) error {
	if f == nil {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: nil function")
	}
	inner := wrap(f)
	c1, err := newChecker(inner, inputs, opts, 1)
	if err != nil {
		return err
	}
	u := c1.upstreams()
	n := len(c1.in)
	ins := make([]*tensor.Dense, 0, n+len(u))
	ins = append(ins, c1.in...)
	for k, i := range c1.outs {
		d, err := c1.upstreamTensor(i, u[k])
		if err != nil {
			return err
		}
		ins = append(ins, d)
	}
	g := func(t *autodiff.Tape, in []autodiff.Value) ([]autodiff.Value, error) {
		outs, err := callFunc(inner, t, in[:n])
		if err != nil {
			return nil, err
		}
		targets := make([]autodiff.Value, len(c1.outs))
		for k, i := range c1.outs {
			if i >= len(outs) {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: the function returned %d outputs, then %d", c1.nOut, len(outs))
			}
			targets[k] = outs[i]
		}
		sources := make([]autodiff.Value, len(c1.wrt))
		for k, j := range c1.wrt {
			sources[k] = in[j]
		}
		return t.Grad(targets, sources, in[n:], autodiff.GradOpts{CreateGraph: true})
	}
	o2 := opts
	o2.Wrt = append([]int(nil), c1.wrt...)
	for k := range c1.outs {
		o2.Wrt = append(o2.Wrt, n+k)
	}
	o2.Outputs = nil
	o2.Seed = opts.Seed ^ 0x5eed2
	c2, err := newChecker(g, ins, o2, 2)
	if err != nil {
		return err
	}
	err = c2.check()
	var fl *Failure
	if errors.As(err, &fl) {
		// Translate indices of g back to f's terms.
		// g's output w is the gradient of f's checked input c1.wrt[w].
		if fl.Output >= 0 && fl.Output < len(c1.wrt) {
			fl.Output = c1.wrt[fl.Output]
		}
		if fl.Input >= n {
			fl.Upstream = true
			fl.Input = c1.outs[fl.Input-n]
		}
	}
	return err
}

// CheckSample checks op def on sample s: first order, then second order
// unless s.NoSecondOrder gives a reason not to. The sample's Atol, Rtol,
// Wrt and Outputs override opts (see Options.ForSample). Errors name the
// op and the sample and wrap the *Failure.
func CheckSample(def *registry.OpDef, s registry.Sample, opts Options) error {
	if def == nil {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: nil op definition")
	}
	o := opts.ForSample(s)
	f := Op(def.Name, s.Attrs)
	if err := Check(f, s.Inputs, o); err != nil {
		return fmt.Errorf("%s sample %q: %w", def.Name, s.Name, err)
	}
	if s.NoSecondOrder == "" {
		if err := CheckSecondOrder(f, s.Inputs, o); err != nil {
			return fmt.Errorf("%s sample %q: %w", def.Name, s.Name, err)
		}
	}
	return nil
}

// OpSamples runs def's sample generator with a source seeded by seed and
// returns at most max samples (all if max <= 0), spread evenly over the
// generated list so that the kept ones still vary. It returns nil for an
// op without a generator, and an error if the generator panics.
func OpSamples(def *registry.OpDef, seed int64, max int) (out []registry.Sample, err error) {
	if def == nil || def.Samples == nil {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, registry.Errorf(registry.ErrInternal, "%s: sample generator panicked: %v", def.Name, r)
		}
	}()
	all := def.Samples(rand.New(rand.NewSource(seed)))
	if max <= 0 || len(all) <= max {
		return all, nil
	}
	out = make([]registry.Sample, max)
	for k := range out {
		out[k] = all[k*len(all)/max]
	}
	return out, nil
}

// ---------------------------------------------------------------------
// The checker.

type checker struct {
	f     fn
	in    []*tensor.Dense // private contiguous copies; perturbed in place
	wrt   []int           // checked inputs
	outs  []int           // checked outputs
	nOut  int
	shape []tensor.Shape // of every output
	dtype []tensor.Dtype // of every output

	eps, atol, rtol, nondet float64
	fast                    bool
	seed                    int64
	rng                     *rand.Rand
	order                   int
}

func isFloat(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// newChecker validates and copies the inputs, evaluates f once and
// resolves the options.
func newChecker(f fn, inputs []*tensor.Dense, opts Options, order int) (*checker, error) {
	if len(inputs) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: no inputs")
	}
	c := &checker{f: f, order: order, fast: opts.Fast, seed: opts.Seed, nondet: opts.NondetTol}
	if opts.Eps < 0 || opts.Atol < 0 || opts.Rtol < 0 || opts.NondetTol < 0 ||
		math.IsNaN(opts.Eps+opts.Atol+opts.Rtol+opts.NondetTol) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: Eps, Atol, Rtol and NondetTol must be non-negative numbers")
	}
	f32 := false
	c.in = make([]*tensor.Dense, len(inputs))
	for j, d := range inputs {
		if d == nil {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: input %d is nil", j)
		}
		cp, err := tensorx.Clone(d)
		if err != nil {
			return nil, fmt.Errorf("gradcheck: input %d: %w", j, err)
		}
		c.in[j] = cp
	}
	if opts.Wrt == nil {
		for j, d := range c.in {
			if isFloat(d.Dtype()) {
				c.wrt = append(c.wrt, j)
			}
		}
	} else {
		seen := map[int]bool{}
		for _, j := range opts.Wrt {
			if j < 0 || j >= len(c.in) {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: Wrt index %d out of range [0, %d)", j, len(c.in))
			}
			if !isFloat(c.in[j].Dtype()) {
				return nil, registry.Errorf(registry.ErrDtype, "gradcheck: Wrt lists input %d of dtype %v, which is not differentiable", j, c.in[j].Dtype())
			}
			if seen[j] {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: Wrt lists input %d twice", j)
			}
			seen[j] = true
			c.wrt = append(c.wrt, j)
		}
	}
	if len(c.wrt) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: no floating input to check")
	}
	for _, j := range c.wrt {
		if c.in[j].Dtype() == tensor.Float32 {
			if !opts.AllowFloat32 {
				return nil, registry.Errorf(registry.ErrDtype, "gradcheck: input %d is float32; finite differences need float64 (set AllowFloat32 to check float32 with looser tolerances)", j)
			}
			f32 = true
		}
	}
	// Base evaluation: output count, shapes and dtypes.
	tp, _, outs, err := c.run()
	if err != nil {
		return nil, err
	}
	c.nOut = len(outs)
	c.shape = make([]tensor.Shape, c.nOut)
	c.dtype = make([]tensor.Dtype, c.nOut)
	for i, v := range outs {
		c.shape[i] = v.Shape().Clone()
		c.dtype[i] = v.Dtype()
	}
	tp.Release()
	if opts.Outputs == nil {
		for i, dt := range c.dtype {
			if isFloat(dt) {
				c.outs = append(c.outs, i)
			}
		}
	} else {
		seen := map[int]bool{}
		for _, i := range opts.Outputs {
			if i < 0 || i >= c.nOut {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: Outputs index %d out of range [0, %d)", i, c.nOut)
			}
			if !isFloat(c.dtype[i]) {
				return nil, registry.Errorf(registry.ErrDtype, "gradcheck: Outputs lists output %d of dtype %v, which is not differentiable", i, c.dtype[i])
			}
			if seen[i] {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: Outputs lists output %d twice", i)
			}
			seen[i] = true
			c.outs = append(c.outs, i)
		}
	}
	if len(c.outs) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: the function has no floating output to check")
	}
	for _, i := range c.outs {
		if c.dtype[i] == tensor.Float32 {
			if !opts.AllowFloat32 {
				return nil, registry.Errorf(registry.ErrDtype, "gradcheck: output %d is float32; finite differences need float64 (set AllowFloat32 to check float32 with looser tolerances)", i)
			}
			f32 = true
		}
	}
	c.eps, c.atol, c.rtol = DefaultEps, DefaultAtol, DefaultRtol
	if f32 {
		c.eps, c.atol, c.rtol = Float32Eps, Float32Atol, Float32Rtol
	}
	if opts.Eps > 0 {
		c.eps = opts.Eps
	}
	if opts.Atol > 0 {
		c.atol = opts.Atol
	}
	if opts.Rtol > 0 {
		c.rtol = opts.Rtol
	}
	c.rng = rand.New(rand.NewSource(opts.Seed))
	return c, nil
}

// callFunc calls f, turning a panic and the tape's error into errors and
// validating the returned values.
func callFunc(f fn, t *autodiff.Tape, in []autodiff.Value) (outs []autodiff.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, registry.Errorf(registry.ErrInternal, "gradcheck: the function panicked: %v", r)
		}
	}()
	outs, err = f(t, in)
	if err == nil {
		err = t.Err()
	}
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: the function returned no outputs")
	}
	for i, v := range outs {
		if err := v.Err(); err != nil {
			return nil, fmt.Errorf("gradcheck: output %d: %w", i, err)
		}
		if v.Tape() != t {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: output %d belongs to another tape", i)
		}
	}
	return outs, nil
}

// run evaluates f on a fresh tape seeded with c.seed (so random ops draw
// the same numbers at every evaluation). Floating inputs are watched.
func (c *checker) run() (*autodiff.Tape, []autodiff.Value, []autodiff.Value, error) {
	tp := autodiff.NewTape(autodiff.Seed(c.seed))
	vals := make([]autodiff.Value, len(c.in))
	for j, d := range c.in {
		if isFloat(d.Dtype()) {
			vals[j] = tp.Watch(d)
		} else {
			vals[j] = tp.Constant(d)
		}
	}
	if err := tp.Err(); err != nil {
		return nil, nil, nil, err
	}
	outs, err := callFunc(c.f, tp, vals)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.shape != nil {
		if len(outs) != c.nOut {
			return nil, nil, nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: the function returned %d outputs, then %d", c.nOut, len(outs))
		}
		for i, v := range outs {
			if v.Dtype() != c.dtype[i] || !tensorx.SameShape(v.Shape(), c.shape[i]) {
				return nil, nil, nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: output %d changed from %v %v to %v %v between evaluations", i, c.dtype[i], c.shape[i], v.Dtype(), v.Shape())
			}
		}
	}
	return tp, vals, outs, nil
}

// evalOutputs evaluates f and returns the checked outputs as float64.
func (c *checker) evalOutputs() ([][]float64, error) {
	tp, _, outs, err := c.run()
	if err != nil {
		return nil, err
	}
	defer tp.Release()
	res := make([][]float64, len(c.outs))
	for k, i := range c.outs {
		if res[k], err = read(outs[i]); err != nil {
			return nil, fmt.Errorf("gradcheck: output %d: %w", i, err)
		}
	}
	return res, nil
}

func read(v autodiff.Value) ([]float64, error) {
	d, err := v.Data()
	if err != nil {
		return nil, err
	}
	return tensorx.Float64s(d)
}

// upstreams draws one random upstream gradient per checked output,
// rounded to the output's dtype.
func (c *checker) upstreams() [][]float64 {
	u := make([][]float64, len(c.outs))
	for k, i := range c.outs {
		n := numel(c.shape[i])
		u[k] = make([]float64, n)
		for e := range u[k] {
			x := c.rng.NormFloat64()
			if c.dtype[i] == tensor.Float32 {
				x = float64(float32(x))
			}
			u[k][e] = x
		}
	}
	return u
}

func numel(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// upstreamTensor makes a tensor of output i's dtype and shape holding u.
func (c *checker) upstreamTensor(i int, u []float64) (*tensor.Dense, error) {
	return makeTensor(c.dtype[i], c.shape[i], u)
}

func makeTensor(dt tensor.Dtype, shape []int, v []float64) (*tensor.Dense, error) {
	if dt == tensor.Float32 {
		s := make([]float32, len(v))
		for e, x := range v {
			s[e] = float32(x)
		}
		return tensorx.New(shape, s)
	}
	return tensorx.New(shape, append([]float64(nil), v...))
}

// analytical returns the tape's vector-Jacobian products: per[k][w] is the
// gradient of checked output k (upstream u[k]) with respect to checked
// input w; joint[w] is the gradient of all checked outputs together.
func (c *checker) analytical(u [][]float64) (per [][][]float64, joint [][]float64, err error) {
	tp, vals, outs, err := c.run()
	if err != nil {
		return nil, nil, err
	}
	defer tp.Release()
	srcs := make([]autodiff.Value, len(c.wrt))
	for w, j := range c.wrt {
		srcs[w] = vals[j]
	}
	ups := make([]autodiff.Value, len(c.outs))
	targets := make([]autodiff.Value, len(c.outs))
	for k, i := range c.outs {
		d, err := c.upstreamTensor(i, u[k])
		if err != nil {
			return nil, nil, err
		}
		ups[k] = tp.Constant(d)
		targets[k] = outs[i]
	}
	grads := func(targets, ups []autodiff.Value) ([][]float64, error) {
		g, err := tp.Grad(targets, srcs, ups, autodiff.GradOpts{})
		if err != nil {
			return nil, err
		}
		res := make([][]float64, len(g))
		for w := range g {
			if res[w], err = read(g[w]); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	per = make([][][]float64, len(c.outs))
	for k := range c.outs {
		if per[k], err = grads(targets[k:k+1], ups[k:k+1]); err != nil {
			return nil, nil, err
		}
	}
	if len(c.outs) > 1 {
		if joint, err = grads(targets, ups); err != nil {
			return nil, nil, err
		}
	}
	return per, joint, nil
}

// get and set access element e of a float tensor as float64; set rounds
// to the tensor's dtype and returns the value actually stored.
func get(d *tensor.Dense, e int) float64 {
	if d.Dtype() == tensor.Float32 {
		return float64(d.Float32s()[e])
	}
	return d.Float64s()[e]
}

func set(d *tensor.Dense, e int, x float64) float64 {
	if d.Dtype() == tensor.Float32 {
		v := float32(x)
		d.Float32s()[e] = v
		return float64(v)
	}
	d.Float64s()[e] = x
	return x
}

func dotDiff(u, a, b []float64) float64 {
	var s float64
	for e := range u {
		s += u[e] * (a[e] - b[e])
	}
	return s
}

// numerical returns the finite-difference vector-Jacobian products,
// indexed like analytical's per.
func (c *checker) numerical(u [][]float64) ([][][]float64, error) {
	num := make([][][]float64, len(c.outs))
	for k := range num {
		num[k] = make([][]float64, len(c.wrt))
	}
	for w, j := range c.wrt {
		x := c.in[j]
		n := tensorx.Len(x)
		for k := range c.outs {
			num[k][w] = make([]float64, n)
		}
		for e := 0; e < n; e++ {
			orig := get(x, e)
			xp := set(x, e, orig+c.eps)
			fp, err := c.evalOutputs()
			if err != nil {
				set(x, e, orig)
				return nil, err
			}
			xm := set(x, e, orig-c.eps)
			fm, err := c.evalOutputs()
			set(x, e, orig)
			if err != nil {
				return nil, err
			}
			h := xp - xm
			if h == 0 {
				return nil, registry.Errorf(registry.ErrInvalidArgument, "gradcheck: step Eps=%g vanishes at input %d element %d (value %g)", c.eps, j, e, orig)
			}
			for k := range c.outs {
				num[k][w][e] = dotDiff(u[k], fp[k], fm[k]) / h
			}
		}
	}
	return num, nil
}

// compare finds the worst element of analytical a against reference r.
func compare(a, r []float64, atol, rtol float64) (worst, bad int, excess float64) {
	worst, excess = -1, -1
	for e := range r {
		tol := atol + rtol*math.Abs(r[e])
		d := math.Abs(a[e] - r[e])
		var x float64
		switch {
		case math.IsNaN(d) || math.IsInf(d, 0):
			if a[e] == r[e] { // the same infinity
				continue
			}
			x = math.Inf(1)
		case tol > 0:
			x = d / tol
		case d > 0:
			x = math.Inf(1)
		}
		if d > tol || x == math.Inf(1) {
			bad++
		}
		if x > excess {
			worst, excess = e, x
		}
	}
	return worst, bad, excess
}

func unravel(e int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = e % shape[d]
			e /= shape[d]
		}
	}
	return idx
}

// check runs the whole comparison.
func (c *checker) check() error {
	u := c.upstreams()
	if err := c.checkDeterminism(u); err != nil {
		return err
	}
	per, joint, err := c.analytical(u)
	if err != nil {
		return err
	}
	return c.verify(u, per, joint)
}

// verify compares the vector-Jacobian products per and joint (see
// analytical) with finite differences of c's function.
func (c *checker) verify(u [][]float64, per [][][]float64, joint [][]float64) error {
	if c.fast {
		return c.checkFast(u, per, joint)
	}
	num, err := c.numerical(u)
	if err != nil {
		return err
	}
	for k, i := range c.outs {
		for w, j := range c.wrt {
			if fl := c.failure(per[k][w], num[k][w], i, j); fl != nil {
				return fl
			}
		}
	}
	if joint != nil {
		for w, j := range c.wrt {
			sum := make([]float64, len(joint[w]))
			for k := range c.outs {
				for e, v := range num[k][w] {
					sum[e] += v
				}
			}
			if fl := c.failure(joint[w], sum, -1, j); fl != nil {
				return fl
			}
		}
	}
	return nil
}

func (c *checker) failure(a, r []float64, out, in int) *Failure {
	worst, bad, _ := compare(a, r, c.atol, c.rtol)
	if bad == 0 {
		return nil
	}
	return &Failure{Kind: Mismatch, Order: c.order, Output: out, Input: in,
		Index: unravel(worst, c.in[in].Shape()), Numerical: r[worst], Analytical: a[worst],
		Atol: c.atol, Rtol: c.rtol, Tolerance: c.atol + c.rtol*math.Abs(r[worst]),
		Bad: bad, Total: len(r)}
}

// checkDeterminism evaluates f and its gradients twice and compares.
func (c *checker) checkDeterminism(u [][]float64) error {
	o1, err := c.evalOutputs()
	if err != nil {
		return err
	}
	o2, err := c.evalOutputs()
	if err != nil {
		return err
	}
	for k, i := range c.outs {
		if fl := c.nondetFailure(o1[k], o2[k], "outputs", i, -1, c.shape[i]); fl != nil {
			return fl
		}
	}
	p1, j1, err := c.analytical(u)
	if err != nil {
		return err
	}
	p2, j2, err := c.analytical(u)
	if err != nil {
		return err
	}
	for k, i := range c.outs {
		for w, j := range c.wrt {
			if fl := c.nondetFailure(p1[k][w], p2[k][w], "gradients", i, j, c.in[j].Shape()); fl != nil {
				return fl
			}
		}
	}
	for w, j := range c.wrt {
		if j1 != nil {
			if fl := c.nondetFailure(j1[w], j2[w], "gradients", -1, j, c.in[j].Shape()); fl != nil {
				return fl
			}
		}
	}
	return nil
}

func (c *checker) nondetFailure(a, b []float64, where string, out, in int, shape []int) *Failure {
	worst, bad := -1, 0
	maxd := -1.0
	for e := range a {
		d := math.Abs(a[e] - b[e])
		same := a[e] == b[e] || (math.IsNaN(a[e]) && math.IsNaN(b[e]))
		if same {
			continue
		}
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > c.nondet {
			bad++
		}
		if d > maxd {
			worst, maxd = e, d
		}
	}
	if bad == 0 {
		return nil
	}
	return &Failure{Kind: Nondeterministic, Order: c.order, Where: where, Output: out, Input: in,
		Index: unravel(worst, shape), Numerical: a[worst], Analytical: b[worst],
		Tolerance: c.nondet, Bad: bad, Total: len(a)}
}

// checkFast compares random projections uᵀ·J·v.
func (c *checker) checkFast(u [][]float64, per [][][]float64, joint [][]float64) error {
	for w, j := range c.wrt {
		x := c.in[j]
		n := tensorx.Len(x)
		v := make([]float64, n)
		var norm float64
		for e := range v {
			v[e] = c.rng.NormFloat64()
			norm += v[e] * v[e]
		}
		norm = math.Sqrt(norm)
		if norm == 0 {
			norm = 1
		}
		orig := make([]float64, n)
		d := make([]float64, n)
		for e := range v {
			v[e] /= norm
			orig[e] = get(x, e)
		}
		restore := func() {
			for e, o := range orig {
				set(x, e, o)
			}
		}
		for e := range v {
			d[e] = set(x, e, orig[e]+c.eps*v[e])
		}
		fp, err := c.evalOutputs()
		if err != nil {
			restore()
			return err
		}
		for e := range v {
			d[e] -= set(x, e, orig[e]-c.eps*v[e])
		}
		fm, err := c.evalOutputs()
		restore()
		if err != nil {
			return err
		}
		h := 2 * c.eps
		var numSum float64
		for k, i := range c.outs {
			num := dotDiff(u[k], fp[k], fm[k]) / h
			var ana float64
			for e, g := range per[k][w] {
				ana += g * d[e]
			}
			ana /= h
			numSum += num
			if fl := c.fastFailure(ana, num, i, j); fl != nil {
				return fl
			}
		}
		if joint != nil {
			var ana float64
			for e, g := range joint[w] {
				ana += g * d[e]
			}
			if fl := c.fastFailure(ana/h, numSum, -1, j); fl != nil {
				return fl
			}
		}
	}
	return nil
}

func (c *checker) fastFailure(ana, num float64, out, in int) *Failure {
	if _, bad, _ := compare([]float64{ana}, []float64{num}, c.atol, c.rtol); bad == 0 {
		return nil
	}
	return &Failure{Kind: Mismatch, Order: c.order, Fast: true, Output: out, Input: in,
		Numerical: num, Analytical: ana, Atol: c.atol, Rtol: c.rtol,
		Tolerance: c.atol + c.rtol*math.Abs(num), Bad: 1, Total: 1}
}
