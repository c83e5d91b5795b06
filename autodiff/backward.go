package autodiff

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBackwardTwice: a Backward through ops that an earlier Backward of the
// same recording already ran through (see BackwardOpts.RetainGraph).
var ErrBackwardTwice = errors.New("backward pass already ran through these ops")

// BackwardOpts configures Tape.BackwardWith.
type BackwardOpts struct {
	// RetainGraph keeps the ops this pass runs through available to a
	// later Backward on the same recording (PyTorch's retain_graph). By
	// default a Backward spends them: a second Backward through any of
	// them, before the tape's Reset, is refused with ErrBackwardTwice,
	// because it would add their gradients into the parameters' Grad a
	// second time, which is almost always a missing Reset. Set it on
	// every pass but the last when backpropagating through the same ops
	// several times on purpose. (Grad never spends ops and never checks:
	// it adds nothing into Grad.)
	RetainGraph bool
}

// Backward modes of the gradient pass (Tape.bwMode).
const (
	bwGrad   = iota // Grad: no spending
	bwSpend         // Backward: refuse spent ops, spend the ops it runs
	bwRetain        // Backward with RetainGraph: refuse spent ops only
)

// spend checks, in a Backward pass, that node ni was not run by an earlier
// Backward of this recording, and records that this pass runs it (unless
// the pass retains the graph).
func (t *Tape) spend(ni int) error {
	if t.bwMode == bwGrad {
		return nil
	}
	for len(t.spent) < len(t.nodes) {
		t.spent = append(t.spent, 0)
	}
	if t.spent[ni] == t.gen {
		return t.gradError(ni, -1, fmt.Errorf("%w: an earlier Backward of this recording ran through this op and added its gradients into the parameters' Grad; "+
			"a second pass would add them again. Call tape.Reset() at the start of each step, or pass BackwardOpts{RetainGraph: true} "+
			"to the earlier BackwardWith to backpropagate through the same ops again on purpose", ErrBackwardTwice))
	}
	if t.bwMode == bwSpend {
		t.spent[ni] = t.gen
	}
	return nil
}

// checkReached returns an ErrNoGradient error, after a Backward's gradient
// pass, if target depends on none of the trainable parameters ps bound to
// the tape: nothing would train. It names the parameters.
func (t *Tape) checkReached(target Value, ps []*Param) error {
	if len(ps) > 0 && t.marked[target.id] {
		return nil
	}
	var msg string
	if len(ps) == 0 {
		msg = "no trainable parameter is bound to this tape: bind parameters with tape.Param(p) " +
			"(tape.Constant(p.Data) copies the data and gives it no gradient)"
	} else {
		names := make([]string, 0, min(len(ps), 6))
		for i, p := range ps {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(ps)-5))
				break
			}
			names = append(names, fmt.Sprintf("%q", p.Name))
		}
		msg = fmt.Sprintf("the target depends on none of the trainable parameters bound to this tape; none got a gradient: %s "+
			"(was a parameter's data used through tape.Constant instead of tape.Param?)", strings.Join(names, ", "))
	}
	return t.fail("", -1, "backward", fmt.Errorf("%w: %s", ErrNoGradient, msg))
}
