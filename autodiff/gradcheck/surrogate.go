package gradcheck

import (
	"errors"
	"fmt"
	"math"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// CheckSurrogate compares the tape's gradients of f with rule, for
// gradients that are not derivatives of f and that finite differences
// cannot check: straight-through estimators (fake quantisation passes the
// upstream gradient inside the clamping range and zero outside, although
// the rounded function is piecewise constant), clipped or smoothed
// surrogate gradients.
//
// With random upstream gradients u for the checked outputs (seeded by
// opts.Seed), it runs one backward pass of all checked outputs together
// and compares the gradient of every checked input with rule(inputs, u).
// The comparison is exact when opts.Atol and opts.Rtol are both zero
// (the default here: a surrogate rule is usually exact), and otherwise
// |tape − rule| <= Atol + Rtol·|rule|.
//
// No finite differences are taken, so float32 inputs and outputs are
// accepted without AllowFloat32; u is drawn in the outputs' dtypes.
// A mismatch is a *Failure of Kind SurrogateMismatch with Output −1
// (all checked outputs) and Numerical holding the rule's value.
//
// rule receives private copies of f's inputs and one upstream gradient
// per output of f (nil for outputs that are not floating, zeros for
// floating outputs that are not checked), and returns one gradient per
// input, of the input's shape and any float dtype; nil means zero, and
// entries for inputs that are not checked are ignored.
func CheckSurrogate(f Func, inputs []*tensor.Dense, rule func(inputs, upstreams []*tensor.Dense) ([]*tensor.Dense, error), opts Options) error {
	if f == nil || rule == nil {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: CheckSurrogate needs a function and a rule")
	}
	o := opts
	o.AllowFloat32 = true
	c, err := newChecker(wrap(f), inputs, o, 1)
	if err != nil {
		return err
	}
	c.atol, c.rtol = opts.Atol, opts.Rtol
	u := c.upstreams()

	// The tape's gradients.
	tp, vals, outs, err := c.run()
	if err != nil {
		return err
	}
	defer tp.Release()
	srcs := make([]autodiff.Value, len(c.wrt))
	for w, j := range c.wrt {
		srcs[w] = vals[j]
	}
	targets := make([]autodiff.Value, len(c.outs))
	ups := make([]autodiff.Value, len(c.outs))
	upT := make([]*tensor.Dense, c.nOut) // for the rule
	for k, i := range c.outs {
		d, err := c.upstreamTensor(i, u[k])
		if err != nil {
			return err
		}
		targets[k], ups[k] = outs[i], tp.Constant(d)
		upT[i] = d
	}
	for i := range upT {
		if upT[i] == nil && isFloat(c.dtype[i]) {
			if upT[i], err = tensorx.Zeros(c.dtype[i], c.shape[i]); err != nil {
				return err
			}
		}
	}
	grads, err := tp.Grad(targets, srcs, ups, autodiff.GradOpts{})
	if err != nil {
		return err
	}

	// The rule's gradients, on private copies.
	inCopy := make([]*tensor.Dense, len(c.in))
	for j, d := range c.in {
		if inCopy[j], err = tensorx.Clone(d); err != nil {
			return err
		}
	}
	upCopy := make([]*tensor.Dense, len(upT))
	for i, d := range upT {
		if d != nil {
			if upCopy[i], err = tensorx.Clone(d); err != nil {
				return err
			}
		}
	}
	want, err := callRule(rule, inCopy, upCopy)
	if err != nil {
		return err
	}
	if len(want) != len(c.in) {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: the surrogate rule returned %d gradients for %d inputs", len(want), len(c.in))
	}
	for w, j := range c.wrt {
		got, err := read(grads[w])
		if err != nil {
			return err
		}
		var ref []float64
		if want[j] == nil {
			ref = make([]float64, len(got))
		} else {
			wd, err := tensorx.Contiguous(want[j])
			if err != nil {
				return fmt.Errorf("gradcheck: surrogate rule, gradient %d: %w", j, err)
			}
			if !tensorx.SameShape(wd.Shape(), c.in[j].Shape()) || !isFloat(wd.Dtype()) {
				return registry.Errorf(registry.ErrShape, "gradcheck: the surrogate rule's gradient %d is %v %v, want a float tensor of shape %v", j, wd.Dtype(), wd.Shape(), c.in[j].Shape())
			}
			if ref, err = tensorx.Float64s(wd); err != nil {
				return err
			}
		}
		if fl := c.surrogateFailure(got, ref, j); fl != nil {
			return fl
		}
	}
	return nil
}

func callRule(rule func(inputs, upstreams []*tensor.Dense) ([]*tensor.Dense, error), in, up []*tensor.Dense) (out []*tensor.Dense, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, registry.Errorf(registry.ErrInternal, "gradcheck: the surrogate rule panicked: %v", r)
		}
	}()
	out, err = rule(in, up)
	if err != nil {
		return nil, fmt.Errorf("gradcheck: surrogate rule: %w", err)
	}
	return out, nil
}

func (c *checker) surrogateFailure(got, ref []float64, in int) *Failure {
	var worst, bad int
	var fl *Failure
	if c.atol == 0 && c.rtol == 0 {
		worst = -1
		maxd := -1.0
		for e := range ref {
			if got[e] == ref[e] || (math.IsNaN(got[e]) && math.IsNaN(ref[e])) {
				continue
			}
			bad++
			d := math.Abs(got[e] - ref[e])
			if math.IsNaN(d) {
				d = math.Inf(1)
			}
			if d > maxd {
				worst, maxd = e, d
			}
		}
	} else {
		worst, bad, _ = compare(got, ref, c.atol, c.rtol)
	}
	if bad == 0 {
		return nil
	}
	fl = &Failure{Kind: SurrogateMismatch, Order: 1, Output: -1, Input: in,
		Index: unravel(worst, c.in[in].Shape()), Numerical: ref[worst], Analytical: got[worst],
		Atol: c.atol, Rtol: c.rtol, Tolerance: c.atol + c.rtol*math.Abs(ref[worst]),
		Bad: bad, Total: len(ref)}
	return fl
}

// CheckSurrogateFunc compares the tape's gradients of f with the
// finite-difference gradients of surrogate, a function whose true
// derivative the surrogate gradient of f is meant to be: for fake
// quantisation, whose straight-through gradient is the derivative of
// clipping, surrogate is the clip function. f and surrogate must return
// outputs of the same dtypes and shapes.
//
// Everything else is as in Check (random upstream gradients, full or Fast
// mode, tolerances, Wrt and Outputs, AllowFloat32); a mismatch is a
// *Failure of Kind SurrogateMismatch whose Numerical value comes from
// surrogate and Analytical value from f's tape.
func CheckSurrogateFunc(f, surrogate Func, inputs []*tensor.Dense, opts Options) error {
	if f == nil || surrogate == nil {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: CheckSurrogateFunc needs two functions")
	}
	cf, err := newChecker(wrap(f), inputs, opts, 1)
	if err != nil {
		return err
	}
	cs, err := newChecker(wrap(surrogate), inputs, opts, 1)
	if err != nil {
		return fmt.Errorf("gradcheck: surrogate: %w", err)
	}
	if cs.nOut != cf.nOut {
		return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: the function has %d outputs, the surrogate %d", cf.nOut, cs.nOut)
	}
	for i := range cf.shape {
		if cf.dtype[i] != cs.dtype[i] || !tensorx.SameShape(cf.shape[i], cs.shape[i]) {
			return registry.Errorf(registry.ErrInvalidArgument, "gradcheck: output %d is %v %v, the surrogate's is %v %v", i, cf.dtype[i], cf.shape[i], cs.dtype[i], cs.shape[i])
		}
	}
	u := cf.upstreams()
	per, joint, err := cf.analytical(u)
	if err != nil {
		return err
	}
	cs.rng = rand.New(rand.NewSource(opts.Seed ^ 0x5a77))
	err = cs.verify(u, per, joint)
	var fl *Failure
	if errors.As(err, &fl) {
		fl.Kind = SurrogateMismatch
	}
	return err
}
