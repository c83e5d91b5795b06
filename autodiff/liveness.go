package autodiff

import "fmt"

// Liveness: a value's buffer goes back to the tape's arena as soon as
// nothing can read it any more, instead of at Reset.
//
// The rule for handles. A Value is a plain handle that user code may copy
// and keep, so the tape cannot see who still holds one; it releases only
// values that are declared dead:
//
//   - Intermediates of modules. nn.Sequential (and any container built on
//     Tape.Mark and Tape.Intermediates) declares, after each layer, every
//     value created during that layer except its output, and the previous
//     layer's output once the next layer has consumed it. The values the
//     container returns, its input, and every value user code creates
//     outside a container stay valid until Reset.
//   - Values passed to Tape.Free.
//
// A declared value is released at once if no recorded op saved it for the
// backward pass: on a NoGrad tape that is every declared value, so
// inference with a Sequential holds only a layer's input, its temporaries
// and its output at a time. A value a recorded op saved is released by
// Backward, right after the last gradient function that reads it has run:
// Backward consumes the recording, as it spends its ops (ErrBackwardTwice).
// A Backward with BackwardOpts.RetainGraph, and Grad, which may be called
// again on the same recording, release no forward value; a Grad after a
// consuming Backward fails with ErrReleased.
//
// In the backward pass (Backward and Grad without CreateGraph), the
// gradients the pass computes along the way (seeds, the contributions of
// gradient functions, their sums and temporaries) are released as soon as
// the gradient function of the value they belong to has consumed them. The
// gradients Grad returns are never released, nor those Backward adds into
// Param.Grad (they stay valid until Reset, for OnGradReady's hook). With
// CreateGraph nothing is released: the recorded backward pass reads it
// all.
//
// A released Value reports ErrReleased (which wraps ErrInvalidValue) from
// every use: Err, Data, ops taking it as input, and so on, never stale
// data. Parameter values (Tape.Param) and watched leaves (Tape.Watch) are
// never released before Reset.

// ErrReleased is the error of a Value whose buffer the tape has released:
// an intermediate of a module such as nn.Sequential, or a value passed to
// Tape.Free (see Tape.Intermediates for the rule). It wraps ErrInvalidValue.
var ErrReleased = fmt.Errorf("%w: released", ErrInvalidValue)

// Flags of a valRec (valRec.live).
const (
	liveDeclared uint8 = 1 << iota // dead for its users (Intermediates, Free): release when unused
	liveReleased                   // its buffer went back to the arena
	liveSaved                      // an input or output of a recorded node
	liveKept                       // Keep: never declared
	liveWatched                    // a watched leaf: never declared
)

// released reports the error of a released value, or nil.
func (t *Tape) released(id int32) error {
	if t.vals[id].live&liveReleased != 0 {
		return fmt.Errorf("%w: the tape reused the buffer of this intermediate value (see Tape.Intermediates)", ErrReleased)
	}
	return nil
}

// release returns value id's buffer to the arena. Parameter values, whose
// buffer is the parameter's own, only become invalid.
func (t *Tape) release(id int32) {
	r := &t.vals[id]
	if r.live&liveReleased != 0 {
		return
	}
	if r.param == nil {
		t.arena.Release(r.d)
	}
	r.d = nil
	r.live |= liveReleased
}

// Mark is a position on a tape's list of values, for Intermediates. The
// zero Mark is a mark on no tape.
type Mark struct {
	t     *Tape
	gen   uint32
	pos   int32 // the first value created after the mark
	carry int32 // a value kept by the last Intermediates, declared next, or -1
}

// Mark returns the tape's current position: the values created after it
// are those Intermediates declares.
func (t *Tape) Mark() Mark {
	if t == nil {
		return Mark{}
	}
	return Mark{t: t, gen: t.gen, pos: int32(len(t.vals)), carry: -1}
}

// Intermediates declares every value created on t since m, except keep,
// dead: no user code holds it any more, so the tape may release its buffer
// (at once, or, for a value that a recorded op saved for the backward
// pass, when Backward no longer needs it). It returns a mark after the
// values it declared that also covers keep: chaining
//
//	m := t.Mark()
//	for _, layer := range layers {
//		x = layer.Forward(t, x)
//		m = t.Intermediates(m, x)
//	}
//
// declares each value of every layer once, including each layer's output
// once the next layer has run, but not the last output (nor the first
// input, created before the first mark). nn.Sequential does this.
//
// Values a container declares must not be used after it returns: they
// report ErrReleased. A layer that wants to keep one of its values (to
// return it some other way, for instance) calls Keep on it. Parameter
// values, watched leaves and kept values are never declared. A mark from
// before a Reset, or of another tape, declares nothing.
func (t *Tape) Intermediates(m Mark, keep Value) Mark {
	if t == nil || m.t != t || m.gen != t.gen || t.kc.Alloc == nil {
		return t.Mark()
	}
	k := int32(-1)
	if keep.t == t && keep.gen == t.gen && keep.id >= 0 && int(keep.id) < len(t.vals) {
		k = keep.id
	}
	if m.carry >= 0 && m.carry != k {
		t.declare(m.carry)
	}
	end := int32(len(t.vals))
	for id := m.pos; id < end; id++ {
		if id != k {
			t.declare(id)
		}
	}
	next := Mark{t: t, gen: t.gen, pos: end, carry: -1}
	if k >= 0 && (k >= m.pos || k == m.carry) {
		next.carry = k
	}
	return next
}

// Keep exempts v from Intermediates: it stays valid until Reset (or Free).
func (t *Tape) Keep(v Value) {
	if t.check(v) == nil {
		t.vals[v.id].live |= liveKept
	}
}

// Free declares v dead (as Intermediates does, but also for a kept value):
// its buffer returns to the arena now, or, if a recorded op saved v for
// the backward pass, once Backward no longer needs it. v and every copy
// of it report ErrReleased afterwards. Parameter values and watched
// leaves stay valid until Reset. Freeing an invalid value does nothing.
func (t *Tape) Free(v Value) {
	if t.check(v) != nil {
		return
	}
	t.vals[v.id].live &^= liveKept
	t.declare(v.id)
}

// declare marks value id dead for its users and releases it if nothing on
// the tape needs it.
func (t *Tape) declare(id int32) {
	r := &t.vals[id]
	if r.live&(liveDeclared|liveReleased|liveKept|liveWatched) != 0 || r.param != nil {
		return
	}
	r.live |= liveDeclared
	if r.live&liveSaved == 0 {
		t.release(id)
	}
}

// markSaved records that a node saved the values of ids (its inputs and
// outputs): they live until the backward pass is done with them.
func (t *Tape) markSaved(ids []int32) {
	for _, id := range ids {
		t.vals[id].live |= liveSaved
	}
}

// MemStats is a snapshot of the memory of a tape's buffers, in bytes.
type MemStats struct {
	// InUse is the memory of the buffers of the tape's valid values (and
	// of a kernel's scratch while it runs).
	InUse int64
	// PeakInUse is the most InUse since the last Reset.
	PeakInUse int64
	// Pooled is all the buffer memory the tape holds: in use, or free for
	// reuse by the next ops. Release returns it to the Go runtime.
	Pooled int64
}

// MemStats returns the memory of t's buffers.
func (t *Tape) MemStats() MemStats {
	return MemStats{InUse: t.arena.inUse, PeakInUse: t.arena.peak, Pooled: t.arena.pooled}
}

// Backward liveness. The plan, made from the recorded graph before the
// pass walks it, gives every value the last node (in the pass's order:
// the smallest index) whose gradient function may read it, as an input or
// output of that node: after that node, the value's forward buffer is no
// longer needed. The gradients themselves are reference-counted: a
// gradient lives while a list of contributions (Tape.acc) holds it.

// noUse is the last use of a value that no gradient function reads.
const noUse = int32(1<<31 - 1)

// liveness is the tape's backward-pass bookkeeping (scratch reused across
// passes).
type liveness struct {
	on      bool    // this pass releases (not CreateGraph)
	consume bool    // Backward: also release the declared forward values
	start   int32   // the number of values when the pass began
	cur     int32   // the pass has run the nodes from here up
	last    []int32 // per value before start: the last node reading it, or noUse
	refs    []int32 // per value: how many contribution lists hold it
	role    []uint8 // per value before start: roleSource, roleTarget
}

const (
	roleSource uint8 = 1 << iota
	roleTarget
)

// plan prepares the bookkeeping of a pass over the nodes maxNode down to
// the first whose first output is before minSrc, from targets to sources;
// create passes release nothing. It fails if a gradient function of the
// pass would need a released value (a recording that Backward consumed).
func (t *Tape) plan(targets, sources []Value, maxNode int, minSrc int32, create bool) error {
	lv := &t.lv
	n := len(t.vals)
	lv.on = false
	lv.start = int32(n)
	lv.refs = growZero(lv.refs, n)
	lv.role = growZero(lv.role, n)
	if cap(lv.last) < n {
		lv.last = make([]int32, n)
	}
	lv.last = lv.last[:n]
	for i := range lv.last {
		lv.last[i] = noUse
	}
	for _, s := range sources {
		lv.role[s.id] |= roleSource
	}
	// Bit mayGrad of role marks the values that may receive a gradient; a
	// node may run if an output may have one and an input needs one.
	const mayGrad = 1 << 7
	for _, tv := range targets {
		lv.role[tv.id] |= roleTarget
		if t.marked[tv.id] {
			lv.role[tv.id] |= mayGrad
		}
	}
	defer func() {
		for i := range lv.role {
			lv.role[i] &^= mayGrad
		}
	}()
	for ni := maxNode; ni >= 0; ni-- {
		nd := &t.nodes[ni]
		if t.ids[nd.out0] < minSrc {
			break
		}
		outs, ins := t.ids[nd.out0:nd.out0+nd.nout], t.ids[nd.in0:nd.in0+nd.nin]
		has, needs := false, false
		for _, id := range outs {
			has = has || lv.role[id]&mayGrad != 0
		}
		for _, id := range ins {
			needs = needs || t.marked[id]
		}
		if !has || !needs {
			continue
		}
		for _, id := range t.ids[nd.in0 : nd.out0+nd.nout] {
			if t.vals[id].live&liveReleased != 0 {
				if t.bwMode != bwGrad && ni < len(t.spent) && t.spent[ni] == t.gen {
					return t.spend(ni) // ErrBackwardTwice says more
				}
				return fmt.Errorf("%w: the gradient of %s needs a value that Backward released (Backward consumes a recording; Grad may be called repeatedly on one)", ErrReleased, nd.op.Name)
			}
			lv.last[id] = int32(ni)
		}
		for _, id := range ins {
			if t.marked[id] && isFloat(t.vals[id].d.Dtype()) {
				lv.role[id] |= mayGrad
			}
		}
	}
	lv.on = !create
	lv.cur = int32(maxNode + 1)
	if lv.on && lv.consume {
		// Declared values that no gradient function reads are dead already.
		for id := range lv.last {
			if lv.last[id] == noUse {
				t.maybeRelease(int32(id))
			}
		}
	}
	return nil
}

// growZero returns s resized to n zero elements.
func growZero[T int32 | uint8](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// hold records that a contribution list holds gradient id.
func (t *Tape) hold(id int32) {
	lv := &t.lv
	if !lv.on {
		return
	}
	for int(id) >= len(lv.refs) {
		lv.refs = append(lv.refs, 0)
	}
	lv.refs[id]++
}

// drop records that a contribution list no longer holds gradient id, and
// releases it if it is dead.
func (t *Tape) drop(id int32) {
	lv := &t.lv
	if !lv.on {
		return
	}
	lv.refs[id]--
	t.maybeRelease(id)
}

// maybeRelease releases value id if the pass may and nothing needs it: a
// value the pass made (not one it returns: those are never dropped) once
// no list holds it; a forward value declared dead, in Backward, once its
// last reader has run and no list holds it.
func (t *Tape) maybeRelease(id int32) {
	lv := &t.lv
	if !lv.on || int(id) < len(lv.refs) && lv.refs[id] > 0 {
		return
	}
	if id >= lv.start {
		t.release(id)
		return
	}
	if l := lv.last[id]; lv.consume && (l == noUse || l >= lv.cur) && lv.role[id] == 0 && t.vals[id].live&liveDeclared != 0 {
		t.release(id)
	}
}

// afterNode releases what node ni was the last to need: the gradients of
// its outputs (unless they are sources, whose gradients the pass returns),
// the values its gradient function made and no list holds, and the
// forward values it was the last to read. made is the first value the
// gradient function made.
func (t *Tape) afterNode(ni int, made int32) {
	lv := &t.lv
	if !lv.on {
		return
	}
	lv.cur = int32(ni)
	nd := &t.nodes[ni]
	for _, id := range t.ids[nd.out0 : nd.out0+nd.nout] {
		if lv.role[id]&roleSource != 0 {
			continue
		}
		l := t.acc[id]
		t.acc[id] = l[:0]
		for _, g := range l {
			t.drop(g)
		}
	}
	for id := made; id < int32(len(t.vals)); id++ {
		t.maybeRelease(id)
	}
	for _, id := range t.ids[nd.in0 : nd.in0+nd.nin+nd.nout] {
		if lv.last[id] == int32(ni) {
			t.maybeRelease(id)
		}
	}
}

// endPass ends the pass's bookkeeping.
func (t *Tape) endPass() {
	t.lv.on = false
}
