package golden

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/registry"
)

// Options configures Run.
type Options struct {
	// Threads is the kernels' thread budget; 0 means GOMAXPROCS.
	Threads int
}

// Result is the outcome of one case.
type Result struct {
	// Case is the case that was run.
	Case *Case
	// Failures lists what went wrong, one line each; the case passed if
	// there are none.
	Failures []string
	// Warnings lists non-fatal findings: an error message without the
	// case's substring, ignored keys or upstream gradients.
	Warnings []string
	// Stack is the stack of a recovered panic, or "".
	Stack string
}

// Passed reports whether the case passed.
func (r *Result) Passed() bool { return len(r.Failures) == 0 }

func (r *Result) fail(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func (r *Result) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// Run checks one case against the registry on a fresh tape: the op's
// outputs (or its refusal, for an error case) and, if the case has a grad
// check, the gradients of its registered gradient function. It never
// panics: a panic is recovered and reported as a failure.
//
// Float inputs are watched (tape.Watch) when the case checks their
// gradient and constants otherwise. An upstream gradient given as null is
// a zero tensor of the output's shape and dtype; integer and bool outputs
// are not gradient targets.
func Run(c *Case, opts Options) (res Result) {
	res.Case = c
	res.Warnings = append(res.Warnings, c.Warnings...)
	if c.Err != nil {
		res.fail("malformed case: %v", c.Err)
		return res
	}
	defer func() {
		if p := recover(); p != nil {
			res.fail("panic: %v", p)
			res.Stack = string(debug.Stack())
		}
	}()
	def, err := registry.Lookup(c.Op)
	if err != nil {
		res.fail("op %q is not registered", c.Op)
		return res
	}
	attrs, err := def.ParseAttrsExact(c.Attrs)
	if err != nil {
		if c.WantError {
			checkRefusal(&res, c, err)
		} else {
			res.fail("attrs: %v", err)
		}
		return res
	}

	topts := []autodiff.Option{}
	if opts.Threads > 0 {
		topts = append(topts, autodiff.Threads(opts.Threads))
	}
	tp := autodiff.NewTape(topts...)
	defer tp.Release()

	ins := make([]autodiff.Value, len(c.Inputs))
	var sources []autodiff.Value
	var srcIdx []int
	for j, in := range c.Inputs {
		d, err := in.Dense()
		if err != nil {
			res.fail("input %d: %v", j, err)
			return res
		}
		if c.Grad != nil && c.Grad.Expected[j] != nil && in.IsFloat() {
			ins[j] = tp.Watch(d)
			sources = append(sources, ins[j])
			srcIdx = append(srcIdx, j)
		} else {
			ins[j] = tp.Constant(d)
		}
	}
	if err := tp.Err(); err != nil {
		res.fail("building inputs: %v", err)
		return res
	}

	outs := tp.Apply(c.Op, attrs, ins...)
	err = tp.Err()
	if c.WantError {
		if err != nil {
			checkRefusal(&res, c, err)
			return res
		}
		res.fail("the op must refuse these inputs/attrs (error containing %q), but it returned %s", c.Error, describeValues(outs))
		return res
	}
	if err != nil {
		res.fail("the op failed: %v", cause(err))
		return res
	}

	if len(outs) != len(c.Outputs) {
		res.fail("the op has %s %s, the case lists %d", plural(len(outs), "output"), argNames(def.Outputs), len(c.Outputs))
		return res
	}
	for i, want := range c.Outputs {
		got, err := outs[i].Data()
		if err != nil {
			res.fail("output %d%s: %v", i, label(want, def.Outputs, i, len(c.Outputs)), err)
			continue
		}
		tol := c.Tol(want.Dtype)
		if msg := Compare(want, got, tol); msg != "" {
			res.fail("output %d%s: %s", i, label(want, def.Outputs, i, len(c.Outputs)), msg)
		}
	}

	if c.Grad != nil {
		checkGrad(&res, c, def, tp, outs, sources, srcIdx)
	}
	return res
}

// checkRefusal judges the error an error case got: an internal error (a
// kernel panic or broken contract) fails, a message without the case's
// substring is a warning.
func checkRefusal(res *Result, c *Case, err error) {
	if errors.Is(err, registry.ErrInternal) {
		res.fail("the op must refuse these inputs/attrs with an error, but it broke (panic or internal error): %v", cause(err))
		return
	}
	if !strings.Contains(err.Error(), c.Error) {
		res.warn("error message %q does not contain %q", cause(err).Error(), c.Error)
	}
}

func checkGrad(res *Result, c *Case, def *registry.OpDef, tp *autodiff.Tape, outs, sources []autodiff.Value, srcIdx []int) {
	var targets, ups []autodiff.Value
	for i, o := range outs {
		dt := o.Dtype()
		u := c.Grad.Upstream[i]
		if !isFloat(dt) {
			if u != nil {
				res.warn("grad: upstream[%d] ignored: output %d is %v, and only float outputs carry gradients", i, i, dt)
			}
			continue
		}
		targets = append(targets, o)
		if u == nil {
			ups = append(ups, tp.Full(dt, o.Shape(), 0))
			continue
		}
		d, err := u.Dense()
		if err != nil {
			res.fail("grad: upstream[%d]: %v", i, err)
			return
		}
		ups = append(ups, tp.Constant(d))
	}
	if len(sources) == 0 {
		res.warn("grad: the case checks no gradient (every expected entry is null)")
		return
	}
	grads, err := tp.Grad(targets, sources, ups, autodiff.GradOpts{})
	if err != nil {
		res.fail("grad: %v", cause(err))
		return
	}
	for k, j := range srcIdx {
		want := c.Grad.Expected[j]
		got, err := grads[k].Data()
		if err != nil {
			res.fail("grad wrt input %d%s: %v", j, label(c.Inputs[j], def.Inputs, j, len(c.Inputs)), err)
			continue
		}
		if msg := Compare(want, got, c.Tol(want.Dtype)); msg != "" {
			res.fail("grad wrt input %d%s: %s", j, label(c.Inputs[j], def.Inputs, j, len(c.Inputs)), msg)
		}
	}
}

// cause strips the tape's OpError wrapper (which names the runner's own
// source line) down to the op's message, keeping the phase.
func cause(err error) error {
	var oe *autodiff.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		if oe.Phase == "backward" && oe.Op != "" {
			return fmt.Errorf("%s (backward): %w", oe.Op, oe.Err)
		}
		return oe.Err
	}
	return err
}

// label names argument i of n: the case's tensor name, else the op's (a
// variadic argument's list element with its index).
func label(t *Tensor, args []registry.Arg, i, n int) string {
	if t != nil && t.Name != "" {
		return " (" + t.Name + ")"
	}
	for v, a := range args {
		if !a.Variadic || i < v {
			continue
		}
		extra := n - len(args)
		if i <= v+extra {
			return fmt.Sprintf(" (%s[%d])", a.Name, i-v)
		}
		i -= extra
		break
	}
	if i >= 0 && i < len(args) {
		return " (" + args[i].Name + ")"
	}
	return ""
}

func argNames(args []registry.Arg) string {
	n := make([]string, len(args))
	for i, a := range args {
		n[i] = a.Name
	}
	return "(" + strings.Join(n, ", ") + ")"
}

func describeValues(vs []autodiff.Value) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		if v.Err() != nil {
			parts[i] = "an invalid value"
			continue
		}
		parts[i] = fmt.Sprintf("%v %v", v.Dtype(), []int(v.Shape()))
	}
	return fmt.Sprintf("%s [%s]", plural(len(vs), "output"), strings.Join(parts, ", "))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
