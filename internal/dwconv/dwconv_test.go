package dwconv

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The kernels are checked against float64 sums of their contracts (with
// a bound relative to the sum of the terms' magnitudes), in every mode:
// the Go loops and each assembly tier the CPU has. Operands are windows
// of larger buffers whose surroundings hold sentinels, so a write outside
// the contract's elements, or a read that reaches the sentinels (NaN),
// shows up.

// modes returns the kernel modes to test: the Go loops (tier go), and the
// assembly kernels of every tier this CPU has (cpu.Has, whatever
// TAPEGRAD_ISA says), or their Go twins where those are built.
func modes() []cpu.ISA {
	ms := []cpu.ISA{cpu.Go}
	for _, isa := range []cpu.ISA{cpu.AVX2, cpu.AVX512} {
		if twinsBuild || cpu.Has(isa) {
			ms = append(ms, isa)
		}
	}
	return ms
}

// withMode runs fn with the kernels of tier isa (the Go loops for
// cpu.Go).
func withMode(isa cpu.ISA, fn func()) {
	old := tier
	tier = isa
	defer func() { tier = old }()
	testutil.WithFlag(&useAsm, isa > cpu.Go, fn)
}

// TestTiers logs which tiers the kernel tests run.
func TestTiers(t *testing.T) {
	ms := modes()
	for _, isa := range cpu.ISAs {
		switch {
		case slices.Contains(ms, isa) && isa > cpu.Go && twinsBuild:
			t.Logf("tier %-6v: run on the Go twins of its kernels (noasm build or not amd64)", isa)
		case slices.Contains(ms, isa):
			t.Logf("tier %-6v: run", isa)
		default:
			t.Logf("tier %-6v: NOT RUN: this CPU or build lacks it (cpu.Max() = %v)", isa, cpu.Max())
		}
	}
	if len(ms) < 2 {
		t.Errorf("only the Go loops run: %v", ms)
	}
}

const guard = 64 // sentinel elements on each side of an operand

// buf is an operand of n elements inside a buffer with NaN guards; only
// the elements where live is true are read by a kernel (others are NaN
// too, so reading them poisons the result).
type buf struct {
	all []float32
	n   int
}

func newBuf(r *rand.Rand, n int, live func(i int) bool) *buf {
	b := &buf{all: aligned(n+2*guard, guard), n: n}
	for i := range b.all {
		b.all[i] = float32(math.NaN())
	}
	for i := range n {
		if live == nil || live(i) {
			b.all[guard+i] = float32(r.NormFloat64())
		}
	}
	return b
}

// aligned returns n float32 whose element at is 64-byte aligned (so that
// the storing kernels' non-temporal variants can run on the operands).
func aligned(n, at int) []float32 {
	raw := make([]float32, n+16)
	k := 0
	for uintptr(unsafe.Pointer(&raw[k+at]))%64 != 0 {
		k++
	}
	return raw[k : k+n : k+n]
}

// s returns the operand slice (capacity-limited, so the guards after it
// are out of reach of slicing, not of the assembly).
func (b *buf) s() []float32 { return b.all[guard : guard+b.n : guard+b.n] }

func (b *buf) at(i int) float64 { return float64(b.all[guard+i]) }

// check compares the operand's elements with want where set is true,
// and requires every other element (guards included) unchanged from
// before.
func (b *buf) check(t *testing.T, name string, before []float32, want, bound []float64, set []bool) {
	t.Helper()
	for i, v := range b.all {
		j := i - guard
		if j >= 0 && j < b.n && set[j] {
			got := float64(v)
			if d := math.Abs(got - want[j]); !(d <= 2e-6*bound[j]+1e-30) {
				t.Fatalf("%s: element %d = %v, want %v (bound %v)", name, j, got, want[j], bound[j])
			}
			continue
		}
		if math.Float32bits(v) != math.Float32bits(before[i]) {
			t.Fatalf("%s: element %d (outside the written set) changed from %v to %v", name, j, before[i], v)
		}
	}
}

func clone(s []float32) []float32 { return append([]float32(nil), s...) }

// chanLive reports whether channel ch of a pixel lies in [0, w).
func chanLive(i, c, w int) bool { return i%c < w }

type geom struct{ c, w, n, s int }

func (g geom) String() string { return fmt.Sprintf("c%d/w%d/n%d/s%d", g.c, g.w, g.n, g.s) }

// chanCounts returns the channel counts w ≤ c the kernel tests take for
// c channels per pixel: every multiple of 8 for small c, and c itself,
// with and without a tail of 8 or 16 channels.
func chanCounts(c int) []int {
	var ws []int
	for w := Block; w <= c; w += Block {
		if c <= 40 || w == Block || w == 16 || w == c&^7 {
			ws = append(ws, w)
		}
	}
	if c%Block != 0 {
		ws = append(ws, c)
	}
	if c > 24 && c%Block == 0 {
		ws = append(ws, c-3)
	}
	return ws
}

// geoms covers channel counts with and without tails, pixel counts
// below, at and above the block sizes (4, 6, 8) with every remainder,
// and both strides.
func geoms() []geom {
	var out []geom
	for _, c := range []int{8, 9, 16, 17, 24, 31, 40, 53, 128} {
		for _, w := range chanCounts(c) {
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 16, 17, 19} {
				for _, s := range []int{1, 2} {
					out = append(out, geom{c, w, n, s})
				}
			}
		}
	}
	return out
}

func TestFwd3x3(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, g := range geoms() {
		c, w, n, s := g.c, g.w, g.n, g.s
		rowPix := (n-1)*s + 3
		var x [3]*buf
		for p := range x {
			x[p] = newBuf(r, rowPix*c, func(i int) bool { return chanLive(i, c, w) })
		}
		tf := newBuf(r, 9*c, func(i int) bool { return chanLive(i, c, w) })
		want := make([]float64, n*c)
		bound := make([]float64, n*c)
		set := make([]bool, n*c)
		for j := range n {
			for ch := range w {
				for p := range 3 {
					for q := range 3 {
						v := x[p].at((s*j+q)*c+ch) * tf.at((3*p+q)*c+ch)
						want[j*c+ch] += v
						bound[j*c+ch] += math.Abs(v)
					}
				}
				set[j*c+ch] = true
			}
		}
		for _, isa := range modes() {
			o := newBuf(r, n*c, nil)
			before := clone(o.all)
			name := fmt.Sprintf("Fwd3x3 %v %v", g, isa)
			withMode(isa, func() {
				Fwd3x3(o.s(), &[3][]float32{x[0].s(), x[1].s(), x[2].s()}, tf.s(), n, w, c, s, x[2].all, false)
				o.check(t, name, before, want, bound, set)
				if isa == cpu.Go {
					return
				}
				// The non-temporal variant stores the same bits.
				o3 := newBuf(r, n*c, nil)
				before3 := clone(o3.all)
				Fwd3x3(o3.s(), &[3][]float32{x[0].s(), x[1].s(), x[2].s()}, tf.s(), n, w, c, s, nil, true)
				sameSet(t, name+" stream", o, o3, before3, set)
				// Any split of the row gives the same bits.
				for k := 1; k < n; k++ {
					o2 := newBuf(r, n*c, nil)
					xs := [3][]float32{x[0].s(), x[1].s(), x[2].s()}
					Fwd3x3(o2.s(), &xs, tf.s(), k, w, c, s, nil, false)
					for p := range xs {
						xs[p] = xs[p][s*k*c:]
					}
					Fwd3x3(o2.s()[k*c:], &xs, tf.s(), n-k, w, c, s, nil, k%2 == 0)
					for i, ok := range set {
						if ok && math.Float32bits(o.all[guard+i]) != math.Float32bits(o2.all[guard+i]) {
							t.Fatalf("%s: split at %d changes element %d", name, k, i)
						}
					}
				}
			})
		}
	}
}

func TestBwdInput3x3S2(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, g := range geoms() {
		if g.s != 1 {
			continue
		}
		c, w, n := g.c, g.w, g.n
		var d [3]*buf
		for p := range d {
			d[p] = newBuf(r, (n+1)*c, func(i int) bool { return chanLive(i, c, w) })
		}
		tf := newBuf(r, 9*c, func(i int) bool { return chanLive(i, c, w) })
		size := 2 * n * c
		want := make([]float64, size)
		bound := make([]float64, size)
		set := make([]bool, size)
		for m := range n {
			for ch := range w {
				e, od := 2*m*c+ch, (2*m+1)*c+ch
				for p := range 3 {
					for _, v := range []float64{d[p].at(m*c+ch) * tf.at((3*p+2)*c+ch), d[p].at((m+1)*c+ch) * tf.at(3*p*c+ch)} {
						want[e] += v
						bound[e] += math.Abs(v)
					}
					v := d[p].at((m+1)*c+ch) * tf.at((3*p+1)*c+ch)
					want[od] += v
					bound[od] += math.Abs(v)
				}
				set[e], set[od] = true, true
			}
		}
		for _, isa := range modes() {
			o := newBuf(r, size, nil)
			before := clone(o.all)
			name := fmt.Sprintf("BwdInput3x3S2 %v %v", g, isa)
			withMode(isa, func() {
				BwdInput3x3S2(o.s(), &[3][]float32{d[0].s(), d[1].s(), d[2].s()}, tf.s(), n, w, c, d[1].all[5:], false)
				o.check(t, name, before, want, bound, set)
				// The non-temporal variant stores the same bits.
				o3 := newBuf(r, size, nil)
				before3 := clone(o3.all)
				BwdInput3x3S2(o3.s(), &[3][]float32{d[0].s(), d[1].s(), d[2].s()}, tf.s(), n, w, c, nil, true)
				sameSet(t, name+" stream", o, o3, before3, set)
			})
		}
	}
}

// sameSet requires got to hold want's bits where set is true and its
// values from before elsewhere.
func sameSet(t *testing.T, name string, want, got *buf, before []float32, set []bool) {
	t.Helper()
	for i := range got.all {
		j := i - guard
		if j >= 0 && j < got.n && set[j] {
			if math.Float32bits(got.all[i]) != math.Float32bits(want.all[i]) {
				t.Fatalf("%s: element %d = %v, want %v", name, j, got.all[i], want.all[i])
			}
		} else if math.Float32bits(got.all[i]) != math.Float32bits(before[i]) {
			t.Fatalf("%s: element %d (outside the written set) changed", name, j)
		}
	}
}

// TestStreamable checks when the storing kernels take non-temporal
// stores: whole vectors of the tier at aligned addresses.
func TestStreamable(t *testing.T) {
	o := aligned(256, 0)
	for _, isa := range modes() {
		withMode(isa, func() {
			for _, tc := range []struct {
				o          []float32
				w, c       int
				avx2, wide bool
			}{
				{o, 128, 128, true, true},
				{o, 32, 32, true, true},
				{o, 24, 24, true, false},
				{o, 16, 24, true, false},
				{o, 20, 20, false, false},
				{o[8:], 32, 32, true, false},
				{o[4:], 32, 32, false, false},
			} {
				want := isa == cpu.AVX2 && tc.avx2 || isa == cpu.AVX512 && tc.wide
				if got := streamable(tc.o, tc.w, tc.c); got != want {
					t.Errorf("%v: streamable(offset %d, w%d, c%d) = %v, want %v", isa, (uintptr(unsafe.Pointer(&tc.o[0]))%64)/4, tc.w, tc.c, got, want)
				}
			}
		})
	}
}

// accChan returns the tap k and channel ch that element i of the packed
// tap sums of w channels holds in the current mode, if any.
func accChan(w, i int) (k, ch int, ok bool) {
	l := accLanes()
	blk, k, lane := i/(9*l), i%(9*l)/l, i%l
	if l == Block && blk == w/Block {
		return k, w - Block + lane, w%Block != 0
	}
	ch = blk*l + lane
	return k, ch, ch < w
}

// TestAccLayout checks that accIndex and accChan are inverse and cover
// every tap of every channel, in every mode.
func TestAccLayout(t *testing.T) {
	for _, isa := range modes() {
		withMode(isa, func() {
			for _, w := range []int{8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 47, 128, 131} {
				n := accLen(w)
				hit := make([]bool, n)
				for k := range 9 {
					for ch := range w {
						i := accIndex(w, k, ch)
						if i < 0 || i >= n {
							t.Fatalf("%v w%d: accIndex(%d, %d) = %d outside [0, %d)", isa, w, k, ch, i, n)
						}
						if k2, ch2, ok := accChan(w, i); !ok || k2 != k || ch2 != ch {
							t.Fatalf("%v w%d: element %d holds tap %d channel %d (%v), want %d, %d", isa, w, i, k2, ch2, ok, k, ch)
						}
						hit[i] = true
					}
				}
				if w%accLanes() == 0 && slices.Contains(hit, false) {
					t.Fatalf("%v w%d: elements no channel uses", isa, w)
				}
			}
		})
	}
}

// accWant returns, for the packed sums of w channels in the current mode,
// which elements a kernel writes and the float64 sums and bounds they
// must hold: acc0's value plus add(k, ch) (a sum and its magnitude).
func accWant(w int, acc0 *buf, add func(k, ch int) (v, b float64)) (want, bound []float64, set []bool) {
	n := acc0.n
	want, bound, set = make([]float64, n), make([]float64, n), make([]bool, n)
	for i := range n {
		k, ch, ok := accChan(w, i)
		if !ok {
			continue
		}
		v, b := add(k, ch)
		want[i] = acc0.at(i) + v
		bound[i] = math.Abs(acc0.at(i)) + b
		set[i] = true
	}
	return want, bound, set
}

func TestFilter3x3(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, g := range geoms() {
		c, w, n, s := g.c, g.w, g.n, g.s
		rowPix := (n-1)*s + 3
		var x [3]*buf
		for p := range x {
			x[p] = newBuf(r, rowPix*c, func(i int) bool { return chanLive(i, c, w) })
		}
		dy := newBuf(r, n*c, func(i int) bool { return chanLive(i, c, w) })
		for _, isa := range modes() {
			withMode(isa, func() {
				size := accLen(w)
				acc0 := newBuf(r, size, nil)
				want, bound, set := accWant(w, acc0, func(k, ch int) (v, b float64) {
					p, q := k/3, k%3
					for j := range n {
						d := dy.at(j*c+ch) * x[p].at((s*j+q)*c+ch)
						v += d
						b += math.Abs(d)
					}
					return v, b
				})
				acc := &buf{all: clone(acc0.all), n: size}
				before := clone(acc.all)
				Filter3x3(acc.s(), dy.s(), &[3][]float32{x[0].s(), x[1].s(), x[2].s()}, n, w, c, s, x[1].all)
				name := fmt.Sprintf("Filter3x3 %v %v", g, isa)
				acc.check(t, name, before, want, bound, set)
				if isa == cpu.Go || n < 2 {
					return
				}
				// Segments of even length give the same bits as one call.
				k := n / 2 &^ 1
				if k == 0 {
					return
				}
				acc2 := &buf{all: clone(acc0.all), n: size}
				xs := [3][]float32{x[0].s(), x[1].s(), x[2].s()}
				Filter3x3(acc2.s(), dy.s(), &xs, k, w, c, s, nil)
				for p := range xs {
					xs[p] = xs[p][s*k*c:]
				}
				Filter3x3(acc2.s(), dy.s()[k*c:], &xs, n-k, w, c, s, nil)
				for i := range acc.all {
					if math.Float32bits(acc.all[i]) != math.Float32bits(acc2.all[i]) {
						t.Fatalf("%s: split at %d changes element %d", name, k, i-guard)
					}
				}
			})
		}
	}
}

func TestDotTaps(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, c := range []int{8, 13, 16, 24, 32, 40, 48, 72, 77} {
		for _, w := range chanCounts(c) {
			for n := 1; n <= 9; n++ {
				xs := make([][]float32, n)
				ts := make([][]float32, n)
				xb := make([]*buf, n)
				tb := make([]*buf, n)
				for i := range n {
					xb[i] = newBuf(r, c, func(j int) bool { return j < w })
					tb[i] = newBuf(r, c, func(j int) bool { return j < w })
					xs[i], ts[i] = xb[i].s(), tb[i].s()
				}
				want := make([]float64, c)
				bound := make([]float64, c)
				set := make([]bool, c)
				for ch := range w {
					for i := range n {
						v := xb[i].at(ch) * tb[i].at(ch)
						want[ch] += v
						bound[ch] += math.Abs(v)
					}
					set[ch] = true
				}
				for _, isa := range modes() {
					o := newBuf(r, c, nil)
					before := clone(o.all)
					withMode(isa, func() { DotTaps(o.s(), xs, ts, w) })
					o.check(t, fmt.Sprintf("DotTaps c%d w%d n%d %v", c, w, n, isa), before, want, bound, set)
				}
			}
		}
	}
}

func TestAxpyTaps(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, c := range []int{8, 13, 16, 24, 40, 77} {
		for _, w := range chanCounts(c) {
			for n := 1; n <= 9; n++ {
				ks := r.Perm(9)[:n]
				xs := make([][]float32, n)
				xb := make([]*buf, n)
				for i := range n {
					xb[i] = newBuf(r, c, func(j int) bool { return j < w })
					xs[i] = xb[i].s()
				}
				dy := newBuf(r, c, func(j int) bool { return j < w })
				for _, isa := range modes() {
					withMode(isa, func() {
						size := accLen(w)
						acc0 := newBuf(r, size, nil)
						want, bound, set := accWant(w, acc0, func(k, ch int) (v, b float64) {
							if i := slices.Index(ks, k); i >= 0 {
								v = dy.at(ch) * xb[i].at(ch)
							}
							return v, math.Abs(v)
						})
						acc := &buf{all: clone(acc0.all), n: size}
						before := clone(acc.all)
						AxpyTaps(acc.s(), ks, xs, dy.s(), w)
						acc.check(t, fmt.Sprintf("AxpyTaps c%d w%d n%d %v", c, w, n, isa), before, want, bound, set)
					})
				}
			}
		}
	}
}

func TestAddF64(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 72, 77, 1152} {
		src := make([]float32, n)
		dst0 := make([]float64, n+3)
		for i := range src {
			src[i] = float32(r.NormFloat64())
		}
		for i := range dst0 {
			dst0[i] = r.NormFloat64()
		}
		for _, isa := range modes() {
			dst := append([]float64(nil), dst0...)
			withMode(isa, func() { AddF64(dst[:n], src) })
			for i, v := range dst {
				want := dst0[i]
				if i < n {
					want += float64(src[i])
				}
				if v != want {
					t.Fatalf("AddF64 n%d %v: element %d = %v, want %v", n, isa, i, v, want)
				}
			}
		}
	}
}

// TestTailOverlap checks the tail schemes: a call on all c channels
// stores, on the channels a call on the whole blocks of 8 covers, exactly
// that call's values (AVX2 recomputes them in a shifted pass, AVX-512
// masks the last block).
func TestTailOverlap(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, isa := range modes() {
		if isa == cpu.Go {
			continue
		}
		for _, c := range []int{9, 17, 23, 31, 41} {
			for _, s := range []int{1, 2} {
				n := 9
				w := c &^ 7
				rowPix := (n-1)*s + 3
				var x [3]*buf
				for p := range x {
					x[p] = newBuf(r, rowPix*c, nil)
				}
				tf := newBuf(r, 9*c, nil)
				xs := [3][]float32{x[0].s(), x[1].s(), x[2].s()}
				o, o2 := newBuf(r, n*c, nil), newBuf(r, n*c, nil)
				withMode(isa, func() {
					Fwd3x3(o.s(), &xs, tf.s(), n, w, c, s, nil, false)
					Fwd3x3(o2.s(), &xs, tf.s(), n, c, c, s, nil, true)
				})
				for j := range n {
					for ch := range w {
						i := guard + j*c + ch
						if math.Float32bits(o.all[i]) != math.Float32bits(o2.all[i]) {
							t.Fatalf("%v c%d s%d: pixel %d channel %d differs with the tail", isa, c, s, j, ch)
						}
					}
				}
			}
		}
	}
}

// TestTiersAgree checks that the assembly tiers give the same bits: every
// tier does the same operations per channel in the same order.
func TestTiersAgree(t *testing.T) {
	var asm []cpu.ISA
	for _, isa := range modes() {
		if isa > cpu.Go {
			asm = append(asm, isa)
		}
	}
	if len(asm) < 2 {
		t.Skipf("NOT RUN: one assembly tier only (%v)", asm)
	}
	r := rand.New(rand.NewSource(8))
	for _, g := range geoms() {
		c, w, n, s := g.c, g.w, g.n, g.s
		rowLen := ((n-1)*s + 3) * c
		x := [3][]float32{randF32(r, rowLen), randF32(r, rowLen), randF32(r, rowLen)}
		tf, dy := randF32(r, 9*c), randF32(r, n*c)
		var first [2][]float32
		for i, isa := range asm {
			var got [2][]float32
			withMode(isa, func() {
				o := make([]float32, n*c)
				Fwd3x3(o, &x, tf, n, w, c, s, nil, false)
				acc := make([]float32, accLen(w))
				Filter3x3(acc, dy, &x, n, w, c, s, nil)
				sums := make([]float32, 9*w)
				for k := range 9 {
					for ch := range w {
						sums[k*w+ch] = acc[accIndex(w, k, ch)]
					}
				}
				got = [2][]float32{o, sums}
			})
			if i == 0 {
				first = got
				continue
			}
			for k, name := range []string{"Fwd3x3", "Filter3x3"} {
				if e := testutil.BitDiff(first[k], got[k], false); e >= 0 {
					t.Fatalf("%s %v: %v and %v differ at element %d", name, g, asm[0], isa, e)
				}
			}
		}
	}
}

// randF32 returns n normal float32 values.
func randF32(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

// TestPanics checks that short operands panic in the wrapper, before any
// assembly runs.
func TestPanics(t *testing.T) {
	x := make([]float32, 100)
	rows := &[3][]float32{x, x, x}
	for name, fn := range map[string]func(){
		"channels":     func() { Fwd3x3(x, rows, x, 1, 16, 8, 1, nil, false) },
		"few channels": func() { Fwd3x3(x, rows, x, 1, 7, 8, 1, nil, false) },
		"stride":       func() { Fwd3x3(x, rows, x, 1, 8, 8, 3, nil, false) },
		"pixels":       func() { Fwd3x3(x, rows, x, 0, 8, 8, 1, nil, false) },
		"short output": func() { Fwd3x3(x[:10], rows, x, 2, 8, 8, 1, nil, true) },
		"short row":    func() { Fwd3x3(x, &[3][]float32{x, x[:20], x}, x, 2, 8, 8, 1, nil, false) },
		"short filter": func() { Fwd3x3(x, rows, x[:70], 1, 8, 8, 1, nil, false) },
		"pairs":        func() { BwdInput3x3S2(x, rows, x, 0, 8, 8, nil, false) },
		"short dy":     func() { BwdInput3x3S2(x, &[3][]float32{x, x, x[:20]}, x, 2, 8, 8, nil, true) },
		"acc":          func() { Filter3x3(x[:71], x, rows, 1, 8, 8, 1, nil) },
		"dot taps":     func() { DotTaps(x, nil, nil, 8) },
		"dot short":    func() { DotTaps(x, [][]float32{x[:7]}, [][]float32{x}, 8) },
		"axpy tap":     func() { AxpyTaps(x, []int{9}, [][]float32{x}, x, 8) },
		"axpy acc":     func() { AxpyTaps(x[:71], []int{0}, [][]float32{x}, x, 8) },
		"addf64":       func() { AddF64(make([]float64, 3), x[:4]) },
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
