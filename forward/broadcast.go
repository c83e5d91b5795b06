package forward

import (
	"strconv"
	"strings"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Broadcasting as TensorFlow's BCast does it (NumPy's rules): the two
// shapes are aligned at their trailing dimensions, the shorter one padded
// with leading 1s; in every dimension the sizes must be equal or one of
// them 1, and a size-1 dimension stretches to the other size (also to 0).
//
// The helpers below are shared by every broadcasting op of the package:
// broadcastShape computes the result shape, bcastShapeError builds TF's
// error, newBcastPlan prepares an iteration and bcastRun executes it with
// fast paths for the common layouts.

// ewGrain is the chunk size (elements) of parallel elementwise loops.
const ewGrain = 1 << 14

// broadcastShape returns the broadcast shape of a and b, or ok == false if
// the shapes are incompatible.
func broadcastShape(a, b []int) (out []int, ok bool) {
	return appendBroadcastShape(nil, a, b)
}

// appendBroadcastShape appends the broadcast shape of a and b to dst.
func appendBroadcastShape(dst, a, b []int) (out []int, ok bool) {
	r := max(len(a), len(b))
	for i := 0; i < r; i++ {
		da, db := dimFromEnd(a, r-1-i), dimFromEnd(b, r-1-i)
		switch {
		case da == db:
			dst = append(dst, da)
		case da == 1:
			dst = append(dst, db)
		case db == 1:
			dst = append(dst, da)
		default:
			return nil, false
		}
	}
	return dst, true
}

// dimFromEnd returns s[len(s)-1-k], or 1 where s is too short (the
// implicit leading 1s of broadcasting).
func dimFromEnd(s []int, k int) int {
	if k >= len(s) {
		return 1
	}
	return s[len(s)-1-k]
}

// shapeDebugString formats a shape as TensorFlow's TensorShape.DebugString
// does: "[2,3]", "[]" for a scalar.
func shapeDebugString(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// bcastShapeError is TensorFlow's error for operands that do not
// broadcast: "AddV2: Incompatible shapes: [2,3] vs. [4]".
func bcastShapeError(op string, a, b []int) error {
	return registry.InputErrorf(registry.ErrShape, 1, "%s: Incompatible shapes: %s vs. %s", op, shapeDebugString(a), shapeDebugString(b))
}

// bcastKind selects the loop bcastRun uses.
type bcastKind uint8

const (
	bcastSame    bcastKind = iota // both operands have the output's shape (or one element each)
	bcastScalarA                  // a has one element, b the output's shape
	bcastScalarB                  // b has one element, a the output's shape
	bcastRowA                     // out is [outer, inner], a is [inner] (bias-like), b full
	bcastRowB                     // out is [outer, inner], b is [inner] (bias-like), a full
	bcastGeneral                  // strided loop over the collapsed dimensions
)

// bcastPlan describes how two operands broadcast to the output: the output
// shape, and the output's dimensions collapsed (size-1 dimensions dropped,
// neighbours with the same broadcast pattern merged) with each operand's
// element strides (0 along the dimensions it is broadcast in).
type bcastPlan struct {
	outDims [tensorx.MaxRank]int // broadcast output shape (see out)
	outRank int
	n       int // output elements
	kind    bcastKind
	rank    int // collapsed rank (>= 1 unless n == 0)
	dims    [tensorx.MaxRank]int
	sa      [tensorx.MaxRank]int
	sb      [tensorx.MaxRank]int
}

// out returns the broadcast output shape (p's own array: no allocation).
func (p *bcastPlan) out() []int { return p.outDims[:p.outRank] }

// newBcastPlan plans the broadcast of operand shapes a and b. It returns
// ok == false if they are incompatible; an error for a result too large or
// of too high a rank.
func newBcastPlan(a, b []int) (p bcastPlan, ok bool, err error) {
	if max(len(a), len(b)) > tensorx.MaxRank {
		out, ok := broadcastShape(a, b)
		if !ok {
			return p, false, nil
		}
		_, err := tensorx.Numel(out) // the rank error
		return p, true, err
	}
	out, ok := appendBroadcastShape(p.outDims[:0], a, b)
	if !ok {
		return p, false, nil
	}
	p.outRank = len(out)
	n, err := tensorx.Numel(out)
	if err != nil {
		return p, true, err
	}
	p.n = n
	if n == 0 {
		return p, true, nil
	}
	// Collapse: drop size-1 output dims, merge runs with equal patterns.
	r := len(out)
	var pa, pb [tensorx.MaxRank]bool
	k := 0
	for i := 0; i < r; i++ {
		d := out[i]
		if d == 1 {
			continue
		}
		ha := dimFromEnd(a, r-1-i) == d
		hb := dimFromEnd(b, r-1-i) == d
		if k > 0 && pa[k-1] == ha && pb[k-1] == hb {
			p.dims[k-1] *= d
			continue
		}
		p.dims[k], pa[k], pb[k] = d, ha, hb
		k++
	}
	if k == 0 { // every dimension is 1: one element each
		p.rank, p.dims[0], p.sa[0], p.sb[0] = 1, 1, 1, 1
		p.kind = bcastSame
		return p, true, nil
	}
	p.rank = k
	accA, accB := 1, 1
	for i := k - 1; i >= 0; i-- {
		if pa[i] {
			p.sa[i] = accA
			accA *= p.dims[i]
		}
		if pb[i] {
			p.sb[i] = accB
			accB *= p.dims[i]
		}
	}
	switch {
	case k == 1 && pa[0] && pb[0]:
		p.kind = bcastSame
	case k == 1 && !pa[0]:
		p.kind = bcastScalarA
	case k == 1 && !pb[0]:
		p.kind = bcastScalarB
	case k == 2 && pa[1] && pb[1] && !pa[0]:
		p.kind = bcastRowA
	case k == 2 && pa[1] && pb[1] && !pb[0]:
		p.kind = bcastRowB
	default:
		p.kind = bcastGeneral
	}
	return p, true, nil
}

// binRows are the inner loops of a broadcasting binary op over one run of
// the output: both operands contiguous (vv), a broadcast scalar a (sv), a
// broadcast scalar b (vs). The out slices and the slice operands have the
// same length.
type binRows[T any] struct {
	vv func(out, a, b []T)
	sv func(out []T, a T, b []T)
	vs func(out, a []T, b T)
}

// bcastRun computes out = f(a, b) elementwise under plan p, where f is
// given by its inner loops. a and b hold the operands' elements (row-major,
// in their own shapes), out the output's. Work is split across threads in
// chunks whose bounds depend only on the shapes; nothing is allocated when
// it runs serially.
func bcastRun[T any](threads int, p *bcastPlan, out, a, b []T, rows binRows[T]) {
	if p.n == 0 {
		return
	}
	// Work items: output elements, or rows of the output for the row kinds.
	work, grain := p.n, ewGrain
	if p.kind == bcastRowA || p.kind == bcastRowB {
		work, grain = p.dims[0], max(1, ewGrain/p.dims[1])
	}
	if serial(threads, work, grain) {
		bcastRange(p, out, a, b, rows, 0, work)
		return
	}
	pc := *p // the closure's copy, so that p can stay on the caller's stack
	parallel.For(threads, work, grain, func(lo, hi int) {
		bcastRange(&pc, out, a, b, rows, lo, hi)
	})
}

// bcastRange runs bcastRun's work items [lo, hi).
func bcastRange[T any](p *bcastPlan, out, a, b []T, rows binRows[T], lo, hi int) {
	switch p.kind {
	case bcastSame:
		rows.vv(out[lo:hi], a[lo:hi], b[lo:hi])
	case bcastScalarA:
		rows.sv(out[lo:hi], a[0], b[lo:hi])
	case bcastScalarB:
		rows.vs(out[lo:hi], a[lo:hi], b[0])
	case bcastRowA, bcastRowB:
		inner := p.dims[1]
		for r := lo; r < hi; r++ {
			o := out[r*inner : (r+1)*inner]
			if p.kind == bcastRowA {
				rows.vv(o, a[:inner], b[r*inner:(r+1)*inner])
			} else {
				rows.vv(o, a[r*inner:(r+1)*inner], b[:inner])
			}
		}
	default:
		bcastStrided(p, out, a, b, lo, hi, rows)
	}
}

// bcastStrided is the general loop of bcastRun over output elements
// [lo, hi): it walks the collapsed dimensions with an index counter and
// hands runs of the innermost dimension to the inner loops.
func bcastStrided[T any](p *bcastPlan, out, a, b []T, lo, hi int, rows binRows[T]) {
	r := p.rank
	var idx [tensorx.MaxRank]int
	offA, offB := 0, 0
	rem := lo
	for d := r - 1; d >= 0; d-- {
		idx[d] = rem % p.dims[d]
		rem /= p.dims[d]
		offA += idx[d] * p.sa[d]
		offB += idx[d] * p.sb[d]
	}
	inner := p.dims[r-1]
	ia, ib := p.sa[r-1], p.sb[r-1]
	for pos := lo; pos < hi; {
		m := min(inner-idx[r-1], hi-pos)
		o := out[pos : pos+m]
		switch {
		case ia != 0 && ib != 0:
			rows.vv(o, a[offA:offA+m], b[offB:offB+m])
		case ia == 0:
			rows.sv(o, a[offA], b[offB:offB+m])
		default:
			rows.vs(o, a[offA:offA+m], b[offB])
		}
		pos += m
		idx[r-1] += m
		offA += m * ia
		offB += m * ib
		if idx[r-1] < inner {
			continue
		}
		// Carry into the outer dimensions.
		offA -= inner * ia
		offB -= inner * ib
		idx[r-1] = 0
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			offA += p.sa[d]
			offB += p.sb[d]
			if idx[d] < p.dims[d] {
				break
			}
			offA -= p.dims[d] * p.sa[d]
			offB -= p.dims[d] * p.sb[d]
			idx[d] = 0
		}
	}
}
