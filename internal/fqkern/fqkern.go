// Package fqkern holds the element loops of the fake quantisation ops
// (forward.FakeQuantWithMinMaxVarsPerChannel, its gradient and adjoint
// ops, and the per-tensor ops FakeQuantWithMinMaxArgs and
// FakeQuantWithMinMaxVars with theirs as one channel): branch-free AVX2
// assembly for float32 and float64 on amd64 CPUs with AVX2, and the
// portable Go loops of kernel_go.go elsewhere and under the noasm build
// tag (branch-free, or branching on the in-range test where the inputs
// mostly pass it). Each assembly routine has a Go twin of the same name
// and signature (kernel_noasm.go), chosen by build tags; the exported
// functions pick the assembly or the Go loops themselves.
//
// The package also computes the nudged grids (Nudge) and runs whole
// tensors in parallel chunks (Forward, Gradient, Adjoint).
//
// Every loop walks a flat tensor whose channel is the flat index modulo d.
// The per-channel parameters are laid out once per call as tables of
// Period(d) positions (a multiple of d and, when small, of 8), position j
// holding channel j mod d: a call then streams whole periods of elements
// against the table with vector loads, whatever d is.
//
// The forward is bit-exact with the scalar rules of package forward (every
// operation rounded to the element type, no fused multiply-add, floor by
// rounding towards −Inf, TensorFlow's clamp order min(x, nmax) then
// max(·, nmin) with a NaN input propagating), in both of TensorFlow's
// forms: multiplying by the inverse scale (Args, PerChannel: NewQuant) or
// dividing by the scale (Vars: NewQuantDiv). The gradient loops compare
// exactly; their min/max sums are accumulated per table position in
// float64 (Bounds.Grad) and folded into channels in position order
// (Bounds.Fold), so they depend only on where the caller cuts its calls,
// never on the code path taken for the input gradient.
package fqkern

import (
	"fmt"
	"math"

	"github.com/tapegrad/tapegrad/internal/cpu"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// useAsm reports whether the kernels run the assembly routines (fwd32 and
// the others of kernel_amd64.go): from the AVX2 tier up (cpu.Tier(), which
// TAPEGRAD_ISA caps; Go on other architectures and under the noasm build
// tag, where the routines are their Go twins). When it is false the
// dispatchers run the Go loops directly. Tests switch it to compare the
// two.
var useAsm = cpu.Tier() >= cpu.AVX2

// Period returns the table length for d ≥ 1 channels: the least common
// multiple of d and 8, doubled up to at least 256 positions so that a call
// covers enough elements per table pass; d itself when that multiple
// exceeds 1024 positions (the rows then end in a tail of d mod 8 elements
// handled one at a time).
func Period(d int) int {
	if d < 1 {
		panic(fmt.Sprintf("fqkern: %d channels", d))
	}
	l := d
	for l%8 != 0 {
		l += d
	}
	if l > 1024 {
		return d
	}
	for l < 256 {
		l *= 2
	}
	return l
}

// Grid is the nudged quantisation grid of one channel, in the element
// type: outputs are floor(((min(x, NMax) max NMin) − NMin)·Inv − QZero +
// 0.5)·Scale, every operation rounded, or with ·Inv replaced by /Scale in
// a dividing table (NewQuantDiv, which ignores Inv). Zero marks the
// min == max == 0 channel, whose outputs are all +0 (NaN inputs
// included).
type Grid[T tensorx.Float] struct {
	NMin, NMax, Inv, QZero, Scale T
	Zero                          bool
}

// Table rows of Quant.
const (
	qNMin = iota
	qNMax
	qInv
	qQZero
	qScale
	qKeep // all ones (a NaN) to keep the result, 0 in zero channels
	qRows
)

// Table rows of Bounds.
const (
	bLo   = iota
	bHi   // the nudged range [lo, hi], inclusive
	bPass // all ones in zero channels (every gradient passes), else 0
	bDMin // the adjoint's d_min of the channel
	bDMax // the adjoint's d_max of the channel
	bRows
)

// ones returns the value whose bits are all ones (a NaN).
func ones[T tensorx.Float]() T {
	var z T
	switch p := any(&z).(type) {
	case *float32:
		*p = math.Float32frombits(^uint32(0))
	case *float64:
		*p = math.Float64frombits(^uint64(0))
	}
	return z
}

// Quant is the forward parameter table of d channels.
type Quant[T tensorx.Float] struct {
	d, l  int
	div   bool // divide by Scale instead of multiplying by Inv
	zeros int  // channels whose grid is Zero
	tab   []T  // qRows rows of l positions
}

// QuantSize returns the number of elements of the forward table of d ≥ 1
// channels (the buffer of Quant.Init).
func QuantSize(d int) int { return qRows * Period(d) }

// NewQuant returns the table of d ≥ 1 channels whose forward multiplies
// by the inverse scale (FakeQuantWithMinMaxArgs and
// FakeQuantWithMinMaxVarsPerChannel), every channel a zero grid until
// Set.
func NewQuant[T tensorx.Float](d int) *Quant[T] {
	q := new(Quant[T])
	q.Init(d, false, make([]T, QuantSize(d)))
	return q
}

// NewQuantDiv returns the table of d ≥ 1 channels whose forward divides
// by the scale, as TensorFlow's FakeQuantWithMinMaxVars does (the two
// forms can differ in the last bit), every channel a zero grid until Set.
func NewQuantDiv[T tensorx.Float](d int) *Quant[T] {
	q := new(Quant[T])
	q.Init(d, true, make([]T, QuantSize(d)))
	return q
}

// Init makes q the table of d ≥ 1 channels in buf, of QuantSize(d)
// elements (q keeps it; Init clears it): the forward divides by the
// scale if div (NewQuantDiv), else multiplies by the inverse scale
// (NewQuant); every channel is a zero grid until Set. A Quant that lives
// in its caller's frame with a buffer from a pool costs no allocation.
func (q *Quant[T]) Init(d int, div bool, buf []T) {
	l := Period(d)
	if len(buf) != qRows*l {
		panic(fmt.Sprintf("fqkern: table of %d elements for %d channels, want %d", len(buf), d, qRows*l))
	}
	clear(buf)
	*q = Quant[T]{d: d, l: l, div: div, zeros: d, tab: buf}
}

// Period returns the table length (Period(d)).
func (q *Quant[T]) Period() int { return q.l }

// Set sets channel c's grid.
func (q *Quant[T]) Set(c int, g Grid[T]) {
	if c < 0 || c >= q.d {
		panic(fmt.Sprintf("fqkern: channel %d of %d", c, q.d))
	}
	was, zero := q.tab[qKeep*q.l+c] == 0, g.Zero // keep is a NaN but in zero channels
	switch {
	case was && !zero:
		q.zeros--
	case !was && zero:
		q.zeros++
	}
	keep := ones[T]()
	if zero {
		g = Grid[T]{}
		keep = 0
	}
	for j := c; j < q.l; j += q.d {
		q.tab[qNMin*q.l+j] = g.NMin
		q.tab[qNMax*q.l+j] = g.NMax
		q.tab[qInv*q.l+j] = g.Inv
		q.tab[qQZero*q.l+j] = g.QZero
		q.tab[qScale*q.l+j] = g.Scale
		q.tab[qKeep*q.l+j] = keep
	}
}

// Run quantises x into y (same length); x[0] is the element at flat
// index at (of a tensor whose channel is the flat index mod d).
func (q *Quant[T]) Run(y, x []T, at int) { q.run(y, x, at, streams[T](len(x), StreamBytes)) }

// run is Run on a part of a larger tensor, stream (StreamBytes) decided
// from the whole of it.
func (q *Quant[T]) run(y, x []T, at int, stream bool) {
	if len(y) != len(x) || at < 0 {
		panic(fmt.Sprintf("fqkern: Run on %d outputs, %d inputs at %d", len(y), len(x), at))
	}
	walk(q.l, len(x), at, func(i, p, n, rows int) {
		fwd(y[i:i+n*rows], x[i:i+n*rows], q.tab[p:], q.l, n, rows, q.div, q.zeros > 0, q.d == 1, stream)
	})
}

// walk cuts the elements [0, n) with x[0] at flat index at into calls of
// whole or partial table periods: fn(i, p, m, rows) covers elements
// [i, i+m·rows) in rows of m starting at table position p.
func walk(l, n, at int, fn func(i, p, m, rows int)) {
	i := 0
	if p := at % l; p != 0 && n > 0 {
		m := min(n, l-p)
		fn(0, p, m, 1)
		i = m
	}
	if rows := (n - i) / l; rows > 0 {
		fn(i, 0, l, rows)
		i += rows * l
	}
	if i < n {
		fn(i, 0, n-i, 1)
	}
}

// Bounds is the gradient parameter table of d channels: the nudged range
// of each channel (the min == max == 0 channel passes every gradient) and,
// for the adjoint, its d_min and d_max.
type Bounds[T tensorx.Float] struct {
	d, l int
	tab  []T // bRows rows of l positions
}

// BoundsSize returns the number of elements of the gradient table of
// d ≥ 1 channels (the buffer of Bounds.Init).
func BoundsSize(d int) int { return bRows * Period(d) }

// NewBounds returns the table of d ≥ 1 channels, every range [0, 0] until
// Set.
func NewBounds[T tensorx.Float](d int) *Bounds[T] {
	b := new(Bounds[T])
	b.Init(d, make([]T, BoundsSize(d)))
	return b
}

// Init makes b the table of d ≥ 1 channels in buf, of BoundsSize(d)
// elements (b keeps it; Init clears it), every range [0, 0] and every
// d_min, d_max 0 until Set and SetAdjoint.
func (b *Bounds[T]) Init(d int, buf []T) {
	l := Period(d)
	if len(buf) != bRows*l {
		panic(fmt.Sprintf("fqkern: table of %d elements for %d channels, want %d", len(buf), d, bRows*l))
	}
	clear(buf)
	*b = Bounds[T]{d: d, l: l, tab: buf}
}

// Period returns the table length (Period(d)).
func (b *Bounds[T]) Period() int { return b.l }

// Set sets channel c's range [lo, hi]; zero marks the min == max == 0
// channel (every gradient passes, nothing is below or above).
func (b *Bounds[T]) Set(c int, lo, hi T, zero bool) {
	if c < 0 || c >= b.d {
		panic(fmt.Sprintf("fqkern: channel %d of %d", c, b.d))
	}
	var pass T
	if zero {
		lo, hi, pass = T(math.Inf(-1)), T(math.Inf(1)), ones[T]()
	}
	for j := c; j < b.l; j += b.d {
		b.tab[bLo*b.l+j] = lo
		b.tab[bHi*b.l+j] = hi
		b.tab[bPass*b.l+j] = pass
	}
}

// SetAdjoint sets channel c's d_min and d_max for Adjoint.
func (b *Bounds[T]) SetAdjoint(c int, dmin, dmax T) {
	if c < 0 || c >= b.d {
		panic(fmt.Sprintf("fqkern: channel %d of %d", c, b.d))
	}
	for j := c; j < b.l; j += b.d {
		b.tab[bDMin*b.l+j] = dmin
		b.tab[bDMax*b.l+j] = dmax
	}
}

// Grad is the straight-through gradient of x[0:n] (x[0] at flat index
// at): bi = g where lo ≤ x ≤ hi (and everywhere in a zero channel), else
// 0; for x < lo it adds g to acc[j], for x > hi (and not below) to
// acc[l+j], j the element's table position, in float64. NaN inputs are
// neither in, below nor above. acc has 2·Period() elements, none of them
// −0 (a sum that starts at +0 never becomes −0): the kernels may skip the
// +0 terms of the in-range elements, which would turn a −0 into +0.
func (b *Bounds[T]) Grad(bi, g, x []T, at int, acc []float64) {
	if len(bi) != len(x) || len(g) != len(x) || len(acc) != 2*b.l || at < 0 {
		panic(fmt.Sprintf("fqkern: Grad on %d, %d, %d elements, %d sums at %d", len(bi), len(g), len(x), len(acc), at))
	}
	walk(b.l, len(x), at, func(i, p, n, rows int) {
		e := i + n*rows
		grad(bi[i:e], g[i:e], x[i:e], b.tab[p:], b.l, n, rows, acc[p:])
	})
}

// Fold adds Grad's per-position sums to the channels: below[c] += acc[j]
// and above[c] += acc[l+j] for j ≡ c (mod d), in increasing j.
func (b *Bounds[T]) Fold(acc, below, above []float64) {
	if len(acc) != 2*b.l || len(below) != b.d || len(above) != b.d {
		panic(fmt.Sprintf("fqkern: Fold of %d sums into %d and %d channels", len(acc), len(below), len(above)))
	}
	for j0 := 0; j0 < b.l; j0 += b.d {
		bs, as := acc[j0:j0+b.d], acc[b.l+j0:b.l+j0+b.d]
		for c := range below {
			below[c] += bs[c]
			above[c] += as[c]
		}
	}
}

// Adjoint is the adjoint of Grad in g for x[0:n] (x[0] at flat index at):
// out = dbi where lo ≤ x ≤ hi (everywhere in a zero channel), the
// channel's d_min where x < lo, its d_max where x > hi, else 0.
func (b *Bounds[T]) Adjoint(out, dbi, x []T, at int) {
	b.adjoint(out, dbi, x, at, streams[T](len(x), AdjointStreamBytes))
}

// adjoint is Adjoint on a part of a larger tensor, stream
// (AdjointStreamBytes) decided from the whole of it.
func (b *Bounds[T]) adjoint(out, dbi, x []T, at int, stream bool) {
	if len(out) != len(x) || len(dbi) != len(x) || at < 0 {
		panic(fmt.Sprintf("fqkern: Adjoint on %d, %d, %d elements at %d", len(out), len(dbi), len(x), at))
	}
	walk(b.l, len(x), at, func(i, p, n, rows int) {
		e := i + n*rows
		adj(out[i:e], dbi[i:e], x[i:e], b.tab[p:], b.l, n, rows, b.d == 1, stream)
	})
}

// The kernels' contract: tab is a table sliced at the first position (its
// rows l apart), the call covers rows·n elements in rows of n ≤ l, row r
// at elements [r·n, (r+1)·n) with positions 0..n−1 of tab.

// fwd dispatches the forward kernel (the dividing one if div; zeros if
// the table has zero channels, uni if it has one channel; the streaming
// assembly if stream).
func fwd[T tensorx.Float](y, x, tab []T, l, n, rows int, div, zeros, uni, stream bool) {
	check(len(x), len(tab), qRows, l, n, rows)
	if useAsm {
		switch ys := any(y).(type) {
		case []float32:
			yp, xp, tp := &ys[0], &any(x).([]float32)[0], &any(tab).([]float32)[0]
			if div {
				fwdDiv32(yp, xp, tp, l, n, rows, stream)
			} else {
				fwd32(yp, xp, tp, l, n, rows, stream)
			}
			return
		case []float64:
			yp, xp, tp := &ys[0], &any(x).([]float64)[0], &any(tab).([]float64)[0]
			if div {
				fwdDiv64(yp, xp, tp, l, n, rows, stream)
			} else {
				fwd64(yp, xp, tp, l, n, rows, stream)
			}
			return
		}
	}
	fwdGo(y, x, tab, l, n, rows, div, zeros, uni)
}

// grad dispatches the gradient kernel.
func grad[T tensorx.Float](bi, g, x, tab []T, l, n, rows int, acc []float64) {
	check(len(x), len(tab), bPass+1, l, n, rows)
	if len(acc) < l+n {
		panic("fqkern: sums too short")
	}
	if useAsm {
		switch bs := any(bi).(type) {
		case []float32:
			grad32(&bs[0], &any(g).([]float32)[0], &any(x).([]float32)[0], &any(tab).([]float32)[0], l, n, rows, &acc[0])
			return
		case []float64:
			grad64(&bs[0], &any(g).([]float64)[0], &any(x).([]float64)[0], &any(tab).([]float64)[0], l, n, rows, &acc[0])
			return
		}
	}
	gradGo(bi, g, x, tab, l, n, rows, acc)
}

// adj dispatches the adjoint kernel (uni if the table has one channel;
// the streaming assembly if stream).
func adj[T tensorx.Float](out, dbi, x, tab []T, l, n, rows int, uni, stream bool) {
	check(len(x), len(tab), bRows, l, n, rows)
	if useAsm {
		switch os := any(out).(type) {
		case []float32:
			adj32(&os[0], &any(dbi).([]float32)[0], &any(x).([]float32)[0], &any(tab).([]float32)[0], l, n, rows, stream)
			return
		case []float64:
			adj64(&os[0], &any(dbi).([]float64)[0], &any(x).([]float64)[0], &any(tab).([]float64)[0], l, n, rows, stream)
			return
		}
	}
	adjGo(out, dbi, x, tab, l, n, rows, uni)
}

// check validates a kernel call reading nrows table rows (the slices'
// other lengths equal len(x) by construction).
func check(nx, ntab, nrows, l, n, rows int) {
	if n < 1 || n > l || rows < 1 || nx != n*rows || ntab < (nrows-1)*l+n {
		panic(fmt.Sprintf("fqkern: kernel call on %d elements, rows %d of %d, table %d of period %d", nx, rows, n, ntab, l))
	}
}
