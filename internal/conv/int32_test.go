package conv

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// naiveInt32 is the oracle of the int32 kernels: the loops of
// spec/conv2d.md §2 and §3 written out plainly, summing in int64 and
// truncating to int32 at the end. int64 arithmetic wraps modulo 2^64, a
// multiple of 2^32, so the truncated result is the exact one modulo 2^32
// whatever the operands. The input gradient is a scatter (every output
// position adds into the input positions it reads), the kernel's a
// gather.
type naiveInt32 struct{ g Geom }

func (n naiveInt32) forward(x, f []int32) []int32 {
	g := n.g
	out := make([]int32, g.N*g.OH*g.OW*g.O)
	for b := 0; b < g.N; b++ {
		for i := 0; i < g.OH; i++ {
			for j := 0; j < g.OW; j++ {
				for o := 0; o < g.O; o++ {
					grp := o / g.OG
					var acc int64
					for p := 0; p < g.KH; p++ {
						for q := 0; q < g.KW; q++ {
							for k := 0; k < g.CF; k++ {
								yy, xx := i*g.SH-g.PT+p*g.DH, j*g.SW-g.PL+q*g.DW
								if yy < 0 || yy >= g.H || xx < 0 || xx >= g.W {
									continue
								}
								acc += int64(x[((b*g.H+yy)*g.W+xx)*g.C+grp*g.CF+k]) * int64(f[((p*g.KW+q)*g.CF+k)*g.O+o])
							}
						}
					}
					out[((b*g.OH+i)*g.OW+j)*g.O+o] = int32(acc)
				}
			}
		}
	}
	return out
}

func (n naiveInt32) backpropInput(f, dy []int32) []int32 {
	g := n.g
	acc := make([]int64, g.N*g.H*g.W*g.C)
	for b := 0; b < g.N; b++ {
		for i := 0; i < g.OH; i++ {
			for j := 0; j < g.OW; j++ {
				for o := 0; o < g.O; o++ {
					grp := o / g.OG
					for p := 0; p < g.KH; p++ {
						for q := 0; q < g.KW; q++ {
							for k := 0; k < g.CF; k++ {
								yy, xx := i*g.SH-g.PT+p*g.DH, j*g.SW-g.PL+q*g.DW
								if yy < 0 || yy >= g.H || xx < 0 || xx >= g.W {
									continue
								}
								acc[((b*g.H+yy)*g.W+xx)*g.C+grp*g.CF+k] += int64(dy[((b*g.OH+i)*g.OW+j)*g.O+o]) * int64(f[((p*g.KW+q)*g.CF+k)*g.O+o])
							}
						}
					}
				}
			}
		}
	}
	out := make([]int32, len(acc))
	for i, v := range acc {
		out[i] = int32(v)
	}
	return out
}

// randInt32s returns n values: small ones (|v| <= 9, results far from
// overflow) or, with wide, any int32 (results wrap).
func randInt32s(r *rand.Rand, n int, wide bool) []int32 {
	v := make([]int32, n)
	for i := range v {
		if wide {
			v[i] = int32(r.Uint32())
		} else {
			v[i] = int32(r.Intn(19) - 9)
		}
	}
	return v
}

// TestInt32Kernels checks ForwardInt32 and BackpropInputInt32 against the
// naive int64 loops over random geometries (strides, dilations, paddings
// including asymmetric ones, groups, 1x1 and whole-input filters), with
// small operands and with full-range ones whose sums wrap, on 1, 2 and 3
// threads: exact equality, every element written, the same bits for every
// thread count.
func TestInt32Kernels(t *testing.T) {
	r := rand.New(rand.NewSource(32))
	iters := 300
	if testutil.Long() {
		iters = 3000
	}
	ran, wrapped := 0, 0
	for it := range iters {
		padding := []string{"VALID", "SAME", "EXPLICIT"}[r.Intn(3)]
		var pads [4]int
		if padding == "EXPLICIT" {
			pads = [4]int{r.Intn(3), r.Intn(3), r.Intn(3), r.Intn(3)}
		}
		groups, cf := 1+r.Intn(3), 1+r.Intn(3)
		kh, kw := 1+r.Intn(3), 1+r.Intn(3)
		sh, sw, dh, dw := 1+r.Intn(3), 1+r.Intn(3), 1+r.Intn(2), 1+r.Intn(2)
		h, w := 1+r.Intn(8), 1+r.Intn(8)
		switch it % 6 {
		case 0:
			kh, kw, sh, sw = 1, 1, 1, 1
		case 1:
			kh, kw, dh, dw, padding = h, w, 1, 1, "VALID"
		}
		ng, ok := testutil.NewNaiveConv(false, 1+r.Intn(3), h, w, groups*cf,
			kh, kw, cf, groups*(1+r.Intn(3)), sh, sw, dh, dw, padding, pads)
		if !ok || ng.OH == 0 || ng.OW == 0 {
			continue
		}
		g := Geom{N: ng.N, H: ng.H, W: ng.W, C: ng.C, KH: ng.KH, KW: ng.KW, CF: ng.CF, O: ng.O,
			G: groups, OG: ng.O / groups, OH: ng.OH, OW: ng.OW,
			SH: ng.SH, SW: ng.SW, DH: ng.DH, DW: ng.DW, PT: ng.PT, PB: ng.PB, PL: ng.PL, PR: ng.PR}
		ran++
		wide := it%2 == 1
		nx, nf, ny := g.N*g.H*g.W*g.C, g.KH*g.KW*g.CF*g.O, g.N*g.OH*g.OW*g.O
		x, f, dy := randInt32s(r, nx, wide), randInt32s(r, nf, wide), randInt32s(r, ny, wide)
		ref := naiveInt32{g}
		wantY, wantDx := ref.forward(x, f), ref.backpropInput(f, dy)
		if wide {
			wrapped++
		}
		name := fmt.Sprintf("#%d wide=%v %+v", it, wide, g)
		for _, threads := range []int{1, 2, 3} {
			y, dx := sentinel(ny), sentinel(nx)
			ForwardInt32(y, x, f, &g, threads)
			BackpropInputInt32(dx, f, dy, &g, threads)
			if !slices.Equal(y, wantY) {
				t.Fatalf("%s t%d: ForwardInt32 = %v, want %v", name, threads, y, wantY)
			}
			if !slices.Equal(dx, wantDx) {
				t.Fatalf("%s t%d: BackpropInputInt32 = %v, want %v", name, threads, dx, wantDx)
			}
		}
	}
	if ran < iters/3 || wrapped < ran/3 {
		t.Fatalf("only %d of %d geometries ran (%d with wrapping operands): the generator is off", ran, iters, wrapped)
	}
}

// sentinel returns n elements that no kernel result in these tests equals
// by chance often enough to hide an unwritten element.
func sentinel(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = math.MinInt32 + 12345
	}
	return v
}

// TestInt32KernelsParallel runs a geometry large enough for the kernels'
// multi-threaded paths and checks them against the naive loops and across
// thread counts.
func TestInt32KernelsParallel(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	ng, ok := testutil.NewNaiveConv(false, 3, 23, 19, 6, 3, 3, 3, 8, 2, 1, 1, 2, "SAME", [4]int{})
	if !ok {
		t.Fatal("geometry rejected")
	}
	g := Geom{N: ng.N, H: ng.H, W: ng.W, C: ng.C, KH: ng.KH, KW: ng.KW, CF: ng.CF, O: ng.O,
		G: 2, OG: ng.O / 2, OH: ng.OH, OW: ng.OW,
		SH: ng.SH, SW: ng.SW, DH: ng.DH, DW: ng.DW, PT: ng.PT, PB: ng.PB, PL: ng.PL, PR: ng.PR}
	rows := g.N * g.OH * g.OW
	if grain := max(1, intGrainOps/(g.KCol()*g.O)); rows <= 4*grain {
		t.Fatalf("%d output positions, grain %d: too few for the parallel path", rows, grain)
	}
	nx, nf, ny := g.N*g.H*g.W*g.C, g.KH*g.KW*g.CF*g.O, g.N*g.OH*g.OW*g.O
	x, f, dy := randInt32s(r, nx, true), randInt32s(r, nf, true), randInt32s(r, ny, true)
	ref := naiveInt32{g}
	wantY, wantDx := ref.forward(x, f), ref.backpropInput(f, dy)
	for _, threads := range []int{1, 2, 4, 8} {
		y, dx := sentinel(ny), sentinel(nx)
		ForwardInt32(y, x, f, &g, threads)
		BackpropInputInt32(dx, f, dy, &g, threads)
		if !slices.Equal(y, wantY) || !slices.Equal(dx, wantDx) {
			t.Fatalf("t%d: results differ from the naive loops", threads)
		}
	}
}

// BenchmarkInt32 times the int32 loops against the float32 GEMM path on
// one geometry (3x3 SAME, [8, 32, 32, 16] -> 32 channels), one thread.
func BenchmarkInt32(b *testing.B) {
	ng, _ := testutil.NewNaiveConv(false, 8, 32, 32, 16, 3, 3, 16, 32, 1, 1, 1, 1, "SAME", [4]int{})
	g := Geom{N: ng.N, H: ng.H, W: ng.W, C: ng.C, KH: 3, KW: 3, CF: 16, O: 32, G: 1, OG: 32,
		OH: ng.OH, OW: ng.OW, SH: 1, SW: 1, DH: 1, DW: 1, PT: ng.PT, PB: ng.PB, PL: ng.PL, PR: ng.PR}
	r := rand.New(rand.NewSource(1))
	nx, nf, ny := g.N*g.H*g.W*g.C, g.KCol()*g.O, g.N*g.OH*g.OW*g.O
	x, f, dy := randInt32s(r, nx, true), randInt32s(r, nf, true), randInt32s(r, ny, true)
	macs := float64(ny * g.KCol())
	b.Run("ForwardInt32", func(b *testing.B) {
		out := make([]int32, ny)
		for b.Loop() {
			ForwardInt32(out, x, f, &g, 1)
		}
		b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
	b.Run("BackpropInputInt32", func(b *testing.B) {
		dx := make([]int32, nx)
		for b.Loop() {
			BackpropInputInt32(dx, f, dy, &g, 1)
		}
		b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
	b.Run("ForwardFloat32", func(b *testing.B) {
		xf, ff, out := make([]float32, nx), make([]float32, nf), make([]float32, ny)
		for i, v := range x {
			xf[i] = float32(v % 7)
		}
		for i, v := range f {
			ff[i] = float32(v % 7)
		}
		for b.Loop() {
			Forward(out, xf, ff, &g, 1)
		}
		b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
	})
}
