package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// padRows returns the stored A of a case with m rows extended to m2 by
// zero rows (zero columns of the stored matrix when transA), and its
// stride.
func padRows(tc *gemmCase, m2 int) ([]float64, int) {
	if !tc.transA {
		a := make([]float64, m2*tc.lda)
		copy(a, tc.a[:min(len(tc.a), tc.m*tc.lda)])
		for i := tc.m * tc.lda; i < len(a); i++ {
			a[i] = 0
		}
		return a, tc.lda
	}
	lda := m2 + 1
	a := make([]float64, tc.k*lda)
	for p := range tc.k {
		copy(a[p*lda:p*lda+tc.m], tc.a[p*tc.lda:p*tc.lda+tc.m])
	}
	return a, lda
}

// sameBits fails unless the first m rows of got and want (stride ldc, n
// columns) hold the same bits.
func sameBits[T Float](t *testing.T, name string, m, n, ldc int, got, want []T) {
	t.Helper()
	for i := range m {
		for j := range n {
			g, w := got[i*ldc+j], want[i*ldc+j]
			if math.Float64bits(float64(g)) != math.Float64bits(float64(w)) {
				t.Fatalf("%s: C[%d,%d] = %v, want the full-tile bits %v", name, i, j, g, w)
			}
		}
	}
}

// TestEdgeTilesMatchFullTiles checks that C rows computed by the edge
// tiles of m % 6 rows (the strided 2- and 4-row kernels, or the full
// kernel on a buffer) have the bits they get as rows of full tiles, when
// A is padded with zero rows to a multiple of 6: for Gemm with packed A
// (both transpositions), for GemmRowsB with Aᵀ packed or read in place,
// on the assembly and portable paths.
func TestEdgeTilesMatchFullTiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			for _, m := range []int{1, 2, 3, 4, 5, 7, 8, 10, 32, 64, 131} {
				for _, n := range []int{5, 16, 21, 48} {
					for _, k := range []int{1, 7, 300} {
						for _, sc := range [][2]float64{{1, 0}, {-1.5, 0.5}} {
							for _, transA := range []bool{false, true} {
								transB := n%2 == 1
								tc := newCase(rng, transA, transB, m, n, k, 1, sc[0], sc[1])
								m6 := ceilDiv(m, mr) * mr
								a6, lda6 := padRows(tc, m6)
								name := fmt.Sprintf("%s/m%d n%d k%d alpha%v beta%v transA=%v", p.name, m, n, k, sc[0], sc[1], transA)
								edgeCase[float32](t, name, tc, a6, lda6, m6)
								edgeCase[float64](t, name, tc, a6, lda6, m6)
							}
						}
					}
				}
			}
		})
	}
}

func edgeCase[T Float](t *testing.T, name string, tc *gemmCase, a6 []float64, lda6, m6 int) {
	t.Helper()
	c6 := make([]float64, m6*tc.ldc)
	copy(c6, tc.c[:tc.m*tc.ldc])
	got, want := convert[T](tc.c), convert[T](c6)
	Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, T(tc.alpha), convert[T](tc.a), tc.lda, convert[T](tc.b), tc.ldb, T(tc.beta), got, tc.ldc, 1)
	Gemm(tc.transA, tc.transB, m6, tc.n, tc.k, T(tc.alpha), convert[T](a6), lda6, convert[T](tc.b), tc.ldb, T(tc.beta), want, tc.ldc, 1)
	sameBits(t, name+"/Gemm", tc.m, tc.n, tc.ldc, got, want)
	if !tc.transA || tc.alpha != 1 {
		return
	}
	// GemmRowsB: B as Rows of one segment per 16 columns (or fewer).
	rng := rand.New(rand.NewPCG(uint64(tc.m), uint64(tc.n*tc.k)))
	seg := 1
	for _, s := range []int{16, 8, 7, 5, 3} {
		if tc.n%s == 0 {
			seg = s
			break
		}
	}
	rc := newRowsCase(rng, tc.k, tc.n/seg, seg)
	for _, inPlace := range []bool{true, false} {
		inPlaceTransA = inPlace
		got, want := convert[T](tc.c), convert[T](c6)
		GemmRowsB(true, tc.m, tc.n, tc.k, convert[T](tc.a), tc.lda, rowsOf[T](rc), T(tc.beta), got, tc.ldc, 1)
		GemmRowsB(true, m6, tc.n, tc.k, convert[T](a6), lda6, rowsOf[T](rc), T(tc.beta), want, tc.ldc, 1)
		inPlaceTransA = true
		sameBits(t, fmt.Sprintf("%s/GemmRowsB/inPlace=%v", name, inPlace), tc.m, tc.n, tc.ldc, got, want)
		if inPlace {
			packed := convert[T](tc.c)
			inPlaceTransA = false
			GemmRowsB(true, tc.m, tc.n, tc.k, convert[T](tc.a), tc.lda, rowsOf[T](rc), T(tc.beta), packed, tc.ldc, 1)
			inPlaceTransA = true
			sameBits(t, name+"/GemmRowsB in place vs packed", tc.m, tc.n, tc.ldc, got, packed)
		}
	}
}

// TestGemmReadsAInPlace checks Gemm with A read in place instead of
// packed, for op(B) rows of at most inPlaceRowBytes: a stored Aᵀ read by
// the strided kernels (readsATInPlace), and a stored, non-transposed A
// read by the Rows kernels (storedRows). Each against the float64
// reference and against the same call with A packed, bit for bit, on one
// and two threads, with several row blocks (m > mc), partial tiles, k
// blocks and both B layouts. On the assembly tiers it also checks that
// the in-place path is the one taken for the narrow shapes, so that the
// comparison is not of a path with itself.
func TestGemmReadsAInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, transA := range []bool{true, false} {
		for _, p := range paths(t) {
			withTier(p.tier, func() {
				ms, ns, ks := []int{6, 29, 150}, []int{5, 100, 192, 384, 385}, []int{7, 300}
				if raceDetector {
					ms, ns, ks = []int{150}, []int{100, 385}, []int{300}
				}
				for _, m := range ms {
					for _, n := range ns {
						for _, k := range ks {
							tc := newCase(rng, transA, !transA && n%2 == 1, m, n, k, 1, -1.5, 0.5)
							inPlaceCase[float32](t, p.tier, tc)
							inPlaceCase[float64](t, p.tier, tc)
						}
					}
				}
			})
		}
	}
}

func inPlaceCase[T Float](t *testing.T, isa cpu.ISA, tc *gemmCase) {
	t.Helper()
	var z T
	tier := problemTier[T](tc.n)
	kernS, _ := stridedKernel[T](tier)
	inPlace, flag := storedRows[T](tc.transA, tc.n, tier), &inPlaceStored
	if tc.transA {
		inPlace, flag = readsATInPlace[T](true, tc.n, kernS != nil), &inPlaceTransA
	}
	if want := isa > cpu.Go && tc.n*int(unsafe.Sizeof(z)) <= inPlaceRowBytes; inPlace != want {
		t.Fatalf("%v %T %s: in place = %v, want %v", isa, z, tc, inPlace, want)
	}
	for _, threads := range []int{1, 2} {
		got := run[T](tc, threads)
		check(t, tc, got)
		*flag = false
		packed := run[T](tc, threads)
		*flag = true
		sameBits(t, fmt.Sprintf("%v %T %s threads=%d in place=%v vs packed", isa, z, tc, threads, inPlace), tc.m, tc.n, tc.ldc, got, packed)
	}
}
