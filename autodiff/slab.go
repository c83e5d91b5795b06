package autodiff

import "github.com/tapegrad/tapegrad/registry"

// Slabs: the small slices and interface boxes a tape hands out on every op
// (the outputs of Apply, the registry.Values gradient functions see and
// return) come from bump-allocated slabs instead of one allocation each.
// An element of a slab is handed out once and never written again by the
// tape, not even after Reset, so a slice or box can be held for as long as
// its holder likes: a Value from before a Reset keeps its old generation
// and still reports ErrInvalidValue. A full slab is replaced, not reused;
// the garbage collector frees it once nothing refers to it.

const (
	slabMin = 64   // elements of a tape's first slab
	slabMax = 4096 // slab growth stops here (64 KiB of Values)
)

func slabCap(prev, n int) int {
	return max(min(max(2*prev, slabMin), slabMax), n)
}

// values returns n zero Values from the tape's slab (capacity n, so an
// append by the holder reallocates instead of writing into the slab).
func (t *Tape) values(n int) []Value {
	if cap(t.vslab)-len(t.vslab) < n {
		t.vslab = make([]Value, 0, slabCap(cap(t.vslab), n))
	}
	k := len(t.vslab)
	t.vslab = t.vslab[:k+n]
	return t.vslab[k : k+n : k+n]
}

// ifaces returns n nil registry.Values from the tape's slab.
func (t *Tape) ifaces(n int) []registry.Value {
	if cap(t.islab)-len(t.islab) < n {
		t.islab = make([]registry.Value, 0, slabCap(cap(t.islab), n))
	}
	k := len(t.islab)
	t.islab = t.islab[:k+n]
	return t.islab[k : k+n : k+n]
}

// box returns v as a registry.Value without allocating: a pointer to a
// slab copy of v (*Value has Value's methods). Converting the 16-byte Value
// itself to an interface would allocate.
func (t *Tape) box(v Value) registry.Value {
	s := t.values(1)
	s[0] = v
	return &s[0]
}

// unbox returns the tape Value behind a registry.Value (a Value or a box).
func unbox(rv registry.Value) (Value, bool) {
	switch v := rv.(type) {
	case Value:
		return v, true
	case *Value:
		if v != nil {
			return *v, true
		}
	}
	return Value{}, false
}
