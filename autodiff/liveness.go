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
// and its output at a time. A value a recorded op saved stays until Reset.
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
// pass, at Reset). It returns a mark after the values it declared that
// also covers keep: chaining
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
// the backward pass, at Reset. v and every copy
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
