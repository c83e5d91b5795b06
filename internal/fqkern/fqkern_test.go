package fqkern

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The kernels are checked element by element against scalar references
// written from the rules (refQuant, refGrad, refAdj), in both modes (the
// Go loops, and the assembly when the CPU has it), and the two modes
// against each other bit for bit, sums included. Outputs are windows of
// larger buffers whose guard elements must stay untouched.

// modes returns the kernel modes to test: the Go loops, and the assembly
// routines where they run (on a CPU with AVX2, or as their Go twins in a
// build without assembly).
//
// A mode is a tier and a kernel variant: cpu.Go runs the Go loops; AVX2
// and AVX512 run the routines of that tier where the CPU has it (cpu.Has,
// whatever TAPEGRAD_ISA says): the tier's own kernels, or with stream the
// ones for large tensors (StreamBytes and AdjointStreamBytes lowered to
// 0). In a build without assembly AVX2 stands for the Go twins.
func modes() []mode {
	ms := []mode{{cpu.Go, false}}
	for _, isa := range []cpu.ISA{cpu.AVX2, cpu.AVX512} {
		if !twinsOnly && cpu.Has(isa) || twinsOnly && isa == cpu.AVX2 {
			ms = append(ms, mode{isa, false}, mode{isa, true})
		}
	}
	return ms
}

// mode is a tier and, for the assembly, whether the streaming kernels run.
type mode struct {
	isa    cpu.ISA
	stream bool
}

func (m mode) String() string {
	if m.stream {
		return m.isa.String() + "-stream"
	}
	return m.isa.String()
}

// withMode runs fn in mode m.
func withMode(m mode, fn func()) {
	old, oldBytes, oldAdj := tier, StreamBytes, AdjointStreamBytes
	tier = m.isa
	StreamBytes, AdjointStreamBytes = math.MaxInt, math.MaxInt
	if m.stream {
		StreamBytes, AdjointStreamBytes = 0, 0
	}
	defer func() { tier, StreamBytes, AdjointStreamBytes = old, oldBytes, oldAdj }()
	testutil.WithFlag(&useAsm, m.isa > cpu.Go, fn)
}

// hasTier reports whether the modes ms run tier isa.
func hasTier(ms []mode, isa cpu.ISA) bool {
	return slices.ContainsFunc(ms, func(m mode) bool { return m.isa == isa })
}

// TestTiers logs which tiers the kernel tests run.
func TestTiers(t *testing.T) {
	ms := modes()
	for _, isa := range cpu.ISAs {
		switch {
		case hasTier(ms, isa) && twinsOnly && isa > cpu.Go:
			t.Logf("tier %-6v: run on the Go twins of its routines (noasm build or not amd64)", isa)
		case hasTier(ms, isa):
			t.Logf("tier %-6v: run", isa)
		default:
			t.Logf("tier %-6v: NOT RUN: this CPU or build lacks it (cpu.Max() = %v)", isa, cpu.Max())
		}
	}
	if len(ms) < 2 {
		t.Errorf("only the Go loops run: %v", ms)
	}
}

// refQuant is the scalar forward rule: clamp with min(x, nmax) first, a
// NaN x staying NaN, every operation rounded to T, +0 in a zero channel;
// multiplying by Inv, or dividing by Scale if div.
func refQuant[T tensorx.Float](g Grid[T], x T, div bool) T {
	if g.Zero {
		return 0
	}
	v := x
	if v > g.NMax {
		v = g.NMax
	}
	if v < g.NMin {
		v = g.NMin
	}
	var t T
	if div {
		t = T(T(v-g.NMin) / g.Scale)
	} else {
		t = T(T(v-g.NMin) * g.Inv)
	}
	return T(T(math.Floor(float64(T(T(t-g.QZero)+0.5)))) * g.Scale)
}

// rangeOf returns the gradient range of a grid.
func rangeOf[T tensorx.Float](g Grid[T]) (lo, hi T) { return g.NMin, g.NMax }

// class returns 0 inside (or zero channel), 1 below, 2 above, 3 NaN.
func class[T tensorx.Float](g Grid[T], x T) int {
	lo, hi := rangeOf(g)
	switch {
	case x >= lo && x <= hi, g.Zero:
		return 0
	case x < lo:
		return 1
	case x > hi:
		return 2
	}
	return 3
}

// grid builds a nudged-looking grid: step s, nmin = −k·s, 255 steps,
// inv = 1/s, qzero = floor(−nmin·inv + 0.5), every value rounded to T.
func grid[T tensorx.Float](s T, k int) Grid[T] {
	g := Grid[T]{Scale: s, Inv: T(1 / s)}
	g.NMin = T(T(-k) * s)
	g.NMax = T(T(255-k) * s)
	g.QZero = T(math.Floor(float64(T(T(-g.NMin*g.Inv) + 0.5))))
	return g
}

// randomGrids returns d grids, a few of them special: the zero channel,
// a NaN grid, an infinite inverse scale (min == max != 0), a reversed
// range (negative scale).
func randomGrids[T tensorx.Float](r *rand.Rand, d int) []Grid[T] {
	gs := make([]Grid[T], d)
	for c := range gs {
		switch r.Intn(12) {
		case 0:
			gs[c] = Grid[T]{Zero: true}
		case 1:
			nan := T(math.NaN())
			gs[c] = Grid[T]{NMin: nan, NMax: nan, Inv: nan, QZero: nan, Scale: nan}
		case 2:
			gs[c] = Grid[T]{Inv: T(math.Inf(1)), QZero: T(math.NaN())}
		case 3:
			gs[c] = grid(T(-0.02-r.Float64()*0.01), r.Intn(256))
		default:
			gs[c] = grid(T(0.01+r.Float64()*0.03), r.Intn(256))
		}
	}
	return gs
}

// specials returns inputs of channel grid g that exercise the edges: the
// bounds and their neighbours, rounding ties (k + ½ steps above nmin) and
// their neighbours, zeros, infinities, NaN.
func specials[T tensorx.Float](r *rand.Rand, g Grid[T]) []T {
	next := func(v T, dir float64) T {
		if _, ok := any(v).(float32); ok {
			return T(math.Nextafter32(float32(v), float32(dir)))
		}
		return T(math.Nextafter(float64(v), dir))
	}
	k := T(r.Intn(255))
	tie := T(g.NMin + T(T(k+0.5)*g.Scale))
	out := []T{0, T(math.Copysign(0, -1)), T(math.Inf(1)), T(math.Inf(-1)), T(math.NaN()),
		g.NMin, g.NMax, tie, T(T(k+0.5) * g.Scale)}
	for _, v := range []T{g.NMin, g.NMax, tie} {
		out = append(out, next(v, math.Inf(1)), next(v, math.Inf(-1)))
	}
	return out
}

// inputs returns n inputs for channels gs (channel = index mod d): mostly
// x ~ 3·N(0, 1)·|range|/5, with specials of the element's channel mixed in.
func inputs[T tensorx.Float](r *rand.Rand, gs []Grid[T], n int) []T {
	x := make([]T, n)
	for i := range x {
		g := gs[i%len(gs)]
		if r.Intn(3) == 0 {
			sp := specials(r, g)
			x[i] = sp[r.Intn(len(sp))]
			continue
		}
		w := float64(g.NMax - g.NMin)
		if math.IsNaN(w) || w == 0 {
			w = 5
		}
		x[i] = T(r.NormFloat64() * 3 * math.Abs(w) / 5)
	}
	return x
}

// guarded returns a slice of n elements inside a buffer whose 16 guard
// elements on each side hold sentinel, and a check that they still do.
func guarded[T tensorx.Float](t *testing.T, n int, sentinel T) ([]T, func(string)) {
	buf := make([]T, n+32)
	for i := range buf {
		buf[i] = sentinel
	}
	s := buf[16 : 16+n]
	return s, func(what string) {
		t.Helper()
		for i := range 16 {
			if buf[i] != sentinel || buf[16+n+i] != sentinel {
				t.Fatalf("%s: write outside the output", what)
			}
		}
	}
}

// same reports whether a and b are the same value: equal bits, or both
// NaN (NaN payloads are not part of the contract).
func same[T tensorx.Float](a, b T) bool {
	if a != a && b != b {
		return true
	}
	switch p := any(a).(type) {
	case float32:
		return math.Float32bits(p) == math.Float32bits(float32(b))
	case float64:
		return math.Float64bits(p) == math.Float64bits(float64(b))
	}
	return false
}

// shapes are (d, n, at) cases: channel counts around the block and period
// sizes, lengths with partial rows and periods, calls starting mid-period.
var shapes = []struct{ d, n, at int }{
	{1, 1, 0}, {1, 7, 3}, {1, 1000, 0}, {1, 777, 255}, {3, 3, 0}, {3, 999, 5},
	{7, 700, 0}, {7, 1393, 21}, {8, 8, 0}, {8, 2048, 0}, {8, 1000, 16}, {64, 64, 0},
	{64, 64 * 37, 0}, {64, 64 * 37, 192}, {65, 65 * 20, 0}, {65, 65 * 11, 130},
	{129, 129 * 5, 0}, {129, 129 * 5, 258}, {1030, 1030 * 2, 0}, {16, 160, 48}, {2, 1, 1},
}

// phasedShapes add lengths of many table periods to shapes, for
// phased inputs.
var phasedShapes = append([]struct{ d, n, at int }{{1, 256 * 40, 0}, {3, 3 * 4000, 6}, {64, 64 * 300, 64}}, shapes...)

// phased returns n inputs for channels gs (channel = index mod d) whose
// element i lies in table row (at + i)/Period(d), each row of one kind
// drawn at random: inside the nudged range only (where the Go loops take
// their fast path), inputs' mix (their branch-free path), or inside with
// a few of inputs' (the fast path's slow branch below the switch), so
// that the Go loops switch between their two row loops both ways.
func phased[T tensorx.Float](r *rand.Rand, gs []Grid[T], n, at int) []T {
	d, l := len(gs), Period(len(gs))
	x := inputs(r, gs, n)
	kind := map[int]int{}
	for i := range x {
		row := (at + i) / l
		k, ok := kind[row]
		if !ok {
			k = r.Intn(3)
			kind[row] = k
		}
		if k == 1 || (k == 2 && r.Intn(20) == 0) {
			continue
		}
		g := gs[(at+i)%d]
		lo, hi := rangeOf(g)
		if g.Zero {
			lo, hi = -3, 3
		}
		if !(lo <= hi) { // NaN or reversed: inputs' value
			continue
		}
		v := T(float64(lo) + r.Float64()*float64(hi-lo))
		x[i] = min(max(v, lo), hi)
	}
	return x
}

// testForward checks both forms (NewQuant multiplies, NewQuantDiv
// divides) on inputs from gen over the shapes sh, and that they differ
// somewhere (near the ties), so that each table really runs its own form.
func testForward[T tensorx.Float](t *testing.T, name string, sh []struct{ d, n, at int }, gen func(r *rand.Rand, gs []Grid[T], n, at int) []T) {
	r := rand.New(rand.NewSource(1))
	differ := 0
	for _, sh := range sh {
		gs := randomGrids[T](r, sh.d)
		x := gen(r, gs, sh.n, sh.at)
		for _, div := range []bool{false, true} {
			q := NewQuant[T](sh.d)
			if div {
				q = NewQuantDiv[T](sh.d)
			}
			for c, g := range gs {
				q.Set(c, g)
			}
			var outs [][]T
			for _, asm := range modes() {
				y, check := guarded[T](t, sh.n, 7)
				withMode(asm, func() { q.Run(y, x, sh.at) })
				check(name)
				for i, v := range x {
					g := gs[(sh.at+i)%sh.d]
					if want := refQuant(g, v, div); !same(y[i], want) {
						t.Fatalf("%s asm=%v div=%v d=%d n=%d at=%d: element %d x=%v grid %+v: got %v, want %v",
							name, asm, div, sh.d, sh.n, sh.at, i, v, g, y[i], want)
					}
					if div && !same(refQuant(g, v, false), refQuant(g, v, true)) {
						differ++
					}
				}
				outs = append(outs, y)
			}
			for m := 1; m < len(outs); m++ {
				bitsEqual(t, fmt.Sprintf("%s div=%v forward %v vs Go", name, div, modes()[m]), outs[0], outs[m])
			}
		}
	}
	if differ == 0 {
		t.Fatalf("%s: multiplying and dividing never differ: the test does not tell the forms apart", name)
	}
	t.Logf("%s: the forms differ on %d inputs", name, differ)
}

// bitsEqual checks that two outputs have identical bits (NaNs included).
func bitsEqual[T tensorx.Float](t *testing.T, what string, a, b []T) {
	t.Helper()
	for i := range a {
		if !same(a[i], b[i]) {
			t.Fatalf("%s: element %d: %v vs %v", what, i, a[i], b[i])
		}
	}
}

// random is inputs as a generator for testForward and testGradient.
func random[T tensorx.Float](r *rand.Rand, gs []Grid[T], n, _ int) []T { return inputs(r, gs, n) }

func TestForward(t *testing.T) {
	testForward(t, "float32", shapes, random[float32])
	testForward(t, "float64", shapes, random[float64])
}

// testGradient checks Grad (the input gradient and the sums) and Adjoint
// on inputs from gen over the shapes sh.
func testGradient[T tensorx.Float](t *testing.T, name string, sh []struct{ d, n, at int }, gen func(r *rand.Rand, gs []Grid[T], n, at int) []T) {
	r := rand.New(rand.NewSource(2))
	for _, sh := range sh {
		gs := randomGrids[T](r, sh.d)
		b := NewBounds[T](sh.d)
		dmin, dmax := make([]T, sh.d), make([]T, sh.d)
		for c, g := range gs {
			lo, hi := rangeOf(g)
			b.Set(c, lo, hi, g.Zero)
			dmin[c], dmax[c] = T(r.NormFloat64()), T(r.NormFloat64())
			b.SetAdjoint(c, dmin[c], dmax[c])
		}
		x := gen(r, gs, sh.n, sh.at)
		g := make([]T, sh.n)
		for i := range g {
			g[i] = T(r.NormFloat64())
			if r.Intn(50) == 0 {
				g[i] = []T{T(math.NaN()), T(math.Inf(1)), T(math.Copysign(0, -1))}[r.Intn(3)]
			}
		}
		// The per-channel sums of the reference, in float64, element order.
		wantB, wantA := make([]float64, sh.d), make([]float64, sh.d)
		for i, v := range x {
			c := (sh.at + i) % sh.d
			switch class(gs[c], v) {
			case 1:
				wantB[c] += float64(g[i])
			case 2:
				wantA[c] += float64(g[i])
			}
		}
		var outs [][]T
		var sums [][]float64
		for _, asm := range modes() {
			bi, check := guarded[T](t, sh.n, 7)
			out, checkOut := guarded[T](t, sh.n, 7)
			acc := make([]float64, 2*b.Period())
			withMode(asm, func() {
				b.Grad(bi, g, x, sh.at, acc)
				b.Adjoint(out, g, x, sh.at)
			})
			check(name + " Grad")
			checkOut(name + " Adjoint")
			for i, v := range x {
				c := (sh.at + i) % sh.d
				wantBi, wantOut := T(0), T(0)
				switch class(gs[c], v) {
				case 0:
					wantBi, wantOut = g[i], g[i]
				case 1:
					wantOut = dmin[c]
				case 2:
					wantOut = dmax[c]
				}
				if !same(bi[i], wantBi) || !same(out[i], wantOut) {
					t.Fatalf("%s asm=%v d=%d n=%d at=%d: element %d x=%v g=%v grid %+v: got bi %v out %v, want %v %v",
						name, asm, sh.d, sh.n, sh.at, i, v, g[i], gs[c], bi[i], out[i], wantBi, wantOut)
				}
			}
			below, above := make([]float64, sh.d), make([]float64, sh.d)
			b.Fold(acc, below, above)
			for c := range below {
				if !close(below[c], wantB[c]) || !close(above[c], wantA[c]) {
					t.Fatalf("%s asm=%v d=%d n=%d at=%d: channel %d sums %v %v, want %v %v",
						name, asm, sh.d, sh.n, sh.at, c, below[c], above[c], wantB[c], wantA[c])
				}
			}
			outs = append(outs, bi, out)
			sums = append(sums, acc)
		}
		for m := 1; m < len(sums); m++ {
			mode := modes()[m].String()
			bitsEqual(t, name+" Grad "+mode+" vs Go", outs[0], outs[2*m])
			bitsEqual(t, name+" Adjoint "+mode+" vs Go", outs[1], outs[2*m+1])
			bitsEqual(t, name+" sums "+mode+" vs Go", sums[0], sums[m])
		}
	}
}

// close compares float64 sums of a few thousand terms of order 1 added in
// different orders.
func close(a, b float64) bool {
	if a != a || b != b || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return same(a, b)
	}
	return math.Abs(a-b) <= 1e-12*(1+math.Abs(b))
}

func TestGradient(t *testing.T) {
	testGradient(t, "float32", shapes, random[float32])
	testGradient(t, "float64", shapes, random[float64])
}

// TestPhasedRows runs the forward and gradient checks on phased inputs:
// rows that take the Go loops' fast path, their branch-free path, and
// the fast path's slow branch, in every order.
func TestPhasedRows(t *testing.T) {
	testForward(t, "float32 phased", phasedShapes, phased[float32])
	testForward(t, "float64 phased", phasedShapes, phased[float64])
	testGradient(t, "float32 phased", phasedShapes, phased[float32])
	testGradient(t, "float64 phased", phasedShapes, phased[float64])
}

// TestGradSumsIndependentOfCuts checks that Grad adds to acc, each
// position's terms in element order, so that a range cut anywhere into
// consecutive calls on one acc gives bit-identical sums.
func TestGradSumsIndependentOfCuts(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const d, n = 5, 5 * 400
	gs := randomGrids[float32](r, d)
	b := NewBounds[float32](d)
	for c, g := range gs {
		b.Set(c, g.NMin, g.NMax, g.Zero)
	}
	x := inputs(r, gs, n)
	g := make([]float32, n)
	for i := range g {
		g[i] = float32(r.NormFloat64())
	}
	bi := make([]float32, n)
	for _, asm := range modes() {
		whole := make([]float64, 2*b.Period())
		cut := make([]float64, 2*b.Period())
		withMode(asm, func() {
			b.Grad(bi, g, x, 0, whole)
			for lo := 0; lo < n; {
				hi := min(n, lo+1+r.Intn(700))
				b.Grad(bi[lo:hi], g[lo:hi], x[lo:hi], lo, cut)
				lo = hi
			}
		})
		for i := range whole {
			if math.Float64bits(cut[i]) != math.Float64bits(whole[i]) {
				t.Fatalf("asm=%v: position %d: cut calls sum %v, one call %v", asm, i, cut[i], whole[i])
			}
		}
	}
}

// TestInitAndZeroChannels checks that Init clears a dirty buffer (every
// channel a zero grid, every range [0, 0]) and that the forward keeps
// track of the zero channels as Set turns channels into and out of them:
// a NaN input of a zero channel gives +0, of another channel NaN.
func TestInitAndZeroChannels(t *testing.T) {
	const d = 3
	nan := math.NaN()
	x := make([]float64, 4*Period(d)) // every value in every channel
	for i := range x {
		x[i] = []float64{nan, 0.3, -7, 0}[i%4]
	}
	check := func(what string, q *Quant[float64], gs []Grid[float64]) {
		t.Helper()
		for _, asm := range modes() {
			y := make([]float64, len(x))
			withMode(asm, func() { q.Run(y, x, 1) })
			for i, v := range x {
				if want := refQuant(gs[(1+i)%d], v, false); !same(y[i], want) {
					t.Fatalf("%s asm=%v: element %d x=%v: got %v, want %v", what, asm, i, v, y[i], want)
				}
			}
		}
	}
	buf := make([]float64, QuantSize(d))
	for i := range buf {
		buf[i] = nan
	}
	var q Quant[float64]
	q.Init(d, false, buf)
	zero := Grid[float64]{Zero: true}
	gs := []Grid[float64]{zero, zero, zero}
	check("after Init", &q, gs)
	g := grid(0.02, 100)
	for _, step := range []struct {
		c    int
		zero bool
	}{{0, false}, {1, false}, {2, false}, {1, true}, {1, true}, {0, true}, {2, true}, {2, false}} {
		gs[step.c] = g
		if step.zero {
			gs[step.c] = zero
		}
		q.Set(step.c, gs[step.c])
		check(fmt.Sprintf("after Set(%d, zero %v)", step.c, step.zero), &q, gs)
	}
	bbuf := make([]float64, BoundsSize(d))
	for i := range bbuf {
		bbuf[i] = nan
	}
	var b Bounds[float64]
	b.Init(d, bbuf)
	dbi, out := make([]float64, len(x)), make([]float64, len(x))
	for i := range dbi {
		dbi[i] = 5
	}
	for _, asm := range modes() {
		withMode(asm, func() { b.Adjoint(out, dbi, x, 0) })
		for i, v := range out {
			want := 0.0 // below or above [0, 0] with d_min = d_max = 0, or NaN
			if x[i] == 0 {
				want = 5
			}
			if !same(v, want) {
				t.Fatalf("Bounds after Init asm=%v: element %d x=%v: adjoint %v, want %v", asm, i, x[i], v, want)
			}
		}
	}
}

func TestPeriod(t *testing.T) {
	for d := 1; d <= 2000; d++ {
		l := Period(d)
		if l%d != 0 || (l != d && (l%8 != 0 || l < 256 || l > 2048)) || (l == d && d%8 != 0 && d < 128) {
			t.Fatalf("Period(%d) = %d", d, l)
		}
	}
}

func TestBadCallsPanic(t *testing.T) {
	q := NewQuant[float32](4)
	b := NewBounds[float32](4)
	for name, fn := range map[string]func(){
		"Run lengths":   func() { q.Run(make([]float32, 3), make([]float32, 4), 0) },
		"Set channel":   func() { q.Set(4, Grid[float32]{}) },
		"Grad sums":     func() { b.Grad(make([]float32, 4), make([]float32, 4), make([]float32, 4), 0, make([]float64, 3)) },
		"Fold channels": func() { b.Fold(make([]float64, 2*b.Period()), make([]float64, 3), make([]float64, 4)) },
		"Period 0":      func() { Period(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn()
		}()
	}
}

// benchKernels times Run (dividing), Grad and Adjoint on one channel of
// 2^16 elements x ~ N(0, σ²) against the range ±2.55, in every mode (Go
// loops, assembly): σ = 1 puts 1% of the inputs outside (a branchy loop
// would predict well), σ = 2.5 about 30%.
func benchKernels[T tensorx.Float](b *testing.B) {
	const n = 1 << 16
	gr := grid(T(0.02), 128)
	for _, sigma := range []float64{1, 2.5} {
		r := rand.New(rand.NewSource(1))
		x, g, y := make([]T, n), make([]T, n), make([]T, n)
		for i := range x {
			x[i], g[i] = T(r.NormFloat64()*sigma), T(r.NormFloat64())
		}
		q := NewQuantDiv[T](1)
		q.Set(0, gr)
		bd := NewBounds[T](1)
		bd.Set(0, gr.NMin, gr.NMax, false)
		acc := make([]float64, 2*bd.Period())
		for _, asm := range modes() {
			mode := asm.String()
			for _, k := range []struct {
				name string
				fn   func()
			}{
				{"Forward", func() { q.Run(y, x, 0) }},
				{"Gradient", func() { bd.Grad(y, g, x, 0, acc) }},
				{"Adjoint", func() { bd.Adjoint(y, g, x, 0) }},
			} {
				b.Run(fmt.Sprintf("%s/%s/sigma=%v", k.name, mode, sigma), func(b *testing.B) {
					b.SetBytes(n * int64(unsafe.Sizeof(T(0))))
					withMode(asm, func() {
						for range b.N {
							k.fn()
						}
					})
				})
			}
		}
	}
}

// BenchmarkKernels32 times the float32 kernels.
func BenchmarkKernels32(b *testing.B) { benchKernels[float32](b) }

// BenchmarkKernels64 times the float64 kernels.
func BenchmarkKernels64(b *testing.B) { benchKernels[float64](b) }
