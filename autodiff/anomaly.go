package autodiff

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// ErrNonFinite is the sentinel error of anomaly detection (see
// DetectAnomaly): an op made a NaN or an infinity, or a value with NaN
// entered the tape. The tape's *OpError wraps an *AnomalyError, which wraps
// ErrNonFinite.
var ErrNonFinite = errors.New("non-finite value (anomaly detection)")

// DetectAnomaly switches on anomaly detection, a debug mode (what PyTorch's
// detect_anomaly and TensorFlow's enable_check_numerics give): the tape
// checks every float output of every op it runs, in the forward pass and in
// the backward passes of Backward and Grad, and fails at the first op that
// makes a NaN or an infinity. The tape's error (an *OpError wrapping an
// *AnomalyError, which wraps ErrNonFinite) names
//
//   - the op (for a backward pass: the op run by the gradient function, such
//     as SqrtGrad or Mul);
//   - the phase: "forward", or "gradient of Sqrt" in a backward pass (and
//     for a gradient of a gradient recorded with GradOpts.CreateGraph,
//     "gradient of SqrtGrad (from the gradient of Sqrt)"); the AddN that
//     sums the gradients reaching an op's outputs counts as part of that
//     op's gradient; "backward" for the ops that seed the pass and sum the
//     sources' gradients;
//   - the file:line of the user's code: where the op was applied, or, in a
//     backward pass, where the forward op whose gradient runs was applied;
//   - in the AnomalyError: the output index, the dtype and shape, how many
//     NaN, +Inf and -Inf it holds, and the first one's flat index.
//
// "Makes" means: an output holds a NaN although no input held one, or an
// infinity although every input was finite. An op that only passes on a
// non-finite input (an -Inf mask added to logits, say) is not blamed; the
// op that made it was, when it ran. Values that enter the tape without an
// op, constants, watched values, Full and Scalar fills, parameters and the
// upstream gradients given to Grad, are checked when an op first consumes
// them: a NaN in any of them, or an infinity in a parameter, is reported
// there (the op named is the consumer, AnomalyError.Input says which
// input). An infinity in a constant is accepted (masks, bounds).
//
// The check costs a pass over every float output, plus the caller's stack
// (runtime.Callers) for each recorded op, so that a backward pass can name
// the forward op's line (a training step of a small MLP: +37% CPU time);
// a steady-state step allocates no more than without detection. With
// detection off (the default) a tape pays one predictable branch per op.
// Param.Grad accumulation and optimizer updates are not ops: a parameter
// they make non-finite is reported when an op next consumes it.
func DetectAnomaly() Option { return func(t *Tape) { t.SetDetectAnomaly(true) } }

// SetDetectAnomaly switches anomaly detection (see DetectAnomaly) on or off
// for the ops run from now on. Switched on over a tape that already holds
// values, it checks those values when an op consumes them, like constants.
func (t *Tape) SetDetectAnomaly(on bool) {
	switch {
	case !on:
		t.anom = nil
	case t.anom == nil:
		t.anom = &anomaly{gen: t.gen, before: int32(len(t.vals)), cur: -1}
	}
}

// DetectingAnomaly reports whether anomaly detection is on.
func (t *Tape) DetectingAnomaly() bool { return t.anom != nil }

// AnomalyError describes the non-finite values that anomaly detection
// found (see DetectAnomaly). It is the Err of the tape's *OpError, which
// names the op, the phase and the file:line; it wraps ErrNonFinite.
type AnomalyError struct {
	// Output is the index of the op's output that holds the non-finite
	// elements, or -1 if they are in input Input.
	Output int
	// Input is the index of the op's input that entered the tape with NaN
	// (or, a parameter, with an infinity), or -1.
	Input int
	// Entered describes that input: `parameter "w1"`, "a constant or watched
	// value", ...; "" for an output.
	Entered string
	// InfInput reports, for an output holding NaN, that an input held an
	// infinity (and none held NaN): the op made NaN out of infinities.
	InfInput bool
	// Dtype and Shape are the value's.
	Dtype tensor.Dtype
	Shape tensor.Shape
	// NaN, PosInf and NegInf count the non-finite elements of the value.
	NaN, PosInf, NegInf int
	// First is the flat (row-major) index of the first non-finite element.
	First int
}

func (e *AnomalyError) Error() string {
	var b strings.Builder
	if e.Output >= 0 {
		fmt.Fprintf(&b, "output %d (%v %v) has ", e.Output, e.Dtype, e.Shape)
	} else {
		fmt.Fprintf(&b, "input %d (%s; %v %v) has ", e.Input, e.Entered, e.Dtype, e.Shape)
	}
	sep := ""
	for _, c := range [...]struct {
		n    int
		what string
	}{{e.NaN, "NaN"}, {e.PosInf, "+Inf"}, {e.NegInf, "-Inf"}} {
		if c.n > 0 {
			fmt.Fprintf(&b, "%s%d %s", sep, c.n, c.what)
			sep = ", "
		}
	}
	fmt.Fprintf(&b, " (first at flat index %d)", e.First)
	switch {
	case e.Output < 0:
		b.WriteString(", as it entered the tape")
	case e.InfInput:
		b.WriteString(", its inputs had no NaN (some had an infinity)")
	default:
		b.WriteString(", its inputs were finite")
	}
	b.WriteString(": ")
	b.WriteString(ErrNonFinite.Error())
	return b.String()
}

// Unwrap returns ErrNonFinite.
func (e *AnomalyError) Unwrap() error { return ErrNonFinite }

// Finiteness of a value, as anomaly detection records it; ordered, so that
// an op makes something when its output's is above all its inputs'.
const (
	stUnknown uint8 = iota // not yet scanned: entered the tape without a checked op
	stFinite
	stInf // some ±Inf, no NaN
	stNaN
)

// anomalyDepth bounds the stack kept for each recorded op.
const anomalyDepth = 32

// anomaly is a tape's anomaly-detection state, for the tape generation gen.
type anomaly struct {
	gen    uint32
	before int32       // values already on the tape when detection was switched on
	st     []uint8     // finiteness by value id
	nodes  []anomNode  // by node index: where the op was applied
	cur    int32       // node whose gradient function runs, or -1
	count  nonFiniteCt // scratch
}

// anomNode is where a recorded op was applied: the stack of its forward
// call (for an op recorded by a backward pass: the stack of the forward op
// whose gradient it belongs to, and that op).
type anomNode struct {
	pcs    [anomalyDepth]uintptr
	origin *registry.OpDef
	ok     bool
}

type nonFiniteCt struct{ nan, posInf, negInf, first int }

// sync forgets the state of an earlier generation of the tape.
func (a *anomaly) sync(t *Tape) {
	if a.gen != t.gen {
		a.gen, a.before, a.cur = t.gen, 0, -1
		a.st = a.st[:0]
		a.nodes = a.nodes[:0]
	}
}

// check is run's hook: the op def has run on in and its nout outputs are
// the last values of t (recorded as node nodeIdx, or -1). It records the
// outputs' finiteness and fails the tape if an input entered it with NaN
// or the op made a non-finite value.
func (a *anomaly) check(t *Tape, def *registry.OpDef, in []Value, nout int, nodeIdx int32, phase string) bool {
	a.sync(t)
	if n := len(t.vals); len(a.st) < n {
		a.st = append(a.st, make([]uint8, n-len(a.st))...)
	}
	maxIn := stFinite
	for i, v := range in {
		s := a.st[v.id]
		if s == stUnknown {
			s = a.scan(t.vals[v.id].d)
			a.st[v.id] = s
			if p := t.vals[v.id].param; s == stNaN || s == stInf && p != nil {
				return a.fail(t, def, phase, &AnomalyError{Output: -1, Input: i, Entered: a.entered(t, v.id)}, t.vals[v.id].d)
			}
		}
		maxIn = max(maxIn, s)
	}
	first := len(t.vals) - nout
	for o := 0; o < nout; o++ {
		d := t.vals[first+o].d
		s := a.scan(d)
		a.st[first+o] = s
		if s > maxIn {
			return a.fail(t, def, phase, &AnomalyError{Output: o, Input: -1, InfInput: maxIn == stInf}, d)
		}
	}
	if nodeIdx >= 0 {
		a.record(t, nodeIdx, phase)
	}
	return true
}

// record notes where node ni was applied.
func (a *anomaly) record(t *Tape, ni int32, phase string) {
	for int(ni) >= len(a.nodes) {
		a.nodes = append(a.nodes, anomNode{})
	}
	n := &a.nodes[ni]
	if phase == "backward" && a.cur >= 0 && int(a.cur) < len(a.nodes) && a.nodes[a.cur].ok {
		from := &a.nodes[a.cur]
		n.pcs, n.ok, n.origin = from.pcs, true, from.origin
		if n.origin == nil {
			n.origin = t.nodes[a.cur].op
		}
		return
	}
	clear(n.pcs[:])
	runtime.Callers(3, n.pcs[:])
	n.ok, n.origin = true, nil
}

// entered describes value id, which entered the tape unchecked.
func (a *anomaly) entered(t *Tape, id int32) string {
	r := &t.vals[id]
	switch {
	case r.param != nil:
		return fmt.Sprintf("parameter %q", r.param.Name)
	case id < a.before && r.node >= 0:
		return fmt.Sprintf("the output of %s from before anomaly detection was switched on", t.nodes[r.node].op.Name)
	case id < a.before:
		return "a value from before anomaly detection was switched on"
	}
	return "a constant or watched value"
}

// fail records e, completed from d and the op's phase and location, as the
// tape's error.
func (a *anomaly) fail(t *Tape, def *registry.OpDef, phase string, e *AnomalyError, d *tensor.Dense) bool {
	c := a.count
	e.Dtype, e.Shape = d.Dtype(), d.Shape().Clone()
	e.NaN, e.PosInf, e.NegInf, e.First = c.nan, c.posInf, c.negInf, c.first
	loc := ""
	if phase == "backward" && a.cur >= 0 && int(a.cur) < len(t.nodes) {
		nd := t.nodes[a.cur]
		phase = "gradient of " + nd.op.Name
		if int(a.cur) < len(a.nodes) && a.nodes[a.cur].ok {
			n := &a.nodes[a.cur]
			if n.origin != nil {
				phase += " (from the gradient of " + n.origin.Name + ")"
			}
			loc = locOf(n.pcs[:])
		}
	}
	if loc == "" {
		loc = callerLoc()
	}
	t.fail(def.Name, e.Input, phase, &OpError{Op: def.Name, Input: e.Input, Phase: phase, Loc: loc, Err: e})
	return false
}

// scan returns d's finiteness (stFinite for non-float values); for a
// non-finite value it leaves the counts in a.count.
func (a *anomaly) scan(d *tensor.Dense) uint8 {
	var ok bool
	switch d.Dtype() {
	case tensor.Float32:
		a.count, ok = countNonFinite(d.Float32s())
	case tensor.Float64:
		a.count, ok = countNonFinite(d.Float64s())
	default:
		return stFinite
	}
	switch {
	case ok:
		return stFinite
	case a.count.nan > 0:
		return stNaN
	}
	return stInf
}

// countNonFinite reports whether every element of s is finite, and if not
// counts the non-finite ones.
func countNonFinite[T float32 | float64](s []T) (c nonFiniteCt, ok bool) {
	if allFinite(s) {
		return c, true
	}
	i := 0
	for s[i]-s[i] == 0 {
		i++
	}
	c.first = i
	for ; i < len(s); i++ {
		switch v := float64(s[i]); {
		case math.IsNaN(v):
			c.nan++
		case math.IsInf(v, 1):
			c.posInf++
		case math.IsInf(v, -1):
			c.negInf++
		}
	}
	return c, false
}

// at is gradPass's hook: the gradient function of node ni runs next (-1:
// none; the pass sums the sources' gradients).
func (a *anomaly) at(t *Tape, ni int32) {
	a.sync(t)
	a.cur = ni
}

// allFinite reports whether every element of s is finite: x-x is 0 for a
// finite x and NaN for NaN and ±Inf, and a sum of such terms is 0 only if
// all are. Four sums, no branch per element: about twice as fast as a
// test per element.
func allFinite[T float32 | float64](s []T) bool {
	var a0, a1, a2, a3 T
	i := 0
	for ; i+4 <= len(s); i += 4 {
		q := s[i : i+4 : i+4]
		a0 += q[0] - q[0]
		a1 += q[1] - q[1]
		a2 += q[2] - q[2]
		a3 += q[3] - q[3]
	}
	for ; i < len(s); i++ {
		a0 += s[i] - s[i]
	}
	return a0+a1+a2+a3 == 0
}
