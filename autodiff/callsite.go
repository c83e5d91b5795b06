package autodiff

import (
	"fmt"
	"runtime"

	"github.com/tapegrad/tapegrad/registry"
)

// Call sites of recorded ops. A recorded op whose gradient function is
// not one of tapegrad's own keeps the call stack it was applied from
// (program counters only: symbolising them is done only when an error
// needs the file:line), so that an error raised later, in the op's
// gradient function, names the user's line that applied the op, not only
// the line that called Backward. These are the ops whose gradient errors
// are the user's to fix: ops registered outside tapegrad (a user's op and
// its gradient function), and ops without a gradient (an op with
// GradNone on the path to a parameter). The call stack costs about as
// much as the rest of the tape's work for an op, so tapegrad's own ops
// with their tested gradient functions skip it; an error in one of those
// (a bug) is located at the Backward or Grad call.

// callSiteDepth bounds the frames kept per recorded op: enough to get from
// the tape through the typed op functions and nested layers to the user's
// code in the usual case. If the user's frame is deeper, the error has no
// location.
const callSiteDepth = 16

// recordCallSite appends the current call stack (from run's caller on) to
// t.pcs and returns where it starts and how many frames it has. t.pcs is
// emptied at the first call of each recording (generation), so a tape in
// steady state reuses the same memory.
func (t *Tape) recordCallSite() (start, n int32) {
	if t.pcsGen != t.gen {
		t.pcs, t.pcsGen = t.pcs[:0], t.gen
	}
	var buf [callSiteDepth]uintptr
	k := runtime.Callers(3, buf[:]) // skip Callers, recordCallSite, run
	start = int32(len(t.pcs))
	t.pcs = append(t.pcs, buf[:k]...)
	return start, int32(k)
}

// needsCallSite reports whether a recorded op of definition def and
// gradient state gk keeps its call stack: unless it is one of tapegrad's
// own ops with a gradient function.
func needsCallSite(def *registry.OpDef, gk registry.GradKind) bool {
	if gk != registry.GradDefined {
		return true
	}
	switch def.Package() {
	case pkgForward, pkgBackward, pkgNN:
		return false
	}
	return true
}

// The packages that register tapegrad's own ops.
const (
	pkgForward  = "github.com/tapegrad/tapegrad/forward"
	pkgBackward = "github.com/tapegrad/tapegrad/backward"
	pkgNN       = "github.com/tapegrad/tapegrad/nn"
)

// nodeLoc returns the file:line of the user code that applied recorded
// node ni, or "" if it cannot be told.
func (t *Tape) nodeLoc(ni int) string {
	if ni < 0 || ni >= len(t.nodes) {
		return ""
	}
	nd := &t.nodes[ni]
	if nd.npc > 0 && int(nd.pc0+nd.npc) <= len(t.pcs) {
		return locOf(t.pcs[nd.pc0 : nd.pc0+nd.npc])
	}
	// Anomaly detection keeps every recorded op's stack.
	if a := t.anom; a != nil && a.gen == t.gen && ni < len(a.nodes) && a.nodes[ni].ok {
		return locOf(a.nodes[ni].pcs[:])
	}
	return ""
}

// gradError is the error of the backward pass through node ni: an OpError
// for the node's op and the given input (or -1), located at the forward
// call site of the op if the node kept it, else at the user's call of
// Backward or Grad.
func (t *Tape) gradError(ni, input int, err error) *OpError {
	loc := t.nodeLoc(ni)
	if loc == "" {
		loc = callerLoc()
	}
	return &OpError{Op: t.nodes[ni].op.Name, Input: input, Phase: "backward", Loc: loc, Err: err}
}

// locateGradFailure gives the tape's error, raised by an op that the
// gradient function of node ni applied, the forward call site of node ni
// as its location, and says in its message which gradient it was raised in
// and where the backward pass was (the location the error had: the
// Backward or Grad call, or the user's own gradient function).
func (t *Tape) locateGradFailure(ni int) {
	oe, ok := t.err.(*OpError)
	if !ok || oe.Phase != "backward" {
		return
	}
	loc := t.nodeLoc(ni)
	if loc == "" {
		return
	}
	name := t.nodes[ni].op.Name
	switch {
	case oe.Loc != "" && oe.Loc != loc:
		oe.Err = fmt.Errorf("in the gradient of %s (backward pass at %s): %w", name, oe.Loc, oe.Err)
	case oe.Op != name:
		oe.Err = fmt.Errorf("in the gradient of %s: %w", name, oe.Err)
	}
	oe.Loc = loc
}
