package fracpool

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The loops are checked against naive references written from the spec
// (§4, §5) one output element at a time, bit for bit, in every element
// type and for 1 and 3 threads, on random geometries and sequences of
// both modes, with both cell kinds.

// kernelCase is one random geometry with its sequences.
type kernelCase struct {
	n, nd, h, w, c int
	rows, cols     []int64
	overlapping    bool
}

func (k kernelCase) String() string {
	return fmt.Sprintf("[%d(%d),%d,%d,%d] rows %v cols %v ov=%v", k.n, k.nd, k.h, k.w, k.c, k.rows, k.cols, k.overlapping)
}

// kernelCases returns random geometries: small ones, ones with cells
// larger than the fused size, and ones large enough to split over
// threads.
func kernelCases(r *rand.Rand) []kernelCase {
	var cs []kernelCase
	for i := 0; i < 40; i++ {
		var k kernelCase
		k.n, k.c = 1+r.Intn(3), 1+r.Intn(6)
		k.h, k.w = 1+r.Intn(20), 1+r.Intn(20)
		if i%8 == 0 { // large: parallel paths
			k.n, k.h, k.w, k.c = 4, 30+r.Intn(10), 30+r.Intn(10), 16
		}
		k.nd = 1 + r.Intn(k.n)
		oh, ow := 1+r.Intn(k.h), 1+r.Intn(k.w)
		if i%5 == 0 { // few, large cells
			oh, ow = 1+r.Intn(min(k.h, 2)), 1+r.Intn(min(k.w, 2))
		}
		g := philox.New(r.Uint64(), r.Uint64())
		k.rows, k.cols = make([]int64, oh+1), make([]int64, ow+1)
		Sequence(k.rows, k.h, oh, &g, r.Intn(2) == 0)
		Sequence(k.cols, k.w, ow, &g, r.Intn(2) == 0)
		k.overlapping = r.Intn(2) == 0
		cs = append(cs, k)
	}
	return cs
}

// TestKernelsAgainstReferences checks AvgPool, MaxPool, AvgGradDisjoint /
// AvgGradOverlap, MaxGrad and MaxGradGrad against the references.
func TestKernelsAgainstReferences(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, k := range kernelCases(r) {
		xv := make([]float64, k.n*k.h*k.w*k.c)
		for i := range xv {
			if r.Intn(2) == 0 {
				xv[i] = float64(r.Intn(5) - 2) // ties
			} else {
				xv[i] = r.NormFloat64() * 10
			}
		}
		checkKernels(t, k, convert[float64](xv), r)
		checkKernels(t, k, convert[float32](xv), r)
		checkKernels(t, k, convert[int32](xv), r)
		checkKernels(t, k, convert[int64](xv), r)
	}
}

func convert[T Num](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

// same reports the first index where a and b differ in bits (NaNs equal),
// or −1.
func same[T Num](a, b []T) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if a[i] != b[i] && (a[i] == a[i] || b[i] == b[i]) {
			return i
		}
		if a[i] == 0 && math.Signbit(float64(a[i])) != math.Signbit(float64(b[i])) { // −0 against +0
			return i
		}
	}
	return -1
}

func checkKernels[T Num](t *testing.T, k kernelCase, x []T, r *rand.Rand) {
	t.Helper()
	n, nd, h, w, c := k.n, k.nd, k.h, k.w, k.c
	oh, ow := len(k.rows)-1, len(k.cols)-1
	name := fmt.Sprintf("%T %v", x[0], k)
	wantAvg := testutil.FracPoolAvg(x, n, h, w, c, k.rows, k.cols, k.overlapping)
	am := testutil.FracPoolArgmax(x, n, h, w, c, k.rows, k.cols, k.overlapping)
	y := make([]T, len(am))
	for i, p := range am {
		y[i] = x[p]
	}
	dy := make([]T, nd*oh*ow*c)
	for i := range dy {
		dy[i] = T(r.Intn(19) - 9)
	}
	wantGrad := testutil.FracPoolAvgGrad(dy, n, nd, h, w, c, k.rows, k.cols, k.overlapping)
	dym := make([]T, len(y))
	for i := range dym {
		dym[i] = T(r.Intn(19) - 9)
	}
	wantMaxGrad := make([]T, len(x))
	for i, p := range am {
		wantMaxGrad[p] += dym[i]
	}
	g := make([]T, len(x))
	for i := range g {
		g[i] = T(r.Intn(19) - 9)
	}
	wantGG := make([]T, len(am))
	for i, p := range am {
		wantGG[i] = g[p]
	}
	for _, threads := range []int{1, 3} {
		got := make([]T, len(wantAvg))
		AvgPool(got, x, n, h, w, c, k.rows, k.cols, k.overlapping, threads)
		if i := same(got, wantAvg); i >= 0 {
			t.Fatalf("%s: AvgPool element %d = %v, want %v", name, i, got[i], wantAvg[i])
		}
		MaxPool(got, x, n, h, w, c, k.rows, k.cols, k.overlapping, threads)
		if i := same(got, y); i >= 0 {
			t.Fatalf("%s: MaxPool element %d = %v, want %v", name, i, got[i], y[i])
		}
		dx := make([]T, len(x))
		for i := range dx {
			dx[i] = 77 // every element must be written
		}
		clear(dx[nd*h*w*c:])
		if k.overlapping {
			nv, ncover, naccs := AvgGradOverlapScratch(nd, h, w, c, oh, ow)
			AvgGradOverlap(dx, dy, nd, h, w, c, k.rows, k.cols, make([]float64, nv), make([]int64, ncover), make([]float64, naccs), threads)
		} else {
			AvgGradDisjoint(dx, dy, nd, h, w, c, k.rows, k.cols, threads)
		}
		if i := same(dx, wantGrad); i >= 0 {
			t.Fatalf("%s: average gradient element %d = %v, want %v", name, i, dx[i], wantGrad[i])
		}
		s := MaxScratch[T]{Argmax: make([]int64, n*c), Max: make([]T, n*c), Bad: make([]bool, n)}
		dmx := make([]T, len(x))
		if !MaxGrad(dmx, dym, x, y, n, h, w, c, k.rows, k.cols, k.overlapping, s, threads) {
			t.Fatalf("%s: MaxGrad refused its own pooling", name)
		}
		if i := same(dmx, wantMaxGrad); i >= 0 {
			t.Fatalf("%s: MaxGrad element %d = %v, want %v", name, i, dmx[i], wantMaxGrad[i])
		}
		gg := make([]T, len(y))
		if !MaxGradGrad(gg, g, x, y, n, h, w, c, k.rows, k.cols, k.overlapping, s, threads) {
			t.Fatalf("%s: MaxGradGrad refused its own pooling", name)
		}
		if i := same(gg, wantGG); i >= 0 {
			t.Fatalf("%s: MaxGradGrad element %d = %v, want %v", name, i, gg[i], wantGG[i])
		}
		// A stale maximum is reported.
		stale := slices.Clone(y)
		stale[len(stale)-1]++
		if MaxGrad(make([]T, len(x)), dym, x, stale, n, h, w, c, k.rows, k.cols, k.overlapping, s, threads) {
			t.Fatalf("%s: MaxGrad accepted a stale orig_output", name)
		}
	}
}
