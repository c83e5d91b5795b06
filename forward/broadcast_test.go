package forward

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

func TestBroadcastShape(t *testing.T) {
	cases := []struct {
		a, b, want []int
		ok         bool
	}{
		{[]int{}, []int{}, []int{}, true},
		{[]int{2, 3}, []int{}, []int{2, 3}, true},
		{[]int{}, []int{4}, []int{4}, true},
		{[]int{2, 3}, []int{3}, []int{2, 3}, true},
		{[]int{2, 1}, []int{1, 3}, []int{2, 3}, true},
		{[]int{5, 1, 3}, []int{4, 1}, []int{5, 4, 3}, true},
		{[]int{0, 3}, []int{1, 3}, []int{0, 3}, true},
		{[]int{0}, []int{1}, []int{0}, true},
		{[]int{1}, []int{0}, []int{0}, true},
		{[]int{2, 3}, []int{4}, nil, false},
		{[]int{0}, []int{2}, nil, false},
		{[]int{2, 3}, []int{3, 3}, nil, false},
	}
	for _, c := range cases {
		got, ok := broadcastShape(c.a, c.b)
		if ok != c.ok || (ok && !tensorx.SameShape(got, c.want)) {
			t.Errorf("broadcastShape(%v, %v) = %v, %v; want %v, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
	if s := shapeDebugString([]int{2, 3}); s != "[2,3]" {
		t.Errorf("shapeDebugString = %q", s)
	}
	if s := shapeDebugString(nil); s != "[]" {
		t.Errorf("shapeDebugString(nil) = %q", s)
	}
	if err := bcastShapeError("AddV2", []int{2, 3}, []int{4}); err.Error() != "AddV2: Incompatible shapes: [2,3] vs. [4]" {
		t.Errorf("bcastShapeError: %q", err)
	}
}

func TestBcastPlanKinds(t *testing.T) {
	cases := []struct {
		a, b []int
		kind bcastKind
		rank int
	}{
		{[]int{2, 3}, []int{2, 3}, bcastSame, 1},
		{[]int{}, []int{}, bcastSame, 1},
		{[]int{1, 1}, []int{1}, bcastSame, 1},
		{[]int{3}, []int{1, 3}, bcastSame, 1},
		{[]int{2, 3}, []int{}, bcastScalarB, 1},
		{[]int{1}, []int{2, 3}, bcastScalarA, 1},
		{[]int{2, 3, 4}, []int{4}, bcastRowB, 2},
		{[]int{3, 4}, []int{2, 3, 4}, bcastRowA, 2},
		{[]int{2, 3, 4}, []int{1, 3, 4}, bcastRowB, 2},
		{[]int{2, 3}, []int{2, 1}, bcastGeneral, 2},
		{[]int{3, 1}, []int{1, 4}, bcastGeneral, 2},
		{[]int{2, 1, 3, 1}, []int{4, 1, 2}, bcastGeneral, 4},
	}
	for _, c := range cases {
		p, ok, err := newBcastPlan(c.a, c.b)
		if !ok || err != nil {
			t.Fatalf("newBcastPlan(%v, %v): ok=%v err=%v", c.a, c.b, ok, err)
		}
		if p.kind != c.kind || p.rank != c.rank {
			t.Errorf("newBcastPlan(%v, %v): kind %d rank %d, want kind %d rank %d", c.a, c.b, p.kind, p.rank, c.kind, c.rank)
		}
	}
	if _, ok, _ := newBcastPlan([]int{2}, []int{3}); ok {
		t.Error("newBcastPlan([2], [3]) should fail")
	}
}

// mtRandShapes returns two operand shapes that broadcast to a random output
// shape (rank 0..4, dims 0..3, empty dims rare): one operand has the full
// rank, the other a random rank, and each dimension is carried by both
// operands or by one of them with a 1 in the other.
func mtRandShapes(r *rand.Rand) (a, b []int) {
	rank := r.Intn(5)
	out := make([]int, rank)
	for i := range out {
		out[i] = 1 + r.Intn(3)
		if r.Intn(12) == 0 {
			out[i] = 0
		}
	}
	ka, kb := rank, rank-r.Intn(rank+1)
	a, b = make([]int, ka), make([]int, kb)
	for i := 0; i < rank; i++ {
		ia, ib := i-(rank-ka), i-(rank-kb)
		if ib < 0 {
			a[ia] = out[i]
			continue
		}
		switch r.Intn(3) {
		case 0:
			a[ia], b[ib] = out[i], out[i]
		case 1:
			a[ia], b[ib] = out[i], 1
		default:
			a[ia], b[ib] = 1, out[i]
		}
	}
	if r.Intn(2) == 0 {
		a, b = b, a
	}
	return a, b
}

// mtOperandIndex maps an output multi-index to the flat index of an operand
// of shape s (right-aligned, size-1 dims broadcast): the naive reference.
func mtOperandIndex(s, outIdx []int) int {
	off := len(outIdx) - len(s)
	flat := 0
	for i, d := range s {
		k := outIdx[off+i]
		if d == 1 {
			k = 0
		}
		flat = flat*d + k
	}
	return flat
}

// mtNaiveBinary computes f(a, b) with broadcasting by the naive index map.
func mtNaiveBinary(as, bs []int, a, b []float64, f func(x, y float64) float64) ([]int, []float64) {
	out, ok := broadcastShape(as, bs)
	if !ok {
		panic("mtNaiveBinary: incompatible")
	}
	n := 1
	for _, d := range out {
		n *= d
	}
	res := make([]float64, n)
	idx := make([]int, len(out))
	for flat := 0; flat < n; flat++ {
		rem := flat
		for d := len(out) - 1; d >= 0; d-- {
			idx[d] = rem % out[d]
			rem /= out[d]
		}
		res[flat] = f(a[mtOperandIndex(as, idx)], b[mtOperandIndex(bs, idx)])
	}
	return out, res
}

func mtRandSlice(r *rand.Rand, shape []int) []float64 {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = r.Float64()*4 - 2
	}
	return v
}

// mtSubRows is an inner-loop set for tests: out = 3a - b, which tells
// operands apart.
func mtSubRows() binRows[float64] {
	return binRows[float64]{
		vv: func(o, a, b []float64) {
			for i := range o {
				o[i] = 3*a[i] - b[i]
			}
		},
		sv: func(o []float64, a float64, b []float64) {
			for i := range o {
				o[i] = 3*a - b[i]
			}
		},
		vs: func(o, a []float64, b float64) {
			for i := range o {
				o[i] = 3*a[i] - b
			}
		},
	}
}

func TestBcastRunGrid(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	f := func(x, y float64) float64 { return 3*x - y }
	seen := map[bcastKind]bool{}
	for it := 0; it < 600; it++ {
		as, bs := mtRandShapes(r)
		a, b := mtRandSlice(r, as), mtRandSlice(r, bs)
		wantShape, want := mtNaiveBinary(as, bs, a, b, f)
		p, ok, err := newBcastPlan(as, bs)
		if !ok || err != nil {
			t.Fatalf("%v vs %v: plan ok=%v err=%v", as, bs, ok, err)
		}
		if !tensorx.SameShape(p.out(), wantShape) {
			t.Fatalf("%v vs %v: out shape %v, want %v", as, bs, p.out(), wantShape)
		}
		if p.n > 0 {
			seen[p.kind] = true
		}
		got := make([]float64, p.n)
		bcastRun(1, &p, got, a, b, mtSubRows())
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v vs %v (kind %d): element %d = %v, want %v", as, bs, p.kind, i, got[i], want[i])
			}
		}
		// The strided loop must give the same result from any starting
		// point (parallel chunks start mid-row).
		if p.n > 1 {
			got2 := make([]float64, p.n)
			cut := 1 + r.Intn(p.n-1)
			bcastStrided(&p, got2, a, b, 0, cut, mtSubRows())
			bcastStrided(&p, got2, a, b, cut, p.n, mtSubRows())
			for i := range want {
				if got2[i] != want[i] {
					t.Fatalf("%v vs %v: strided split at %d: element %d = %v, want %v", as, bs, cut, i, got2[i], want[i])
				}
			}
		}
	}
	for k := bcastSame; k <= bcastGeneral; k++ {
		if !seen[k] {
			t.Errorf("the random grid never produced loop kind %d", k)
		}
	}
}

// TestBcastRunParallel checks every loop kind on tensors large enough to be
// split across threads, against the naive reference.
func TestBcastRunParallel(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	f := func(x, y float64) float64 { return 3*x - y }
	for _, c := range []struct{ a, b []int }{
		{[]int{70000}, []int{70000}},
		{[]int{}, []int{50001}},
		{[]int{50001}, []int{1}},
		{[]int{300, 257}, []int{257}},
		{[]int{257}, []int{300, 257}},
		{[]int{300, 1, 97}, []int{1, 5, 97}},
		{[]int{1001, 1}, []int{1, 67}},
	} {
		t.Run(fmt.Sprint(c.a, c.b), func(t *testing.T) {
			a, b := mtRandSlice(r, c.a), mtRandSlice(r, c.b)
			_, want := mtNaiveBinary(c.a, c.b, a, b, f)
			p, _, _ := newBcastPlan(c.a, c.b)
			for _, th := range []int{1, 3} {
				got := make([]float64, p.n)
				bcastRun(th, &p, got, a, b, mtSubRows())
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("threads %d: element %d = %v, want %v", th, i, got[i], want[i])
					}
				}
			}
		})
	}
}
