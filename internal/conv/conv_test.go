package conv

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

func TestPlanChunks(t *testing.T) {
	for _, c := range []struct{ n, p, kcol int }{{5, 484, 576}, {1000, 36, 9}, {1, 1023, 288}, {3, 7, 1 << 20}, {2, 1, 1}, {50, 100, 1}, {2, 5000, 1}} {
		ch := planChunks(c.n, c.p, c.kcol)
		next := 0
		for i := 0; i < ch.count; i++ {
			r0, r1 := ch.bounds(i)
			if r0 != next || r1 <= r0 || r1-r0 > ch.rows {
				t.Fatalf("%+v: chunk %d = [%d,%d), rows %d, next %d", c, i, r0, r1, ch.rows, next)
			}
			if !ch.whole && r0/c.p != (r1-1)/c.p {
				t.Fatalf("%+v: chunk %d straddles images", c, i)
			}
			if ch.whole && (r0%c.p != 0 || r1%c.p != 0) {
				t.Fatalf("%+v: chunk %d is not whole images", c, i)
			}
			next = r1
		}
		if next != c.n*c.p {
			t.Fatalf("%+v: chunks end at %d", c, next)
		}
		if ch.rows*c.kcol > chunkElems && ch.rows > 1 {
			t.Fatalf("%+v: chunk of %d rows exceeds the budget", c, ch.rows)
		}
	}
}

// TestFilterChunks checks the filter gradient's chunk count: one
// chunk up to filterRows positions, else a multiple of
// filterSplit (or one chunk per position) of at most filterRows
// positions each, none empty.
func TestFilterChunks(t *testing.T) {
	for _, total := range []int{1, 2, 3, 100, filterRows, filterRows + 1, 5, 6272, 25088, 32768, 1 << 20, 3*filterRows + 7} {
		count := filterChunks(total)
		switch {
		case total <= filterRows && count != 1:
			t.Errorf("total %d: %d chunks, want 1", total, count)
		case total > filterRows && count%filterSplit != 0 && count != total:
			t.Errorf("total %d: %d chunks, not a multiple of %d", total, count, filterSplit)
		}
		for c := range count {
			r0, r1 := total*c/count, total*(c+1)/count
			if r1 <= r0 || r1-r0 > filterRows {
				t.Errorf("total %d: chunk %d of %d = [%d, %d)", total, c, count, r0, r1)
			}
		}
	}
}

// TestKernels checks Forward, BackpropInput and BackpropFilter on NHWC
// slices against the naive float64 loops of testutil.NaiveConv, over
// random geometries (strides, dilations, paddings, groups, the direct
// paths, unit and larger strides), in float64 and float32 with 1 and 3
// threads, with the filter gradient's chunking as shipped and shrunk;
// results must be bit-identical across thread counts.
func TestKernels(t *testing.T) {
	r := rand.New(rand.NewSource(17))
	iters := 150
	if testutil.Long() {
		iters = 2000
	}
	ran := 0
	for it := range iters {
		padding := []string{"VALID", "SAME", "EXPLICIT"}[r.Intn(3)]
		var pads [4]int
		if padding == "EXPLICIT" {
			pads = [4]int{r.Intn(3), r.Intn(3), r.Intn(3), r.Intn(3)}
		}
		groups, cf := 1+r.Intn(3), 1+r.Intn(3)
		k := 1 + r.Intn(3)
		s, d := 1+r.Intn(3), 1+r.Intn(2)
		if it%5 == 0 {
			k, s = 1, 1 // direct when unpadded
		}
		ng, ok := testutil.NewNaiveConv(false, 1+r.Intn(3), 1+r.Intn(8), 1+r.Intn(8), groups*cf,
			k, 1+r.Intn(3), cf, groups*(1+r.Intn(3)), s, 1+r.Intn(3), d, 1+r.Intn(2), padding, pads)
		if !ok || ng.OH == 0 || ng.OW == 0 {
			continue
		}
		g := Geom{N: ng.N, H: ng.H, W: ng.W, C: ng.C, KH: ng.KH, KW: ng.KW, CF: ng.CF, O: ng.O,
			G: groups, OG: ng.O / groups, OH: ng.OH, OW: ng.OW,
			SH: ng.SH, SW: ng.SW, DH: ng.DH, DW: ng.DW, PT: ng.PT, PB: ng.PB, PL: ng.PL, PR: ng.PR}
		ran++
		name := fmt.Sprintf("#%d %+v", it, g)
		checkKernels[float64](t, name, &g, &ng, r, 1e-13)
		checkKernels[float32](t, name, &g, &ng, r, 3e-6)
		if it%3 == 0 {
			restore := SetFilterChunking(1+r.Intn(7), 1+r.Intn(200))
			checkKernels[float32](t, name+" small chunks", &g, &ng, r, 3e-6)
			restore()
		}
	}
	if ran < iters/3 {
		t.Fatalf("only %d of %d geometries ran: the generator is off", ran, iters)
	}
}

// checkKernels runs the three kernels of g in T on random operands with
// 1 and 3 threads and compares them with the naive loops of ng (relative
// to the sum of the terms' magnitudes) and with each other (bit for
// bit).
func checkKernels[T Float](t *testing.T, name string, g *Geom, ng *testutil.NaiveConv, r *rand.Rand, rel float64) {
	t.Helper()
	round := func(v []float64) []T {
		out := make([]T, len(v))
		for i, x := range v {
			out[i] = T(x)
		}
		return out
	}
	wide := func(v []T) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	nx, nf, ny := g.N*g.H*g.W*g.C, g.KH*g.KW*g.CF*g.O, g.N*g.OH*g.OW*g.O
	x, f, dy := round(testutil.Normal(r, nx)), round(testutil.Normal(r, nf)), round(testutil.Normal(r, ny))
	xv, fv, dyv := wide(x), wide(f), wide(dy)
	xa, fa, dya := testutil.Abs(xv), testutil.Abs(fv), testutil.Abs(dyv)
	wants := [3][2][]float64{
		{ng.Forward(xv, fv), ng.Forward(xa, fa)},
		{ng.BackpropInput(fv, dyv), ng.BackpropInput(fa, dya)},
		{ng.BackpropFilter(xv, dyv), ng.BackpropFilter(xa, dya)},
	}
	var first [3][]T
	for _, threads := range []int{1, 3} {
		nan := T(math.NaN())
		fill := func(n int) []T {
			v := make([]T, n)
			for i := range v {
				v[i] = nan // every element must be written
			}
			return v
		}
		y, dx, df := fill(ny), fill(nx), fill(nf)
		Forward(y, x, f, g, threads)
		BackpropInput(dx, f, dy, g, threads, fill(BackpropInputScratch(g, threads)))
		na, np := BackpropFilterScratch(g)
		BackpropFilter(df, x, dy, g, threads, make([]float64, na), fill(np))
		got := [3][]T{y, dx, df}
		for i, op := range []string{"Forward", "BackpropInput", "BackpropFilter"} {
			for e, v := range got[i] {
				want, bound := wants[i][0][e], wants[i][1][e]
				if d := math.Abs(float64(v) - want); !(d <= rel*bound+1e-300) {
					t.Fatalf("%s %T t%d %s: element %d = %v, want %v", name, v, threads, op, e, v, want)
				}
			}
			if threads == 1 {
				first[i] = got[i]
			} else if e := testutil.BitDiff(first[i], got[i], false); e >= 0 {
				t.Fatalf("%s %T %s: element %d differs between 1 and %d threads", name, got[i][0], op, e, threads)
			}
		}
	}
}

// TestTranspose checks the blocked transposition against its definition
// on shapes around the block size, converting float64 to float32.
func TestTranspose(t *testing.T) {
	for _, rows := range []int{1, 5, 16, 17, 40} {
		for _, cols := range []int{1, 3, 16, 33} {
			src := make([]float64, rows*cols)
			for i := range src {
				src[i] = float64(i) + 0.25
			}
			dst := make([]float32, rows*cols)
			transpose(dst, src, rows, cols)
			check(t, dst, src, rows, cols)
			// The same in pieces of rows, as the threads of
			// BackpropFilter's last round write it.
			clear(dst)
			for lo := 0; lo < rows; lo += 7 {
				transposeRows(dst, src, rows, cols, lo, min(lo+7, rows))
			}
			check(t, dst, src, rows, cols)
		}
	}
}

// check fails t unless dst [cols][rows] is src [rows][cols] transposed.
func check(t *testing.T, dst []float32, src []float64, rows, cols int) {
	t.Helper()
	for r := range rows {
		for c := range cols {
			if got, want := dst[c*rows+r], float32(src[r*cols+c]); got != want {
				t.Fatalf("%dx%d: dst[%d][%d] = %v, want %v", rows, cols, c, r, got, want)
			}
		}
	}
}
