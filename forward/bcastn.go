package forward

import (
	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// N-ary broadcasting (NumPy's rules, as TensorFlow's BCastList) for ops
// whose operands and output differ in element type or number: the
// comparisons (two operands, bool output) and SelectV2 (three operands).
// Like bcastPlan, a plan collapses the output's dimensions (size-1
// dimensions dropped, neighbours with the same broadcast pattern merged)
// and keeps each operand's element strides, 0 along the dimensions it is
// broadcast in; bcastNRun hands the kernel runs of the innermost collapsed
// dimension, in which each operand either advances by one element or
// stays on one (a broadcast scalar).

// bcastMaxOps is the largest number of operands of a bcastNPlan.
const bcastMaxOps = 3

// bcastNPlan describes how up to bcastMaxOps operands broadcast to the
// output.
type bcastNPlan struct {
	outDims [tensorx.MaxRank]int // broadcast output shape (see out)
	outRank int
	n       int // output elements
	ops     int // number of operands
	rank    int // collapsed rank (>= 1 unless n == 0)
	dims    [tensorx.MaxRank]int
	st      [bcastMaxOps][tensorx.MaxRank]int
}

// out returns the broadcast output shape (p's own array).
func (p *bcastNPlan) out() []int { return p.outDims[:p.outRank] }

// newBcastNPlan plans the broadcast of the operand shapes (1 to
// bcastMaxOps of them). It returns ok == false if they are incompatible,
// an error for a result too large or of too high a rank.
func newBcastNPlan(shapes ...[]int) (p bcastNPlan, ok bool, err error) {
	p.ops = len(shapes)
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	if r > tensorx.MaxRank {
		// Check compatibility first: an incompatible pair is the error
		// TensorFlow reports.
		for i := 0; i < r; i++ {
			if _, ok := bcastNDim(shapes, r-1-i); !ok {
				return p, false, nil
			}
		}
		_, err := tensorx.Numel(make([]int, r)) // the rank error
		return p, true, err
	}
	for i := 0; i < r; i++ {
		d, ok := bcastNDim(shapes, r-1-i)
		if !ok {
			return p, false, nil
		}
		p.outDims[i] = d
	}
	p.outRank = r
	n, err := tensorx.Numel(p.out())
	if err != nil {
		return p, true, err
	}
	p.n = n
	if n == 0 {
		return p, true, nil
	}
	// Collapse: drop size-1 output dims, merge runs with equal patterns.
	var has [bcastMaxOps][tensorx.MaxRank]bool
	k := 0
	for i := 0; i < r; i++ {
		d := p.outDims[i]
		if d == 1 {
			continue
		}
		var h [bcastMaxOps]bool
		same := k > 0
		for j, s := range shapes {
			h[j] = dimFromEnd(s, r-1-i) == d
			same = same && has[j][k-1] == h[j]
		}
		if same {
			p.dims[k-1] *= d
			continue
		}
		p.dims[k] = d
		for j := range shapes {
			has[j][k] = h[j]
		}
		k++
	}
	if k == 0 { // every dimension is 1: one element each
		p.rank, p.dims[0] = 1, 1
		for j := range shapes {
			p.st[j][0] = 1
		}
		return p, true, nil
	}
	p.rank = k
	for j := range shapes {
		acc := 1
		for i := k - 1; i >= 0; i-- {
			if has[j][i] {
				p.st[j][i] = acc
				acc *= p.dims[i]
			}
		}
	}
	return p, true, nil
}

// bcastNDim returns the broadcast size of the dimension k from the end of
// the shapes, or ok == false if they disagree.
func bcastNDim(shapes [][]int, k int) (d int, ok bool) {
	d = 1
	for _, s := range shapes {
		switch e := dimFromEnd(s, k); {
		case e == d || e == 1:
		case d == 1:
			d = e
		default:
			return 0, false
		}
	}
	return d, true
}

// bcastNRow computes one run of the output, out[pos : pos+m], from the
// operands' elements starting at off[j], each advancing by inc[j] (0 or 1)
// per output element; s is the kernel's state (its slices). Rows are
// plain functions, not closures, so that running them allocates nothing.
type bcastNRow[S any] func(s *S, pos, m int, off, inc *[bcastMaxOps]int)

// bcastNRun calls row for every run of the output under plan p, splitting
// the output across threads in chunks of ewGrain elements, whose bounds
// depend only on the shapes.
func bcastNRun[S any](threads int, p *bcastNPlan, s *S, row bcastNRow[S]) {
	if p.n == 0 {
		return
	}
	if serial(threads, p.n, ewGrain) {
		bcastNRange(p, s, 0, p.n, row)
		return
	}
	// The closure's copies, so that p and s can stay on the caller's stack.
	pc, sc := *p, *s
	parallel.For(threads, p.n, ewGrain, func(lo, hi int) { bcastNRange(&pc, &sc, lo, hi, row) })
}

// bcastNRange calls row for the runs of output elements [lo, hi).
func bcastNRange[S any](p *bcastNPlan, s *S, lo, hi int, row bcastNRow[S]) {
	r := p.rank
	var idx [tensorx.MaxRank]int
	var off, inc [bcastMaxOps]int
	rem := lo
	for d := r - 1; d >= 0; d-- {
		idx[d] = rem % p.dims[d]
		rem /= p.dims[d]
		for j := 0; j < p.ops; j++ {
			off[j] += idx[d] * p.st[j][d]
		}
	}
	inner := p.dims[r-1]
	for j := 0; j < p.ops; j++ {
		inc[j] = p.st[j][r-1]
	}
	for pos := lo; pos < hi; {
		m := min(inner-idx[r-1], hi-pos)
		row(s, pos, m, &off, &inc)
		pos += m
		idx[r-1] += m
		for j := 0; j < p.ops; j++ {
			off[j] += m * inc[j]
		}
		if idx[r-1] < inner {
			continue
		}
		// Carry into the outer dimensions.
		for j := 0; j < p.ops; j++ {
			off[j] -= inner * inc[j]
		}
		idx[r-1] = 0
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			for j := 0; j < p.ops; j++ {
				off[j] += p.st[j][d]
			}
			if idx[d] < p.dims[d] {
				break
			}
			for j := 0; j < p.ops; j++ {
				off[j] -= p.dims[d] * p.st[j][d]
			}
			idx[d] = 0
		}
	}
}
