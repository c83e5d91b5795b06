package dwconv

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The kernels are checked against float64 sums of their contracts (with
// a bound relative to the sum of the terms' magnitudes), in both modes:
// the assembly (when the CPU has it) and the Go loops. Operands are
// windows of larger buffers whose surroundings hold sentinels, so a write
// outside the contract's elements, or a read that reaches the sentinels
// (NaN), shows up.

// modes returns the kernel modes to test: Go loops, and the assembly
// kernels if the CPU has them, or their Go twins where they are built.
func modes() []bool { return testutil.Modes(useAsm || twinsBuild) }

// withMode runs fn with useAsm set to asm.
func withMode(asm bool, fn func()) { testutil.WithFlag(&useAsm, asm, fn) }

const guard = 64 // sentinel elements on each side of an operand

// buf is an operand of n elements inside a buffer with NaN guards; only
// the elements where live is true are read by a kernel (others are NaN
// too, so reading them poisons the result).
type buf struct {
	all []float32
	n   int
}

func newBuf(r *rand.Rand, n int, live func(i int) bool) *buf {
	b := &buf{all: make([]float32, n+2*guard), n: n}
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

// chanLive reports whether channel ch of a pixel lies in the blocks.
func chanLive(i, c, nb int) bool { return i%c < Block*nb }

type geom struct{ c, nb, n, s int }

func (g geom) String() string { return fmt.Sprintf("c%d/nb%d/n%d/s%d", g.c, g.nb, g.n, g.s) }

// geoms covers channel counts with and without tails, all block counts
// of small c, pixel counts below, at and above the block sizes (4, 6)
// with every remainder, and both strides.
func geoms() []geom {
	var out []geom
	for _, c := range []int{8, 9, 16, 17, 24, 31, 40, 128} {
		for nb := 1; Block*nb <= c; nb++ {
			if c > 40 && nb != c/Block && nb != 1 {
				continue
			}
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 19} {
				for _, s := range []int{1, 2} {
					out = append(out, geom{c, nb, n, s})
				}
			}
		}
	}
	return out
}

func TestFwd3x3(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, g := range geoms() {
		c, nb, n, s := g.c, g.nb, g.n, g.s
		rowPix := (n-1)*s + 3
		var x [3]*buf
		for p := range x {
			x[p] = newBuf(r, rowPix*c, func(i int) bool { return chanLive(i, c, nb) })
		}
		tf := newBuf(r, 9*c, func(i int) bool { return chanLive(i, c, nb) })
		want := make([]float64, n*c)
		bound := make([]float64, n*c)
		set := make([]bool, n*c)
		for j := range n {
			for ch := range Block * nb {
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
		for _, asm := range modes() {
			o := newBuf(r, n*c, nil)
			before := clone(o.all)
			withMode(asm, func() {
				Fwd3x3(o.s(), &[3][]float32{x[0].s(), x[1].s(), x[2].s()}, tf.s(), n, nb, c, s, x[2].all)
			})
			name := fmt.Sprintf("Fwd3x3 %v asm=%v", g, asm)
			o.check(t, name, before, want, bound, set)
			if !asm {
				continue
			}
			// Any split of the row gives the same bits.
			for k := 1; k < n; k++ {
				o2 := newBuf(r, n*c, nil)
				xs := [3][]float32{x[0].s(), x[1].s(), x[2].s()}
				Fwd3x3(o2.s(), &xs, tf.s(), k, nb, c, s, nil)
				for p := range xs {
					xs[p] = xs[p][s*k*c:]
				}
				Fwd3x3(o2.s()[k*c:], &xs, tf.s(), n-k, nb, c, s, nil)
				for i, ok := range set {
					if ok && math.Float32bits(o.all[guard+i]) != math.Float32bits(o2.all[guard+i]) {
						t.Fatalf("%s: split at %d changes element %d", name, k, i)
					}
				}
			}
		}
	}
}

func TestBwdInput3x3S2(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, g := range geoms() {
		if g.s != 1 {
			continue
		}
		c, nb, n := g.c, g.nb, g.n
		var d [3]*buf
		for p := range d {
			d[p] = newBuf(r, (n+1)*c, func(i int) bool { return chanLive(i, c, nb) })
		}
		tf := newBuf(r, 9*c, func(i int) bool { return chanLive(i, c, nb) })
		size := 2 * n * c
		want := make([]float64, size)
		bound := make([]float64, size)
		set := make([]bool, size)
		for m := range n {
			for ch := range Block * nb {
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
		for _, asm := range modes() {
			o := newBuf(r, size, nil)
			before := clone(o.all)
			withMode(asm, func() {
				BwdInput3x3S2(o.s(), &[3][]float32{d[0].s(), d[1].s(), d[2].s()}, tf.s(), n, nb, c, d[1].all[5:])
			})
			o.check(t, fmt.Sprintf("BwdInput3x3S2 %v asm=%v", g, asm), before, want, bound, set)
		}
	}
}

func TestFilter3x3(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, g := range geoms() {
		c, nb, n, s := g.c, g.nb, g.n, g.s
		rowPix := (n-1)*s + 3
		var x [3]*buf
		for p := range x {
			x[p] = newBuf(r, rowPix*c, func(i int) bool { return chanLive(i, c, nb) })
		}
		dy := newBuf(r, n*c, func(i int) bool { return chanLive(i, c, nb) })
		size := 72 * nb
		acc0 := newBuf(r, size, nil)
		want := make([]float64, size)
		bound := make([]float64, size)
		set := make([]bool, size)
		for b := range nb {
			for k := range 9 {
				p, q := k/3, k%3
				for l := range Block {
					i := 72*b + 8*k + l
					ch := Block*b + l
					want[i] = acc0.at(i)
					bound[i] = math.Abs(want[i])
					for j := range n {
						v := dy.at(j*c+ch) * x[p].at((s*j+q)*c+ch)
						want[i] += v
						bound[i] += math.Abs(v)
					}
					set[i] = true
				}
			}
		}
		for _, asm := range modes() {
			acc := &buf{all: clone(acc0.all), n: size}
			before := clone(acc.all)
			withMode(asm, func() {
				Filter3x3(acc.s(), dy.s(), &[3][]float32{x[0].s(), x[1].s(), x[2].s()}, n, nb, c, s, x[1].all)
			})
			name := fmt.Sprintf("Filter3x3 %v asm=%v", g, asm)
			acc.check(t, name, before, want, bound, set)
			if !asm || n < 2 {
				continue
			}
			// Segments of even length give the same bits as one call.
			k := n / 2 &^ 1
			if k == 0 {
				continue
			}
			acc2 := &buf{all: clone(acc0.all), n: size}
			xs := [3][]float32{x[0].s(), x[1].s(), x[2].s()}
			Filter3x3(acc2.s(), dy.s(), &xs, k, nb, c, s, nil)
			for p := range xs {
				xs[p] = xs[p][s*k*c:]
			}
			Filter3x3(acc2.s(), dy.s()[k*c:], &xs, n-k, nb, c, s, nil)
			for i := range acc.all {
				if math.Float32bits(acc.all[i]) != math.Float32bits(acc2.all[i]) {
					t.Fatalf("%s: split at %d changes element %d", name, k, i-guard)
				}
			}
		}
	}
}

func TestDotTaps(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for _, c := range []int{8, 13, 16, 24, 32, 40, 48, 72} {
		for nb := 1; Block*nb <= c; nb++ {
			for n := 1; n <= 9; n++ {
				xs := make([][]float32, n)
				ts := make([][]float32, n)
				xb := make([]*buf, n)
				tb := make([]*buf, n)
				for i := range n {
					xb[i] = newBuf(r, c, func(j int) bool { return j < Block*nb })
					tb[i] = newBuf(r, c, func(j int) bool { return j < Block*nb })
					xs[i], ts[i] = xb[i].s(), tb[i].s()
				}
				want := make([]float64, c)
				bound := make([]float64, c)
				set := make([]bool, c)
				for ch := range Block * nb {
					for i := range n {
						v := xb[i].at(ch) * tb[i].at(ch)
						want[ch] += v
						bound[ch] += math.Abs(v)
					}
					set[ch] = true
				}
				for _, asm := range modes() {
					o := newBuf(r, c, nil)
					before := clone(o.all)
					withMode(asm, func() { DotTaps(o.s(), xs, ts, nb) })
					o.check(t, fmt.Sprintf("DotTaps c%d nb%d n%d asm=%v", c, nb, n, asm), before, want, bound, set)
				}
			}
		}
	}
}

func TestAxpyTaps(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, c := range []int{8, 13, 16, 24, 40} {
		for nb := 1; Block*nb <= c; nb++ {
			for n := 1; n <= 9; n++ {
				ks := r.Perm(9)[:n]
				xs := make([][]float32, n)
				xb := make([]*buf, n)
				for i := range n {
					xb[i] = newBuf(r, c, func(j int) bool { return j < Block*nb })
					xs[i] = xb[i].s()
				}
				dy := newBuf(r, c, func(j int) bool { return j < Block*nb })
				size := 72 * nb
				acc0 := newBuf(r, size, nil)
				want := make([]float64, size)
				bound := make([]float64, size)
				set := make([]bool, size)
				for b := range nb {
					for i, k := range ks {
						for l := range Block {
							a := 72*b + 8*k + l
							v := dy.at(Block*b+l) * xb[i].at(Block*b+l)
							want[a] = acc0.at(a) + v
							bound[a] = math.Abs(acc0.at(a)) + math.Abs(v)
							set[a] = true
						}
					}
				}
				for _, asm := range modes() {
					acc := &buf{all: clone(acc0.all), n: size}
					before := clone(acc.all)
					withMode(asm, func() { AxpyTaps(acc.s(), ks, xs, dy.s(), nb) })
					acc.check(t, fmt.Sprintf("AxpyTaps c%d nb%d n%d asm=%v", c, nb, n, asm), before, want, bound, set)
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
		for _, asm := range modes() {
			dst := append([]float64(nil), dst0...)
			withMode(asm, func() { AddF64(dst[:n], src) })
			for i, v := range dst {
				want := dst0[i]
				if i < n {
					want += float64(src[i])
				}
				if v != want {
					t.Fatalf("AddF64 n%d asm=%v: element %d = %v, want %v", n, asm, i, v, want)
				}
			}
		}
	}
}

// TestTailOverlap checks the tail-channel scheme: a call on slices shifted
// by c−8 with one block stores, on the channels it shares with the main
// call, exactly the main call's values.
func TestTailOverlap(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly kernels on this CPU or build: the Go loops have no blocks")
	}
	r := rand.New(rand.NewSource(7))
	for _, c := range []int{9, 17, 23, 31} {
		for _, s := range []int{1, 2} {
			n := 9
			nb := c / Block
			rowPix := (n-1)*s + 3
			var x [3]*buf
			for p := range x {
				x[p] = newBuf(r, rowPix*c, nil)
			}
			tf := newBuf(r, 9*c, nil)
			o := newBuf(r, n*c, nil)
			xs := [3][]float32{x[0].s(), x[1].s(), x[2].s()}
			Fwd3x3(o.s(), &xs, tf.s(), n, nb, c, s, nil)
			main := clone(o.all)
			off := c - Block
			for p := range xs {
				xs[p] = xs[p][off:]
			}
			Fwd3x3(o.s()[off:], &xs, tf.s()[off:], n, 1, c, s, nil)
			for j := range n {
				for ch := off; ch < Block*nb; ch++ {
					i := guard + j*c + ch
					if math.Float32bits(o.all[i]) != math.Float32bits(main[i]) {
						t.Fatalf("c%d s%d: pixel %d channel %d differs in the tail call", c, s, j, ch)
					}
				}
			}
		}
	}
}

// TestPanics checks that short operands panic in the wrapper, before any
// assembly runs.
func TestPanics(t *testing.T) {
	x := make([]float32, 100)
	rows := &[3][]float32{x, x, x}
	for name, fn := range map[string]func(){
		"blocks":       func() { Fwd3x3(x, rows, x, 1, 2, 8, 1, nil) },
		"stride":       func() { Fwd3x3(x, rows, x, 1, 1, 8, 3, nil) },
		"pixels":       func() { Fwd3x3(x, rows, x, 0, 1, 8, 1, nil) },
		"short output": func() { Fwd3x3(x[:10], rows, x, 2, 1, 8, 1, nil) },
		"short row":    func() { Fwd3x3(x, &[3][]float32{x, x[:20], x}, x, 2, 1, 8, 1, nil) },
		"short filter": func() { Fwd3x3(x, rows, x[:70], 1, 1, 8, 1, nil) },
		"pairs":        func() { BwdInput3x3S2(x, rows, x, 0, 1, 8, nil) },
		"short dy":     func() { BwdInput3x3S2(x, &[3][]float32{x, x, x[:20]}, x, 2, 1, 8, nil) },
		"acc":          func() { Filter3x3(x[:71], x, rows, 1, 1, 8, 1, nil) },
		"dot taps":     func() { DotTaps(x, nil, nil, 1) },
		"dot short":    func() { DotTaps(x, [][]float32{x[:7]}, [][]float32{x}, 1) },
		"axpy tap":     func() { AxpyTaps(x, []int{9}, [][]float32{x}, x, 1) },
		"axpy acc":     func() { AxpyTaps(x[:71], []int{0}, [][]float32{x}, x, 1) },
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
