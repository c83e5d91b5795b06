// Package redkern holds the summation loops of the reductions: Sum and
// Mean (package forward) and BiasAddGrad (package backward) describe their
// reduction as a Plan and call Into.
//
// Accumulation happens in the accumulator type A (float64 for float
// inputs, int64 for integers) and is rounded once into the output. Every
// output element is summed by one goroutine in a fixed order that depends
// only on the shapes (long reductions with few outputs are cut into fixed
// chunks of rows whose partial sums are added in chunk order), so results
// are bit-identical for any thread count.
package redkern

import (
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Num are the element types reductions work on.
type Num interface {
	float32 | float64 | int32 | int64
}

// Scratch hands out scratch memory: Scratch(n) returns a slice of n
// accumulators, valid until the calling kernel returns, with unspecified
// contents. Into asks for one only when the output's element type is not
// the accumulator's, and for the intermediate and partial sums of
// multi-step and chunked reductions. (Into is generic over the Scratch
// type, not given an interface value or a closure, so that handing it the
// kernel's allocator costs no allocation.)
type Scratch[A Num] interface {
	Scratch(n int) ([]A, error)
}

// serial reports whether parallel.For(threads, n, grain, fn) would run fn
// on the caller's goroutine alone; the loops are then called directly,
// without a closure (which would cost an allocation).
func serial(threads, n, grain int) bool { return threads <= 1 || n <= max(grain, 1) }

// elemGrain is the number of input elements per parallel chunk.
const elemGrain = 1 << 15

// qBlock is the widest column block one task sums.
const qBlock = 2048

// fewTasks and maxChunks: a reduction with fewer output tasks than
// fewTasks and enough input is cut along the reduced axis into at most
// maxChunks chunks of rows.
const (
	fewTasks  = 8
	maxChunks = 32
)

// Plan is a reduction with size-1 dimensions dropped and neighbouring
// dimensions of the same kind (kept or reduced) merged into runs.
type Plan struct {
	n     int // number of runs
	size  [tensorx.MaxRank]int
	red   [tensorx.MaxRank]bool
	count int // input elements summed into each output element
}

// NewPlan returns the plan of reducing a tensor of the given shape over
// the dimensions i with bitmap[i] set.
func NewPlan(shape []int, bitmap [tensorx.MaxRank]bool) Plan {
	p := Plan{count: 1}
	for i, d := range shape {
		if bitmap[i] {
			p.count *= d
		}
		if d == 1 {
			continue
		}
		if p.n > 0 && p.red[p.n-1] == bitmap[i] {
			p.size[p.n-1] *= d
			continue
		}
		p.size[p.n], p.red[p.n] = d, bitmap[i]
		p.n++
	}
	return p
}

// Into writes the sums (or, if mean, the means) of src over the plan's
// reduced runs into out, which has one element per output position, using
// up to threads goroutines. A holds the partial sums; scratch memory comes
// from scratch. The innermost reduced run is summed first, then the next one out,
// each step over the previous step's sums.
func Into[T, A Num, S Scratch[A]](threads int, scratch S, src []T, p Plan, out []T, mean bool) error {
	if len(out) == 0 {
		return nil
	}
	// The sums go straight into out when it has the accumulator's type.
	final, direct := any(out).([]A)
	if !direct {
		var err error
		if final, err = scratch.Scratch(len(out)); err != nil {
			return err
		}
	}
	var runs [tensorx.MaxRank]int
	var red [tensorx.MaxRank]bool
	n := p.n
	copy(runs[:], p.size[:n])
	copy(red[:], p.red[:n])
	var cur []A // the partial sums of the previous step; nil before the first
	for {
		// Reduce the innermost reduced run: [P, R, Q] -> [P, Q].
		j := -1
		for i := n - 1; i >= 0; i-- {
			if red[i] {
				j = i
				break
			}
		}
		if j < 0 {
			break
		}
		P, Q := 1, 1
		more := false // another reduced run remains before j
		for i := 0; i < j; i++ {
			P *= runs[i]
			more = more || red[i]
		}
		for i := j + 1; i < n; i++ {
			Q *= runs[i]
		}
		R := runs[j]
		dst := final
		if more {
			var err error
			if dst, err = scratch.Scratch(P * Q); err != nil {
				return err
			}
		}
		var err error
		if cur == nil {
			err = middle(threads, scratch, src, dst, P, R, Q)
		} else {
			err = middle(threads, scratch, cur, dst, P, R, Q)
		}
		if err != nil {
			return err
		}
		cur = dst
		// Remove run j; the kept runs on either side become one.
		switch {
		case j > 0 && j < n-1:
			runs[j-1] *= runs[j+1]
			copy(runs[j:], runs[j+2:n])
			copy(red[j:], red[j+2:n])
			n -= 2
		default:
			copy(runs[j:], runs[j+1:n])
			copy(red[j:], red[j+1:n])
			n--
		}
	}
	// The elementwise passes below run serially without a closure (which
	// would cost an allocation) when they fit one chunk.
	one := serial(threads, len(out), elemGrain)
	if cur == nil { // nothing to reduce: a copy
		if one {
			convert(final, src[:len(out)])
		} else {
			parallel.For(threads, len(out), elemGrain, func(lo, hi int) {
				convert(final[lo:hi], src[lo:hi])
			})
		}
	}
	switch {
	case mean:
		c := A(p.count)
		if one {
			divide(out, final, c)
		} else {
			parallel.For(threads, len(out), elemGrain, func(lo, hi int) {
				divide(out[lo:hi], final[lo:hi], c)
			})
		}
	case !direct:
		if one {
			convert(out, final)
		} else {
			parallel.For(threads, len(out), elemGrain, func(lo, hi int) {
				convert(out[lo:hi], final[lo:hi])
			})
		}
	}
	return nil
}

// convert sets dst[i] = D(src[i]).
func convert[D, S Num](dst []D, src []S) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] = D(v)
	}
}

// divide sets out[i] = T(sums[i] / c) (float only: 0/0 is NaN).
func divide[T, A Num](out []T, sums []A, c A) {
	sums = sums[:len(out)]
	for i, v := range sums {
		out[i] = T(v / c)
	}
}

// middle sums src viewed as [P, R, Q] over its middle axis into dst
// [P, Q]. Each output element is summed in order r = 0..R-1 by one task,
// or, when there are few outputs and many rows (a long reduction that one
// goroutine would do alone), in fixed chunks of rows whose partial sums are
// then added in chunk order. The choice and the chunks depend only on the
// shape, so results do not depend on the thread count.
func middle[E, A Num, S Scratch[A]](threads int, scratch S, src []E, dst []A, P, R, Q int) error {
	if R == 0 {
		clear(dst)
		return nil
	}
	qb := min(Q, qBlock)
	nqb := (Q + qb - 1) / qb
	if P*nqb < fewTasks && R*Q >= 4*elemGrain {
		rc := max(1, elemGrain/Q, (R+maxChunks-1)/maxChunks) // rows per chunk
		nc := (R + rc - 1) / rc
		part, err := scratch.Scratch(nc * P * Q)
		if err != nil {
			return err
		}
		parallel.For(threads, nc, 1, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				r0, r1 := c*rc, min(R, (c+1)*rc)
				for p := 0; p < P; p++ {
					sumRows(src[(p*R+r0)*Q:(p*R+r1)*Q], part[(c*P+p)*Q:(c*P+p+1)*Q], r1-r0, Q)
				}
			}
		})
		n := P * Q
		parallel.For(threads, n, max(1, elemGrain/nc), func(lo, hi int) {
			d := dst[lo:hi]
			copy(d, part[lo:hi])
			for c := 1; c < nc; c++ {
				for i, v := range part[c*n+lo : c*n+hi] {
					d[i] += v
				}
			}
		})
		return nil
	}
	if Q == 1 {
		grain := max(1, elemGrain/R)
		if serial(threads, P, grain) {
			lastAxis(src, dst, R, 0, P)
		} else {
			parallel.For(threads, P, grain, func(lo, hi int) { lastAxis(src, dst, R, lo, hi) })
		}
		return nil
	}
	grain := max(1, elemGrain/(R*qb))
	if serial(threads, P*nqb, grain) {
		blocks(src, dst, R, Q, qb, 0, P*nqb)
	} else {
		parallel.For(threads, P*nqb, grain, func(lo, hi int) { blocks(src, dst, R, Q, qb, lo, hi) })
	}
	return nil
}

// lastAxis sums the rows p in [lo, hi) of src viewed as [P, R] into
// dst[p].
func lastAxis[S, A Num](src []S, dst []A, R, lo, hi int) {
	for p := lo; p < hi; p++ {
		dst[p] = sumContig[S, A](src[p*R : (p+1)*R])
	}
}

// blocks does middle's tasks [lo, hi): task t sums a block of up to
// qb columns of one [R, Q] slice of src over its R rows.
func blocks[S, A Num](src []S, dst []A, R, Q, qb, lo, hi int) {
	nqb := (Q + qb - 1) / qb
	for t := lo; t < hi; t++ {
		p, q0 := t/nqb, (t%nqb)*qb
		q1 := min(q0+qb, Q)
		base := p * R * Q
		sumRows(src[base+q0:base+(R-1)*Q+q1], dst[p*Q+q0:p*Q+q1], R, Q)
	}
}

// sumRows sets d[i] to the sum over r < rows of src[r*stride+i]: the
// columns of a block of rows (src starts at the block's first element).
// A single column is summed with sumContig.
func sumRows[S, A Num](src []S, d []A, rows, stride int) {
	if stride == 1 && len(d) == 1 {
		d[0] = sumContig[S, A](src[:rows])
		return
	}
	for i, v := range src[:len(d)] {
		d[i] = A(v)
	}
	for r := 1; r < rows; r++ {
		s := src[r*stride : r*stride+len(d)]
		for i, v := range s {
			d[i] += A(v)
		}
	}
}

// sumContig sums x in A with four interleaved partial sums.
func sumContig[S, A Num](x []S) A {
	var s0, s1, s2, s3 A
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		s0 += A(v[0])
		s1 += A(v[1])
		s2 += A(v[2])
		s3 += A(v[3])
	}
	for ; i < len(x); i++ {
		s0 += A(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}
