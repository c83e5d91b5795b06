package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// path is one ISA tier under test.
type path struct {
	name string
	tier cpu.ISA
}

// paths returns the tiers to test: every tier this CPU and build run,
// each logged as run or not run. Under the noasm tag or off amd64 the
// assembly tiers run on the Go twins of their routines (twins.go).
func paths(t *testing.T) []path {
	t.Helper()
	var ps []path
	for _, isa := range cpu.ISAs {
		switch {
		case isa == cpu.Go || cpu.Has(isa) && !goTwins:
			ps = append(ps, path{isa.String(), isa})
		case goTwins:
			ps = append(ps, path{isa.String() + "-twins", isa})
		}
	}
	logTiers(t)
	return ps
}

// logTiers logs, once per test, which tiers run and which do not.
func logTiers(t *testing.T) {
	t.Helper()
	for _, isa := range cpu.ISAs {
		switch {
		case isa == cpu.Go || cpu.Has(isa) && !goTwins:
			t.Logf("tier %-6v: run (assembly where the tier has it)", isa)
		case goTwins:
			t.Logf("tier %-6v: run on the Go twins of its assembly routines (noasm build or not amd64)", isa)
		default:
			t.Logf("tier %-6v: NOT RUN: this CPU lacks it (cpu.Max() = %v)", isa, cpu.Max())
		}
	}
}

// withTier runs f with the package's tier set to isa and restores it
// afterwards.
func withTier(isa cpu.ISA, f func()) {
	old := tier
	tier = isa
	defer func() { tier = old }()
	f()
}

// withBlocking runs f with tiny blocking parameters for every tier (the
// tier's nr kept), so that small shapes cross several mc, kc and nc
// blocks, and with B packed for all k blocks at once (wholeK) or one k
// block at a time.
func withBlocking(wholeK bool, f func()) {
	o32, o64, ow := blocking32, blocking64, wholeKBytes
	for i := range blocking32 {
		nr32, nr64 := blocking32[i].nr, blocking64[i].nr
		blocking32[i] = blocking{nr: nr32, mc: 12, kc: 8, nc: max(32, nr32)}
		blocking64[i] = blocking{nr: nr64, mc: 18, kc: 5, nc: ceilDiv(24, nr64) * nr64}
	}
	wholeKBytes = 0
	if wholeK {
		wholeKBytes = ow
	}
	defer func() { blocking32, blocking64, wholeKBytes = o32, o64, ow }()
	f()
}

// withBlocks runs f with the blocking named by blocks: "default", "small"
// (withBlocking, B packed one k block at a time) or "small-wholeK".
func withBlocks(blocks string, f func()) {
	switch blocks {
	case "default":
		f()
	case "small":
		withBlocking(false, f)
	default:
		withBlocking(true, f)
	}
}

// withWholeK runs f with B packed for all k blocks at once or not.
func withWholeK(on bool, f func()) { withBound(&wholeKBytes, on, f) }

// withSharedB runs f with the grid's shared packed B (wsState.shareB)
// allowed or not.
func withSharedB(on bool, f func()) { withBound(&sharedBBytes, on, f) }

// withBound runs f with the size bound *v as it is (on) or 0, which
// turns off what it bounds.
func withBound(v *int, on bool, f func()) {
	o := *v
	if !on {
		*v = 0
	}
	defer func() { *v = o }()
	f()
}

// gemmCase is one call: shapes, strides, scalars and stored operands.
type gemmCase struct {
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int
	alpha, beta    float64
	a, b, c        []float64 // stored matrices, padding filled with NaN
	cNaN           bool      // C's live elements are NaN too (for beta == 0)
}

func newCase(rng *rand.Rand, transA, transB bool, m, n, k, pad int, alpha, beta float64) *gemmCase {
	tc := &gemmCase{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	tc.lda, tc.ldb, tc.ldc = ac+pad, bc+pad, n+pad
	tc.a = randMatrix(rng, ar, ac, tc.lda)
	tc.b = randMatrix(rng, br, bc, tc.ldb)
	tc.c = randMatrix(rng, m, n, tc.ldc)
	return tc
}

// randMatrix returns a rows×cols matrix with row stride ld; the padding
// between rows and after the last row holds NaN.
func randMatrix(rng *rand.Rand, rows, cols, ld int) []float64 {
	s := make([]float64, rows*ld+3)
	for i := range s {
		s[i] = math.NaN()
	}
	for i := range rows {
		for j := range cols {
			s[i*ld+j] = rng.Float64()*2 - 1
		}
	}
	return s
}

func (tc *gemmCase) opA(i, p int) float64 {
	if tc.transA {
		return tc.a[p*tc.lda+i]
	}
	return tc.a[i*tc.lda+p]
}

func (tc *gemmCase) opB(p, j int) float64 {
	if tc.transB {
		return tc.b[j*tc.ldb+p]
	}
	return tc.b[p*tc.ldb+j]
}

// want returns the reference result in float64 (computed from the operands
// rounded to T) and an error bound per element.
func want[T Float](tc *gemmCase) (ref, bound []float64) {
	r := func(x float64) float64 { return float64(T(x)) }
	ref = make([]float64, tc.m*tc.n)
	bound = make([]float64, tc.m*tc.n)
	alpha, beta := r(tc.alpha), r(tc.beta)
	for i := range tc.m {
		for j := range tc.n {
			var s, sa float64
			if alpha != 0 {
				for p := range tc.k {
					x := r(tc.opA(i, p)) * r(tc.opB(p, j))
					s += x
					sa += math.Abs(x)
				}
			}
			v := alpha * s
			b := math.Abs(alpha) * sa
			if beta != 0 {
				cv := r(tc.c[i*tc.ldc+j])
				v += beta * cv
				b += math.Abs(beta * cv)
			}
			ref[i*tc.n+j] = v
			bound[i*tc.n+j] = b
		}
	}
	return ref, bound
}

func convert[T Float](s []float64) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = T(v)
	}
	return out
}

// run calls Gemm on T copies of the case and returns the stored C.
func run[T Float](tc *gemmCase, threads int) []T {
	a, b, c := convert[T](tc.a), convert[T](tc.b), convert[T](tc.c)
	if tc.cNaN {
		for i := range tc.m {
			for j := range tc.n {
				c[i*tc.ldc+j] = T(math.NaN())
			}
		}
	}
	Gemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, T(tc.alpha), a, tc.lda, b, tc.ldb, T(tc.beta), c, tc.ldc, threads)
	return c
}

// check compares C against the reference and checks that C's padding is
// untouched (still NaN).
func check[T Float](t *testing.T, tc *gemmCase, got []T) {
	t.Helper()
	eps := 0x1p-52
	if _, ok := any(T(0)).(float32); ok {
		eps = 0x1p-23
	}
	ref, bound := want[T](tc)
	tol := float64(tc.k+4) * eps
	bad := 0
	for i := range tc.m {
		for j := range tc.n {
			g := float64(got[i*tc.ldc+j])
			w := ref[i*tc.n+j]
			if !(math.Abs(g-w) <= tol*bound[i*tc.n+j]+1e-300) {
				if bad < 3 {
					t.Errorf("%s: C[%d,%d] = %v, want %v (bound %g)", tc, i, j, g, w, tol*bound[i*tc.n+j])
				}
				bad++
			}
		}
		for j := tc.n; j < tc.ldc && i*tc.ldc+j < len(got); j++ {
			if g := got[i*tc.ldc+j]; g == g {
				t.Fatalf("%s: padding C[%d,%d] overwritten with %v", tc, i, j, g)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d wrong elements", tc, bad)
	}
}

func (tc *gemmCase) String() string {
	return fmt.Sprintf("transA=%v transB=%v m=%d n=%d k=%d lda=%d ldb=%d ldc=%d alpha=%v beta=%v cNaN=%v",
		tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.lda, tc.ldb, tc.ldc, tc.alpha, tc.beta, tc.cNaN)
}

var transposes = [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}}

// testShapes runs the shape grid for one type on the current path.
func testShapes[T Float](t *testing.T, rng *rand.Rand) {
	ms := []int{1, 2, 5, 6, 7, 13, 17, 31, 64, 70}
	ns := []int{1, 3, 8, 9, 15, 16, 17, 33, 47, 70}
	ks := []int{1, 2, 7, 16, 31, 64, 70}
	scalars := [][2]float64{{1, 0}, {1, 1}, {-0.75, 2.5}}
	for _, tr := range transposes {
		for _, m := range ms {
			for _, n := range ns {
				for _, k := range ks {
					sc := scalars[(m+n+k)%len(scalars)]
					pad := (m * n) % 3
					tc := newCase(rng, tr[0], tr[1], m, n, k, pad, sc[0], sc[1])
					check(t, tc, run[T](tc, 1))
				}
			}
		}
	}
}

func TestGemmShapes(t *testing.T) {
	for _, p := range paths(t) {
		t.Run(p.name, func(t *testing.T) {
			withTier(p.tier, func() {
				rng := rand.New(rand.NewPCG(1, 2))
				t.Run("float32", func(t *testing.T) { testShapes[float32](t, rng) })
				t.Run("float64", func(t *testing.T) { testShapes[float64](t, rng) })
				for _, wholeK := range []bool{false, true} {
					withBlocking(wholeK, func() {
						name := fmt.Sprintf("smallblocks/wholeK=%v", wholeK)
						t.Run("float32/"+name, func(t *testing.T) { testShapes[float32](t, rng) })
						t.Run("float64/"+name, func(t *testing.T) { testShapes[float64](t, rng) })
					})
				}
			})
		})
	}
}

// TestGemmLarge covers shapes past the default mc, kc and nc.
func TestGemmLarge(t *testing.T) {
	shapes := [][3]int{{257, 263, 520}, {7, 4100, 3}, {300, 20, 600}}
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			rng := rand.New(rand.NewPCG(3, 4))
			for i, s := range shapes {
				tr := transposes[i%4]
				tc := newCase(rng, tr[0], tr[1], s[0], s[1], s[2], 1, 1.5, -0.5)
				check(t, tc, run[float32](tc, 2))
				check(t, tc, run[float64](tc, 1))
			}
		})
	}
}

// TestGemmScalars covers BLAS's special cases of alpha and beta.
func TestGemmScalars(t *testing.T) {
	cases := []struct {
		name        string
		alpha, beta float64
		cNaN        bool
	}{
		{"beta0-ignores-NaN", 1.25, 0, true},
		{"beta-negzero-ignores-NaN", 1.25, math.Copysign(0, -1), true},
		{"beta1", 1, 1, false},
		{"alpha-neg", -2, 0.5, false},
		{"alpha0", 0, 0.5, false},
		{"alpha0-beta0-NaN", 0, 0, true},
	}
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			rng := rand.New(rand.NewPCG(5, 6))
			for _, cs := range cases {
				for _, s := range [][3]int{{13, 35, 9}, {6, 16, 300}} {
					tc := newCase(rng, false, true, s[0], s[1], s[2], 2, cs.alpha, cs.beta)
					tc.cNaN = cs.cNaN
					t.Run(p.name+"/"+cs.name, func(t *testing.T) {
						check(t, tc, run[float32](tc, 1))
						check(t, tc, run[float64](tc, 1))
					})
				}
			}
			// alpha == 0 must not read A or B, nor k == 0.
			tc := newCase(rng, false, false, 9, 10, 11, 0, 0, 2)
			for i := range tc.a {
				tc.a[i] = math.NaN()
			}
			check(t, tc, run[float64](tc, 1))
			tc = newCase(rng, true, false, 9, 10, 0, 0, 1, -1)
			check(t, tc, run[float32](tc, 1))
			tc.beta, tc.cNaN = 0, true
			check(t, tc, run[float32](tc, 1))
		})
	}
}

// TestGemmThreadsBitIdentical checks that 1, 2 and 3 threads give the same
// bits, on shapes that are really split, and so does the other loop order
// (B packed one k block at a time).
func TestGemmThreadsBitIdentical(t *testing.T) {
	shapes := [][3]int{{100, 100, 250}, {200, 40, 300}, {13, 400, 500}, {127, 129, 513}, {6000, 40, 220}}
	// The last shape's row ranges are cut into pieces taken dynamically.
	if tm, tn := grid(6000, 40, 220, 2, blocking32[tier]); rowSplit(6000, 40, 220, tm, tn, blocking32[tier]) < 2 {
		t.Fatal("shape 6000×40×220 is not split into pieces")
	}
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			rng := rand.New(rand.NewPCG(7, 8))
			for i, s := range shapes {
				if tm, tn := grid(s[0], s[1], s[2], 2, blocking32[p.tier]); tm*tn < 2 {
					t.Fatalf("shape %v is not split across 2 threads", s)
				}
				tr := transposes[i%4]
				tc := newCase(rng, tr[0], tr[1], s[0], s[1], s[2], 1, 0.5, 1.5)
				var o32, u32 []float32
				var o64, u64 []float64
				withWholeK(false, func() { o32, o64 = run[float32](tc, 2), run[float64](tc, 1) })
				// Each cell packing its own B (no shared packed B).
				withSharedB(false, func() { u32, u64 = run[float32](tc, 2), run[float64](tc, 3) })
				identical(t, tc, run[float32](tc, 1), run[float32](tc, 2), run[float32](tc, 3), o32, u32)
				identical(t, tc, run[float64](tc, 1), run[float64](tc, 2), run[float64](tc, 3), o64, u64)
			}
		})
	}
}

func identical[T Float](t *testing.T, tc *gemmCase, ref []T, others ...[]T) {
	t.Helper()
	check(t, tc, ref)
	for n, o := range others {
		for i := range ref {
			if math.Float64bits(float64(ref[i])) != math.Float64bits(float64(o[i])) && !(ref[i] != ref[i] && o[i] != o[i]) {
				t.Fatalf("%s: result %d differs from threads=1 at %d: %v vs %v", tc, n+1, i, o[i], ref[i])
			}
		}
	}
}

// TestKernels checks each tier's micro-kernels on one packed tile against
// a float64 loop.
func TestKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			b32, k32 := setup[float32](p.tier)
			b64, k64 := setup[float64](p.tier)
			t.Run(p.name+"/float32", func(t *testing.T) { testKernel(t, rng, k32, b32.nr, 0x1p-23) })
			t.Run(p.name+"/float64", func(t *testing.T) { testKernel(t, rng, k64, b64.nr, 0x1p-52) })
		})
	}
}

// TestStridedKernels checks that each tier's strided-A kernels, for every
// number of rows and columns they take, give the bits of the full kernel
// on the same panels, read A at a stride, and write nothing outside their
// rows and columns (nor read C there: NaN is left as is).
func TestStridedKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, p := range paths(t) {
		withTier(p.tier, func() {
			t.Run(p.name+"/float32", func(t *testing.T) { testStrided[float32](t, rng) })
			t.Run(p.name+"/float64", func(t *testing.T) { testStrided[float64](t, rng) })
		})
	}
}

func testStrided[T Float](t *testing.T, rng *rand.Rand) {
	kernS, anyEdge := stridedKernel[T](tier)
	if kernS == nil {
		t.Logf("tier %v has no strided kernels", tier)
		return
	}
	blk, kern := setup[T](tier)
	nr := blk.nr
	rowsList, colsList := []int{2, 4, 6}, []int{nr}
	if anyEdge {
		rowsList, colsList = nil, nil
		for r := 1; r <= mr; r++ {
			rowsList = append(rowsList, r)
		}
		for c := 1; c <= nr; c++ {
			colsList = append(colsList, c)
		}
	}
	for _, kc := range []int{1, 3, 4, 9, 70} {
		for _, sc := range [][2]T{{1, 0}, {-1.5, 0.25}} {
			const lda = mr + 3
			a := make([]T, kc*lda)
			b := make([]T, kc*nr)
			for i := range a {
				a[i] = T(rng.Float64()*2 - 1)
			}
			for i := range b {
				b[i] = T(rng.Float64()*2 - 1)
			}
			ap := make([]T, kc*mr) // the same A, packed
			for p := range kc {
				copy(ap[p*mr:(p+1)*mr], a[p*lda:p*lda+mr])
			}
			ldc := nr + 3
			c0 := make([]T, mr*ldc)
			for i := range c0 {
				c0[i] = T(rng.Float64())
			}
			full := append([]T(nil), c0...)
			kern(kc, ap, b, full, ldc, sc[0], sc[1])
			for _, rows := range rowsList {
				for _, cols := range colsList {
					c := append([]T(nil), c0...)
					for i := range c {
						if r, j := i/ldc, i%ldc; r >= rows || j >= cols {
							c[i] = T(math.NaN())
						}
					}
					kernS(rows, cols, kc, a, lda, b, c, ldc, sc[0], sc[1])
					for i := range c {
						r, j := i/ldc, i%ldc
						if r >= rows || j >= cols {
							if c[i] == c[i] {
								t.Fatalf("kc=%d rows=%d cols=%d: wrote %v outside the tile at (%d, %d)", kc, rows, cols, c[i], r, j)
							}
							continue
						}
						if math.Float64bits(float64(c[i])) != math.Float64bits(float64(full[i])) {
							t.Fatalf("kc=%d rows=%d cols=%d: C[%d,%d] = %v, full kernel %v", kc, rows, cols, r, j, c[i], full[i])
						}
					}
				}
			}
		}
	}
}

func testKernel[T Float](t *testing.T, rng *rand.Rand, kern kernelFunc[T], nr int, eps float64) {
	for _, kc := range []int{1, 2, 3, 4, 5, 8, 9, 255, 256} {
		for _, sc := range [][2]T{{1, 0}, {1, 1}, {-1.5, 0.25}} {
			a := make([]T, kc*mr)
			b := make([]T, kc*nr)
			for i := range a {
				a[i] = T(rng.Float64()*2 - 1)
			}
			for i := range b {
				b[i] = T(rng.Float64()*2 - 1)
			}
			ldc := nr + 5
			c0 := make([]T, mr*ldc)
			for i := range c0 {
				c0[i] = T(rng.Float64())
			}
			if sc[1] == 0 {
				for i := range c0 {
					if i%ldc < nr {
						c0[i] = T(math.NaN())
					}
				}
			}
			c := append([]T(nil), c0...)
			kern(kc, a, b, c, ldc, sc[0], sc[1])
			for i := range c {
				r, j := i/ldc, i%ldc
				if j >= nr {
					if c[i] != c0[i] {
						t.Fatalf("kc=%d: kernel wrote outside the tile at %d", kc, i)
					}
					continue
				}
				var s, bound float64
				for p := range kc {
					x := float64(a[p*mr+r]) * float64(b[p*nr+j])
					s += x
					bound += math.Abs(x)
				}
				w := float64(sc[0]) * s
				bound *= math.Abs(float64(sc[0]))
				if sc[1] != 0 {
					w += float64(sc[1]) * float64(c0[i])
					bound += math.Abs(float64(sc[1]) * float64(c0[i]))
				}
				if d := math.Abs(float64(c[i]) - w); !(d <= float64(kc+4)*eps*bound) {
					t.Fatalf("kc=%d alpha=%v beta=%v: C[%d,%d] = %v, want %v", kc, sc[0], sc[1], r, j, c[i], w)
				}
			}
		}
	}
}

// TestWorkspaceNoAlloc checks that steady-state calls do not allocate.
func TestWorkspaceNoAlloc(t *testing.T) {
	const m, n, k = 100, 90, 300
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	c := make([]float32, m*n)
	ws := NewWorkspace()
	GemmWS(ws, false, false, m, n, k, 1, a, k, b, n, 0, c, n, 1)
	if got := testing.AllocsPerRun(5, func() {
		GemmWS(ws, false, false, m, n, k, 1, a, k, b, n, 0, c, n, 1)
	}); got != 0 {
		t.Errorf("GemmWS allocates %v times per call", got)
	}
	Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n, 1)
	if got := testing.AllocsPerRun(5, func() {
		Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n, 1)
	}); got != 0 {
		t.Errorf("Gemm allocates %v times per call", got)
	}
}

// TestGemmBadArgs checks the argument checks that keep the kernels safe.
func TestGemmBadArgs(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	s := make([]float32, 64)
	mustPanic("negative m", func() { Gemm(false, false, -1, 2, 2, 1, s, 2, s, 2, 0, s, 2, 1) })
	mustPanic("short A", func() { Gemm(false, false, 8, 8, 9, 1, s, 9, s, 8, 0, s, 8, 1) })
	mustPanic("short C", func() { Gemm(true, false, 4, 17, 2, 1, s, 4, s, 17, 0, s, 17, 1) })
	mustPanic("small lda", func() { Gemm(false, false, 2, 2, 3, 1, s, 2, s, 2, 0, s, 2, 1) })
	mustPanic("small ldb transposed", func() { Gemm(false, true, 2, 2, 3, 1, s, 3, s, 2, 0, s, 2, 1) })
	// Empty and exactly-sized operands are fine.
	Gemm(false, false, 0, 5, 5, 1, nil, 5, s, 5, 0, nil, 5, 1)
	Gemm(false, false, 2, 3, 4, 1, s[:8], 4, s[8:20], 3, 0, s[20:26], 3, 1)
}
