package autodiff

import (
	"math"
	"testing"
)

// countNonFinite against a naive count, for every length up to 11 and a
// non-finite element at every position (the fast path works four at a
// time, then the tail), with finite extremes around it.
func TestCountNonFinite(t *testing.T) {
	finite := []float64{0, math.Copysign(0, -1), 1, -2.5, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.MaxFloat32}
	bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}
	for n := 0; n <= 11; n++ {
		s := make([]float64, n)
		for i := range s {
			s[i] = finite[i%len(finite)]
		}
		checkCount(t, s)
		for p := 0; p < n; p++ {
			for _, b := range bad {
				s2 := append([]float64(nil), s...)
				s2[p] = b
				checkCount(t, s2)
				if p+2 < n {
					s2[p+2] = bad[(p+1)%3]
					checkCount(t, s2)
				}
			}
		}
	}
}

// checkCount compares countNonFinite with naiveCount on s and on s in
// float32 (where MaxFloat64 becomes +Inf).
func checkCount(t *testing.T, s []float64) {
	t.Helper()
	got, ok := countNonFinite(s)
	if want, wantOK := naiveCount(s); ok != wantOK || got != want {
		t.Fatalf("float64 %v: got %+v %v, want %+v %v", s, got, ok, want, wantOK)
	}
	s32 := make([]float32, len(s))
	for i, v := range s {
		s32[i] = float32(v)
	}
	got, ok = countNonFinite(s32)
	if want, wantOK := naiveCount(s32); ok != wantOK || got != want {
		t.Fatalf("float32 %v: got %+v %v, want %+v %v", s32, got, ok, want, wantOK)
	}
}

func naiveCount[T float32 | float64](s []T) (c nonFiniteCt, ok bool) {
	ok = true
	for i, v := range s {
		switch x := float64(v); {
		case math.IsNaN(x):
			c.nan++
		case math.IsInf(x, 1):
			c.posInf++
		case math.IsInf(x, -1):
			c.negInf++
		default:
			continue
		}
		if ok {
			c.first, ok = i, false
		}
	}
	return c, ok
}
