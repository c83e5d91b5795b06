package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// rowsCase is a Rows operand with rows×(nseg·seg) elements, its offsets
// (negative: zero segment) and the matrix it stands for.
type rowsCase struct {
	rows, nseg, seg int
	data            []float64
	offs            [][]int // [row][segment]
	dense           []float64
}

func newRowsCase(rng *rand.Rand, rows, nseg, seg int) *rowsCase {
	rc := &rowsCase{rows: rows, nseg: nseg, seg: seg}
	rc.data = make([]float64, seg+rng.IntN(3*seg+5))
	for i := range rc.data {
		rc.data[i] = rng.Float64()*2 - 1
	}
	cols := nseg * seg
	rc.dense = make([]float64, rows*cols)
	rc.offs = make([][]int, rows)
	for i := range rows {
		rc.offs[i] = make([]int, nseg)
		for s := range nseg {
			if rng.IntN(5) == 0 {
				rc.offs[i][s] = -1 - rng.IntN(3)
				continue
			}
			o := rng.IntN(len(rc.data) - seg + 1)
			rc.offs[i][s] = o
			copy(rc.dense[i*cols+s*seg:i*cols+(s+1)*seg], rc.data[o:o+seg])
		}
	}
	return rc
}

func rowsOf[T Float](rc *rowsCase) Rows[T] {
	return Rows[T]{
		Data: convert[T](rc.data),
		Seg:  rc.seg,
		Map: OffsetsFunc(func(i0, n int, dst []int, ld int) {
			for r := range n {
				for s, o := range rc.offs[i0+r] {
					dst[s*ld+r] = o
				}
			}
		}),
	}
}

// rowsGemmCase returns the dense case GemmRowsA (which = "A") or GemmRowsB
// computes, with op(B) (or op(A)) transposed per trans.
func rowsGemmCase(rng *rand.Rand, which string, trans bool, m, n, k, nseg, seg int, beta float64) (*gemmCase, *rowsCase) {
	var rc *rowsCase
	var tc *gemmCase
	if which == "A" {
		rc = newRowsCase(rng, m, nseg, seg)
		tc = newCase(rng, false, trans, m, n, k, 1, 1, beta)
		tc.a, tc.lda = rc.dense, k
	} else {
		rc = newRowsCase(rng, k, nseg, seg)
		tc = newCase(rng, trans, false, m, n, k, 1, 1, beta)
		tc.b, tc.ldb = rc.dense, n
	}
	return tc, rc
}

func runRows[T Float](tc *gemmCase, rc *rowsCase, which string, threads int) []T {
	c := convert[T](tc.c)
	if tc.cNaN {
		for i := range tc.m {
			for j := range tc.n {
				c[i*tc.ldc+j] = T(math.NaN())
			}
		}
	}
	if which == "A" {
		GemmRowsA(tc.m, tc.n, tc.k, rowsOf[T](rc), tc.transB, convert[T](tc.b), tc.ldb, T(tc.beta), c, tc.ldc, threads)
	} else {
		GemmRowsB(tc.transA, tc.m, tc.n, tc.k, convert[T](tc.a), tc.lda, rowsOf[T](rc), T(tc.beta), c, tc.ldc, threads)
	}
	return c
}

// TestGemmRows checks GemmRowsA and GemmRowsB against float64 loops on a
// grid of shapes and segment lengths (segments shorter and longer than a
// k block, panels inside one segment and across several), on every path
// and blocking, and that 1, 2 and 3 threads give the same bits.
func TestGemmRows(t *testing.T) {
	type shape struct{ m, n, nseg, seg int }
	shapesA := []shape{{1, 1, 1, 1}, {7, 16, 9, 16}, {13, 32, 9, 16}, {40, 17, 3, 5}, {6, 33, 2, 40}, {31, 16, 9, 32}, {20, 8, 1, 300}, {64, 48, 5, 64}}
	shapesB := []shape{{1, 1, 1, 1}, {32, 144, 50, 16}, {13, 9, 37, 3}, {6, 48, 20, 16}, {7, 40, 31, 20}, {36, 64, 70, 32}, {5, 8, 9, 8}, {12, 24, 300, 24}, {32, 700, 9, 1}, {9, 70, 27, 3}}
	betas := []float64{0, 1, -0.5}
	for _, p := range paths(t) {
		for _, blocks := range []string{"default", "small", "small-wholeK"} {
			for _, inPlace := range []bool{true, false} {
				if p.tier == cpu.Go && !inPlace {
					continue // the portable path always packs A
				}
				name := fmt.Sprintf("%s/%s/inPlace=%v", p.name, blocks, inPlace)
				t.Run(name, func(t *testing.T) {
					body := func() {
						rng := rand.New(rand.NewPCG(11, 12))
						for _, which := range []string{"A", "B"} {
							shapes := shapesA
							if which == "B" {
								shapes = shapesB
							}
							for i, s := range shapes {
								m, n, k := s.m, s.n, s.nseg*s.seg
								if which == "B" {
									m, n, k = s.m, s.nseg*s.seg, s.n
								}
								tc, rc := rowsGemmCase(rng, which, i%2 == 1, m, n, k, s.nseg, s.seg, betas[i%3])
								tc.cNaN = tc.beta == 0
								r32 := runRows[float32](tc, rc, which, 1)
								check(t, tc, r32)
								identical(t, tc, r32, runRows[float32](tc, rc, which, 2), runRows[float32](tc, rc, which, 3))
								r64 := runRows[float64](tc, rc, which, 1)
								check(t, tc, r64)
								identical(t, tc, r64, runRows[float64](tc, rc, which, 2))
							}
						}
					}
					old := inPlaceRows
					inPlaceRows = inPlace
					defer func() { inPlaceRows = old }()
					withTier(p.tier, func() { withBlocks(blocks, body) })
				})
			}
		}
	}
}

// TestGemmRowsInPlaceMatchesPacked checks that the assembly kernels
// reading A in place give the bits of the packed path (same multiply-adds
// in the same order), on shapes large enough to be split across threads.
// The pair-order kernels, which sum in another order, are off here
// (TestPairRows checks them).
func TestGemmRowsInPlaceMatchesPacked(t *testing.T) {
	pairRows = false
	defer func() { pairRows = true }()
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			if rowsKernel[float32](p.tier) == nil {
				t.Logf("tier %v has no in-place Rows kernels: both runs pack A", p.tier)
			}
			rng := rand.New(rand.NewPCG(13, 14))
			for _, s := range [][4]int{{1000, 32, 9, 16}, {700, 16, 9, 32}, {300, 64, 9, 64}, {200, 20, 2, 600}} {
				tc, rc := rowsGemmCase(rng, "A", false, s[0], s[1], s[2]*s[3], s[2], s[3], 0)
				in32, in64 := runRows[float32](tc, rc, "A", 2), runRows[float64](tc, rc, "A", 2)
				inPlaceRows = false
				packed32, packed64 := runRows[float32](tc, rc, "A", 1), runRows[float64](tc, rc, "A", 1)
				inPlaceRows = true
				identical(t, tc, in32, packed32)
				identical(t, tc, in64, packed64)
			}
		})
	}
}

// TestGemmRowsBadArgs checks the panics on inconsistent Rows operands.
func TestGemmRowsBadArgs(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	rc := newRowsCase(rng, 6, 2, 4)
	b, c := make([]float32, 8*3), make([]float32, 6*3)
	good := rowsOf[float32](rc)
	past := good
	past.Map = OffsetsFunc(func(i0, n int, dst []int, ld int) {
		good.Map.Offsets(i0, n, dst, ld)
		dst[ld+n-1] = len(good.Data) - 3
	})
	noFn := good
	noFn.Map = nil
	// Full 16-wide panels of one segment: the assembly gather on amd64.
	rc16 := newRowsCase(rng, 6, 1, 16)
	wide := rowsOf[float32](rc16)
	wide.Map = OffsetsFunc(func(i0, n int, dst []int, ld int) {
		rowsOf[float32](rc16).Map.Offsets(i0, n, dst, ld)
		dst[n-1] = len(wide.Data) - 15
	})
	c16 := make([]float32, 3*16)
	// Full 32-wide panels of one segment: the AVX-512 gather.
	rc32 := newRowsCase(rng, 6, 1, 32)
	wide32 := rowsOf[float32](rc32)
	wide32.Map = OffsetsFunc(func(i0, n int, dst []int, ld int) {
		rowsOf[float32](rc32).Map.Offsets(i0, n, dst, ld)
		dst[n-1] = len(wide32.Data) - 31
	})
	c32 := make([]float32, 3*32)
	// Panels of two 16-wide segments: the AVX-512 segment gather.
	rc2 := newRowsCase(rng, 6, 2, 16)
	segs := rowsOf[float32](rc2)
	segs.Map = OffsetsFunc(func(i0, n int, dst []int, ld int) {
		rowsOf[float32](rc2).Map.Offsets(i0, n, dst, ld)
		dst[ld+n-1] = len(segs.Data) - 15
	})
	for _, p := range paths(t) {
		withTier(p.tier, func() { testRowsBadArgs(t, p, past, good, noFn, wide, wide32, segs, rc, b, c, c16, c32) })
	}
}

func testRowsBadArgs(t *testing.T, p path, past, good, noFn, wide, wide32, segs Rows[float32], rc *rowsCase, b, c, c16, c32 []float32) {
	for _, tc := range []struct {
		name, want string
		f          func()
	}{
		{"offset past data", "past the end", func() { GemmRowsA(6, 3, 8, past, false, b, 3, 0, c, 3, 1) }},
		{"float64 offset past data", "past the end", func() {
			g64 := rowsOf[float64](rc)
			g64.Map = past.Map
			GemmRowsA(6, 3, 8, g64, false, make([]float64, 24), 3, 0, make([]float64, 18), 3, 1)
		}},
		{"k not multiple of Seg", "not a multiple", func() { GemmRowsA(6, 3, 7, good, false, b, 3, 0, c, 3, 1) }},
		{"no offsets", "no Offsets map", func() { GemmRowsA(6, 3, 8, noFn, false, b, 3, 0, c, 3, 1) }},
		{"short B", "needs", func() { GemmRowsA(6, 3, 8, good, false, b[:20], 3, 0, c, 3, 1) }},
		{"B rows past data", "past the end", func() { GemmRowsB(false, 3, 8, 6, c, 6, past, 0, b, 8, 1) }},
		{"B panel past data", "past the end", func() { GemmRowsB(false, 3, 16, 6, c, 6, wide, 0, c16, 16, 1) }},
		{"B 32-wide panel past data", "past the end", func() { GemmRowsB(false, 3, 32, 6, c, 6, wide32, 0, c32, 32, 1) }},
		{"B segment panel past data", "past the end", func() { GemmRowsB(false, 3, 32, 6, c, 6, segs, 0, c32, 32, 1) }},
	} {
		t.Run(p.name+"/"+tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Fatalf("recovered %v, want a panic mentioning %q", r, tc.want)
				}
			}()
			tc.f()
		})
	}
}
