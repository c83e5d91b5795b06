package bnkern

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The passes over layouts (batch.go) against float64 evaluations of their
// contracts, bit-identical for every thread count and with the block
// kernels or the Go loops.

// batchOut is every result of the four passes over one layout.
type batchOut struct {
	shift                  []float32
	s1, s2, g1, g2, i1, i2 []float64
	y, yr, dx, dxi         []float32
}

func runBatch(l Layout, x, dy, co []float32, threads int) batchOut {
	C, n := l.C, l.Size()
	part := make([]float64, PartialsLen(l))
	o := batchOut{shift: make([]float32, C), y: make([]float32, n), yr: make([]float32, n), dx: make([]float32, n), dxi: make([]float32, n)}
	for _, p := range []*[]float64{&o.s1, &o.s2, &o.g1, &o.g2, &o.i1, &o.i2} {
		*p = make([]float64, C)
	}
	Stats(o.shift, o.s1, o.s2, x, l, part, threads)
	Normalize(o.y, x, l, co[:C], co[C:2*C], co[2*C:3*C], false, threads)
	Normalize(o.yr, x, l, co[:C], co[C:2*C], co[2*C:3*C], true, threads)
	GradSums(o.g1, o.g2, nil, dy, x, l, co[:C], nil, part, threads)
	GradSums(o.i1, o.i2, o.dxi, dy, x, l, co[:C], co[C:2*C], part, threads)
	GradDx(o.dx, dy, x, l, co[:C], co[C:2*C], co[2*C:3*C], co[3*C:], threads)
	return o
}

func TestBatchPasses(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for _, l := range []Layout{
		{Outer: 1, C: 1, Inner: 1}, {Outer: 30, C: 24, Inner: 1}, {Outer: 4096, C: 11, Inner: 1},
		{Outer: 3, C: 5, Inner: 7}, {Outer: 64, C: 4, Inner: 300}, {Outer: 2, C: 3, Inner: 1},
		{Outer: 3000, C: 24, Inner: 1}, // several relu pieces per block
	} {
		name := fmt.Sprintf("%+v", l)
		n, C := l.Size(), l.C
		x, dy, co := make([]float32, n), make([]float32, n), make([]float32, 4*C)
		for i := range x {
			x[i], dy[i] = float32(3+2*r.NormFloat64()), float32(r.NormFloat64())
		}
		for i := range co {
			co[i] = float32(1 + r.NormFloat64())
		}
		var ref batchOut
		for _, asm := range modes() {
			for _, threads := range []int{1, 2, 3} {
				var o batchOut
				withMode(asm, func() { o = runBatch(l, x, dy, co, threads) })
				if ref.y == nil {
					ref = o
					checkBatch(t, name, l, x, dy, co, o)
					continue
				}
				for i, p := range [][2][]float64{{ref.s1, o.s1}, {ref.s2, o.s2}, {ref.g1, o.g1}, {ref.g2, o.g2}, {ref.i1, o.i1}, {ref.i2, o.i2}} {
					if j, ok := sameBits(p[0], p[1]); !ok {
						t.Fatalf("%s asm=%v threads=%d: sum %d channel %d = %v, want %v", name, asm, threads, i, j, p[1][j], p[0][j])
					}
				}
				for i, p := range [][2][]float32{{ref.shift, o.shift}, {ref.y, o.y}, {ref.yr, o.yr}, {ref.dx, o.dx}, {ref.dxi, o.dxi}} {
					if j, ok := sameBits(p[0], p[1]); !ok {
						t.Fatalf("%s asm=%v threads=%d: output %d element %d = %v, want %v", name, asm, threads, i, j, p[1][j], p[0][j])
					}
				}
			}
		}
	}
}

// checkBatch compares o with float64 evaluations of the contracts.
func checkBatch(t *testing.T, name string, l Layout, x, dy, co []float32, o batchOut) {
	t.Helper()
	C, S := l.C, l.Inner
	ch := func(i int) int { return (i / S) % C }
	s1, s2, g1, g2 := make([]float64, C), make([]float64, C), make([]float64, C), make([]float64, C)
	mag := make([]float64, C)
	for i, v := range x {
		c := ch(i)
		// The shift is the channel's first element (all finite here).
		if i < C*S && i%S == 0 && o.shift[c] != x[i] {
			t.Fatalf("%s: shift %d = %v, want %v", name, c, o.shift[c], x[c*S])
		}
		d := float64(v) - float64(o.shift[c])
		s1[c] += d
		s2[c] += d * d
		g1[c] += float64(dy[i])
		g2[c] += float64(dy[i]) * (float64(v) - float64(co[c]))
		mag[c] += math.Abs(d)*(1+math.Abs(d)) + math.Abs(float64(dy[i]))*(1+math.Abs(float64(v)-float64(co[c])))
		tol := 1e-5 * (1 + math.Abs(float64(v)))
		if w := (float64(v)-float64(co[c]))*float64(co[C+c]) + float64(co[2*C+c]); math.Abs(float64(o.y[i])-w) > tol*10 {
			t.Fatalf("%s: y[%d] = %v, want %v", name, i, o.y[i], w)
		}
		// With relu: exactly Relu of the plain output (same bits;
		// std::max(y, 0) keeps a NaN or −0 y).
		w := o.y[i]
		if w < 0 {
			w = 0
		}
		if math.Float32bits(o.yr[i]) != math.Float32bits(w) {
			t.Fatalf("%s: relu y[%d] = %v, want max(%v, 0)", name, i, o.yr[i], o.y[i])
		}
		if w := float64(co[c])*(float64(dy[i])-float64(co[C+c])) - float64(co[2*C+c])*(float64(v)-float64(co[3*C+c])); math.Abs(float64(o.dx[i])-w) > tol*10 {
			t.Fatalf("%s: dx[%d] = %v, want %v", name, i, o.dx[i], w)
		}
		if w := float64(dy[i]) * float64(co[C+c]); math.Abs(float64(o.dxi[i])-w) > tol {
			t.Fatalf("%s: inference dx[%d] = %v, want %v", name, i, o.dxi[i], w)
		}
	}
	for c := 0; c < C; c++ {
		tol := 1e-6*mag[c] + 1e-9
		for _, p := range [][3]float64{{o.s1[c], s1[c]}, {o.s2[c], s2[c]}, {o.g1[c], g1[c]}, {o.g2[c], g2[c]}, {o.i1[c], g1[c]}, {o.i2[c], g2[c]}} {
			if math.Abs(p[0]-p[1]) > tol {
				t.Fatalf("%s channel %d: sum %v, want %v", name, c, p[0], p[1])
			}
		}
	}
}

// TestBatchPassesNoAllocations: the passes allocate nothing on one thread.
func TestBatchPassesNoAllocations(t *testing.T) {
	l := Layout{Outer: 512, C: 16, Inner: 1}
	x, co := make([]float32, l.Size()), make([]float32, 4*l.C)
	y := make([]float32, l.Size())
	s1, s2 := make([]float64, l.C), make([]float64, l.C)
	part := make([]float64, PartialsLen(l))
	if n := testing.AllocsPerRun(20, func() {
		Stats(co[:l.C], s1, s2, x, l, part, 1)
		Normalize(y, x, l, co, co, co, false, 1)
		Normalize(y, x, l, co, co, co, true, 1)
		GradSums(s1, s2, y, x, x, l, co, co, part, 1)
		GradDx(y, x, x, l, co, co, co, co, 1)
	}); n != 0 {
		t.Fatalf("%v allocations per run", n)
	}
}
