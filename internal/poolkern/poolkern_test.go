package poolkern

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// The naive float64 references, written from the definitions in the
// package doc: every output visits its window position by position, with
// padding positions (outside the input) skipped.

// nIdx is the flat index of (n, h, w, c) in g's input layout (H, W the
// spatial sizes given).
func nIdx(g Geom, n, h, w, c, hs, ws int) int {
	if g.NCHW {
		return ((n*g.C+c)*hs+h)*ws + w
	}
	return ((n*hs+h)*ws+w)*g.C + c
}

// nWindow lists the input positions of output (oh, ow), row-major.
func nWindow(g Geom, oh, ow int) [][2]int {
	var out [][2]int
	for i := 0; i < g.KH; i++ {
		for j := 0; j < g.KW; j++ {
			h, w := oh*g.SH-g.PadT+i, ow*g.SW-g.PadL+j
			if h >= 0 && h < g.H && w >= 0 && w < g.W {
				out = append(out, [2]int{h, w})
			}
		}
	}
	return out
}

type naive struct {
	y, dxMax, dxAvg, avg, ggMax []float64
}

func runNaive(g Geom, x, dy, gx []float64) naive {
	in, out := g.N*g.H*g.W*g.C, g.N*g.OH*g.OW*g.C
	r := naive{y: make([]float64, out), avg: make([]float64, out), dxMax: make([]float64, in), dxAvg: make([]float64, in), ggMax: make([]float64, out)}
	for n := 0; n < g.N; n++ {
		for c := 0; c < g.C; c++ {
			for oh := 0; oh < g.OH; oh++ {
				for ow := 0; ow < g.OW; ow++ {
					o := nIdx(g, n, oh, ow, c, g.OH, g.OW)
					win := nWindow(g, oh, ow)
					best := -1
					sum := 0.0
					for _, p := range win {
						i := nIdx(g, n, p[0], p[1], c, g.H, g.W)
						sum += x[i]
						if best < 0 || x[i] > x[best] {
							best = i
						}
					}
					r.y[o] = x[best]
					r.avg[o] = sum / float64(len(win))
					r.dxMax[best] += dy[o]
					for _, p := range win {
						r.dxAvg[nIdx(g, n, p[0], p[1], c, g.H, g.W)] += dy[o] / float64(len(win))
					}
					for _, p := range win {
						if i := nIdx(g, n, p[0], p[1], c, g.H, g.W); x[i] == r.y[o] {
							r.ggMax[o] = gx[i]
							break
						}
					}
				}
			}
		}
	}
	return r
}

// randGeom returns a random geometry with SAME-like or VALID padding.
func randGeom(r *rand.Rand) Geom {
	g := Geom{NCHW: r.Intn(2) == 0, N: 1 + r.Intn(3), H: 1 + r.Intn(6), W: 1 + r.Intn(6), C: 1 + r.Intn(4),
		KH: 1 + r.Intn(3), KW: 1 + r.Intn(3), SH: 1 + r.Intn(3), SW: 1 + r.Intn(3)}
	same := func(in, k, s int) (o, p int) {
		o = (in + s - 1) / s
		return o, max(0, (o-1)*s+k-in) / 2
	}
	if r.Intn(2) == 0 {
		g.OH, g.PadT = same(g.H, g.KH, g.SH)
		g.OW, g.PadL = same(g.W, g.KW, g.SW)
	} else {
		g.OH, g.OW = max(0, (g.H-g.KH+g.SH)/g.SH), max(0, (g.W-g.KW+g.SW)/g.SW)
	}
	return g
}

func to[T Float](v []float64) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}

func check[T Float](t *testing.T, what string, got []T, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if d := float64(got[i]) - want[i]; d > tol || d < -tol {
			t.Fatalf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
}

func testPools[T Float](t *testing.T, tol float64) {
	r := rand.New(rand.NewSource(7))
	for it := 0; it < 600; it++ {
		g := randGeom(r)
		in, out := g.N*g.H*g.W*g.C, g.N*g.OH*g.OW*g.C
		x := make([]float64, in)
		for i := range x {
			x[i] = float64(r.Intn(4)) // frequent ties
			if it%2 == 0 {
				x[i] += r.Float64()
			}
		}
		x = toF64(to[T](x))
		dy, gx := toF64(to[T](randVals(r, out))), toF64(to[T](randVals(r, in)))
		want := runNaive(g, x, dy, gx)
		name := fmt.Sprintf("%+v", g)
		var first [5][]T
		for ti, threads := range []int{1, 3} {
			y := make([]T, out)
			MaxPool(threads, y, to[T](x), g)
			check(t, name+" MaxPool", y, want.y, 0)
			a := make([]T, out)
			AvgPool(threads, a, to[T](x), g)
			check(t, name+" AvgPool", a, want.avg, tol)
			dx := make([]T, in)
			for i := range dx {
				dx[i] = 99 // every element must be written
			}
			MaxPoolGrad(threads, dx, to[T](x), to[T](dy), g)
			check(t, name+" MaxPoolGrad", dx, want.dxMax, tol)
			da := make([]T, in)
			for i := range da {
				da[i] = 99
			}
			AvgPoolGrad(threads, da, to[T](dy), g)
			check(t, name+" AvgPoolGrad", da, want.dxAvg, tol)
			gg := make([]T, out)
			MaxPoolGradGrad(threads, gg, to[T](x), y, to[T](gx), g)
			check(t, name+" MaxPoolGradGrad", gg, want.ggMax, 0)
			res := [5][]T{y, a, dx, da, gg}
			for k := range res {
				if ti == 0 {
					first[k] = res[k]
					continue
				}
				for i := range res[k] {
					if res[k][i] != first[k][i] {
						t.Fatalf("%s: result %d differs between 1 and 3 threads", name, k)
					}
				}
			}
		}
	}
}

func toF64[T Float](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func randVals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	return v
}

func TestPoolsFloat64(t *testing.T) { testPools[float64](t, 1e-12) }
func TestPoolsFloat32(t *testing.T) { testPools[float32](t, 1e-5) }

// TestMaxPoolGradGradStaleOutput: an output no window element equals gives
// 0, as TensorFlow's kernel.
func TestMaxPoolGradGradStaleOutput(t *testing.T) {
	g := Geom{N: 1, H: 2, W: 2, C: 1, KH: 2, KW: 2, SH: 2, SW: 2, OH: 1, OW: 1}
	dst := []float64{7}
	MaxPoolGradGrad(1, dst, []float64{1, 2, 3, 4}, []float64{5}, []float64{1, 1, 1, 1}, g)
	if dst[0] != 0 {
		t.Fatalf("stale output: %v, want 0", dst[0])
	}
}

// TestLargeParallel exercises the parallel path on a larger problem.
func TestLargeParallel(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, nchw := range []bool{false, true} {
		g := Geom{NCHW: nchw, N: 8, H: 28, W: 28, C: 16, KH: 2, KW: 2, SH: 2, SW: 2, OH: 14, OW: 14}
		x := randVals(r, g.N*g.H*g.W*g.C)
		dy := randVals(r, g.N*g.OH*g.OW*g.C)
		want := runNaive(g, x, dy, x)
		y := make([]float64, len(dy))
		MaxPool(4, y, x, g)
		check(t, "MaxPool large", y, want.y, 0)
		dx := make([]float64, len(x))
		AvgPoolGrad(4, dx, dy, g)
		check(t, "AvgPoolGrad large", dx, want.dxAvg, 1e-12)
	}
}

// TestMaxPoolGradNaN: in a window with NaNs the gradient goes where the
// scan by strictly greater values from the window's first element ends
// (NaN never replaces; a first NaN is never replaced), in both layouts
// and on both NHWC paths (channels in the stack array, and more).
func TestMaxPoolGradNaN(t *testing.T) {
	nan := math.NaN()
	for _, c := range []int{1, maxChannels + 1} {
		for _, nchw := range []bool{false, true} {
			g := Geom{NCHW: nchw, N: 1, H: 2, W: 4, C: c, KH: 2, KW: 2, SH: 2, SW: 2, OH: 1, OW: 2}
			// Windows (row-major): [NaN, 1, 2, 0] and [1, NaN, 3, 2] per channel.
			plane := []float64{nan, 1, 1, nan, 2, 0, 3, 2}
			x := make([]float64, 8*c)
			for k := 0; k < c; k++ {
				for p, v := range plane {
					if nchw {
						x[k*8+p] = v
					} else {
						x[p*c+k] = v
					}
				}
			}
			dy := make([]float64, 2*c)
			for i := range dy {
				dy[i] = 1
			}
			dx := make([]float64, len(x))
			MaxPoolGrad(1, dx, x, dy, g)
			want := []float64{1, 0, 0, 0, 0, 0, 1, 0} // window 1: position (0,0); window 2: (1,2)
			for k := 0; k < c; k++ {
				for p, w := range want {
					i := p*c + k
					if nchw {
						i = k*8 + p
					}
					if dx[i] != w {
						t.Fatalf("C=%d nchw=%v channel %d position %d: %v, want %v", c, nchw, k, p, dx[i], w)
					}
				}
			}
		}
	}
}
