package dwconv

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/cpu"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// Forward, BackpropInput and BackpropFilter in float32 against the
// float64 reference (testutil.DepthwiseRef), on the float32 paths of the
// kernels and on the Go loops.

// pathCase is one geometry of TestPaths.
type pathCase struct {
	n, h, w, c, sh, sw, dh, dw int
	padding                    string
	pads                       [4]int
	nchw                       bool
}

// pathCases covers the float32 paths (3x3, multiplier 1, column stride
// 1 or 2, column dilation 1, at least 8 channels): channel counts with
// and without a tail, tiny and odd images (empty interiors, rows with
// one or two valid filter rows), large explicit paddings, row strides
// and dilations 1–3; and neighbours that fall back to Go (column
// dilation 2, column stride 3, 7 channels).
func pathCases() []pathCase {
	var out []pathCase
	idx := 0
	for _, c := range []int{8, 9, 16, 23, 40} {
		for _, s := range [][2]int{{1, 1}, {2, 2}, {1, 2}, {2, 1}, {3, 1}, {3, 2}} {
			for _, d := range [][2]int{{1, 1}, {2, 1}, {3, 1}} {
				for _, in := range [][2]int{{1, 1}, {2, 3}, {5, 4}, {7, 13}, {12, 17}} {
					idx++
					if (c == 16 || c == 23) && idx%3 != 0 {
						continue
					}
					padding := []string{"SAME", "VALID", "EXPLICIT"}[idx%3]
					pads := [4]int{}
					if padding == "EXPLICIT" {
						pads = [][4]int{{1, 1, 1, 1}, {0, 2, 3, 0}, {4, 1, 0, 5}, {2, 3, 2, 2}}[idx%4]
					}
					out = append(out, pathCase{n: 1 + idx%2, h: in[0], w: in[1], c: c, sh: s[0], sw: s[1], dh: d[0], dw: d[1],
						padding: padding, pads: pads, nchw: idx%7 == 0})
				}
			}
		}
	}
	return append(out,
		pathCase{n: 2, h: 9, w: 11, c: 17, sh: 1, sw: 1, dh: 1, dw: 2, padding: "SAME"},
		pathCase{n: 1, h: 9, w: 14, c: 16, sh: 1, sw: 3, dh: 1, dw: 1, padding: "SAME"},
		pathCase{n: 2, h: 6, w: 9, c: 7, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
		pathCase{n: 2, h: 31, w: 29, c: 24, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
		pathCase{n: 1, h: 20, w: 70, c: 136, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
	)
}

// refGeom returns the Geom of a reference geometry.
func refGeom(r *testutil.DepthwiseRef) Geom {
	return Geom{NCHW: r.NCHW, N: r.N, H: r.H, W: r.W, C: r.C, KH: r.KH, KW: r.KW, M: r.M, OH: r.OH, OW: r.OW,
		SH: r.SH, SW: r.SW, DH: r.DH, DW: r.DW, PT: r.PT, PL: r.PL}
}

// nans returns n float32 NaNs.
func nans(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// newWork returns the scratch of ws: NaN where any contents are allowed,
// zeros where they must be zeroed.
func newWork(ws WorkSize) *Work[float32] {
	return &Work[float32]{Layout: [2][]float32{nans(ws.Layout[0]), nans(ws.Layout[1])},
		Parts: make([]float64, ws.Parts), Accs: nans(ws.Accs), Taps: nans(ws.Taps), Zero: make([]float32, ws.Zero)}
}

// run3 runs the three functions in float32 on g with threads, on
// NaN-filled outputs and scratch; a result whose operands are empty is
// zeros, as the ops' kernels make it.
func run3(g *Geom, threads int, x, f, dy []float32) [3][]float32 {
	y := nans(g.N * g.OH * g.OW * g.OC())
	dx := nans(len(x))
	df := nans(len(f))
	if len(y) > 0 && len(x) > 0 {
		Forward(y, x, f, g, threads, newWork(ForwardWork[float32](g)))
	} else {
		clear(y)
	}
	if len(dx) > 0 && len(dy) > 0 {
		BackpropInput(dx, f, dy, g, threads, newWork(BackpropInputWork[float32](g)))
	} else {
		clear(dx)
	}
	if len(x) > 0 && len(dy) > 0 {
		BackpropFilter(df, x, dy, g, threads, newWork(BackpropFilterWork[float32](g)))
	} else {
		clear(df)
	}
	return [3][]float32{y, dx, df}
}

// f32 converts float64 values (already rounded to float32) to float32.
func f32(v []float64) []float32 { return testutil.Convert[float32](v) }

// TestPaths runs the three functions in float32 with the assembly paths
// on and off, against the float64 reference (relative to the sum of the
// terms' magnitudes), with NaN-filled outputs and scratch, and with 1 and
// 3 threads, the latter also with non-temporal stores (bit-identical).
func TestPaths(t *testing.T) {
	fast := 0
	for i, c := range pathCases() {
		ref, ok := testutil.NewDepthwiseRef(c.nchw, c.n, c.h, c.w, c.c, 1, 3, 3, c.sh, c.sw, c.dh, c.dw, c.padding, c.pads)
		if !ok {
			continue
		}
		g := refGeom(&ref)
		if useAsm && asmFits(&g) {
			fast++
		}
		r := rand.New(rand.NewSource(int64(i)))
		xs, fs, ys := ref.XShape(), ref.FShape(), ref.YShape()
		x := testutil.Round(tensor.Float32, testutil.Normal(r, testutil.Numel(xs)))
		f := testutil.Round(tensor.Float32, testutil.Normal(r, testutil.Numel(fs)))
		dy := testutil.Round(tensor.Float32, testutil.Normal(r, testutil.Numel(ys)))
		want := [3][]float64{ref.Forward(x, f), ref.BackpropInput(f, dy), ref.BackpropFilter(x, dy)}
		xa, fa, dya := testutil.Abs(x), testutil.Abs(f), testutil.Abs(dy)
		bound := [3][]float64{ref.Forward(xa, fa), ref.BackpropInput(fa, dya), ref.BackpropFilter(xa, dya)}
		for _, isa := range modes() {
			withMode(isa, func() {
				var first [3][]float32
				for _, threads := range []int{1, 3, -3} {
					// Threads −3: 3 threads with non-temporal stores.
					if threads < 0 {
						old := dwStreamBytes
						dwStreamBytes = 0
						defer func() { dwStreamBytes = old }()
					}
					name := fmt.Sprintf("case %d %+v/%v/t%d", i, c, isa, threads)
					res := run3(&g, max(threads, -threads), f32(x), f32(f), f32(dy))
					for k, op := range []string{"Forward", "BackpropInput", "BackpropFilter"} {
						checkClose(t, name+"/"+op, res[k], want[k], bound[k], 3e-6)
					}
					if threads == 1 {
						first = res
						continue
					}
					for k := range res {
						if testutil.BitDiff(first[k], res[k], false) >= 0 {
							t.Fatalf("%s: function %d differs between 1 and %d threads", name, k, threads)
						}
					}
				}
			})
		}
	}
	if useAsm && fast < 100 {
		t.Fatalf("only %d cases take the assembly paths", fast)
	}
}

// checkClose requires |got − want| ≤ rel·bound elementwise (and no NaN).
func checkClose(t *testing.T, name string, got []float32, want, bound []float64, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	for i, v := range got {
		if d := math.Abs(float64(v) - want[i]); !(d <= rel*bound[i]) {
			t.Fatalf("%s: element %d is %v, want %v (bound %v)", name, i, v, want[i], rel*bound[i])
		}
	}
}

// TestPathsNonFinite checks that the assembly paths treat padding as
// absent, like the Go paths: an infinite filter tap or out_backprop value
// meets no padded zero (which would make a NaN), so both paths give the
// same infinities and NaNs, and close finite values.
func TestPathsNonFinite(t *testing.T) {
	if !useAsm && !twinsBuild {
		t.Skip("no assembly kernels on this CPU")
	}
	inf := math.Inf(1)
	for i, c := range []pathCase{
		{n: 1, h: 5, w: 7, c: 9, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
		{n: 2, h: 8, w: 9, c: 16, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
		{n: 1, h: 6, w: 12, c: 8, sh: 1, sw: 2, dh: 2, dw: 1, padding: "EXPLICIT", pads: [4]int{2, 1, 1, 2}},
	} {
		ref, ok := testutil.NewDepthwiseRef(false, c.n, c.h, c.w, c.c, 1, 3, 3, c.sh, c.sw, c.dh, c.dw, c.padding, c.pads)
		if !ok {
			t.Fatalf("case %d: bad geometry", i)
		}
		g := refGeom(&ref)
		r := rand.New(rand.NewSource(int64(i)))
		xs, fs, ys := ref.XShape(), ref.FShape(), ref.YShape()
		x := testutil.Normal(r, testutil.Numel(xs))
		f := testutil.Normal(r, testutil.Numel(fs))
		dy := testutil.Normal(r, testutil.Numel(ys))
		// Channel 0: every tap +Inf, input and out_backprop positive, so
		// every output and input-gradient element with a valid tap is +Inf
		// (a padded zero times Inf would make it NaN). Channel 1: positive
		// input, out_backprop −Inf at the first two output pixels only,
		// whose windows cross the top border (and the left one): the
		// filter-gradient taps that read padding there stay finite.
		for k := range 9 {
			f[k*c.c] = inf
		}
		for e := range x {
			if ch := e % c.c; ch < 2 {
				x[e] = math.Abs(x[e]) + 0.5
			}
		}
		for e := range dy {
			if e%c.c == 0 {
				dy[e] = math.Abs(dy[e]) + 0.5
			}
		}
		dy[1], dy[c.c+1] = -inf, -inf
		var goRes [3][]float32
		withMode(cpu.Go, func() { goRes = run3(&g, 1, f32(x), f32(f), f32(dy)) })
		for _, isa := range modes()[1:] {
			var res [2][3][]float32
			withMode(isa, func() { res[0] = run3(&g, 1, f32(x), f32(f), f32(dy)) })
			res[1] = goRes
			checkNonFinite(t, fmt.Sprintf("case %d %v", i, isa), &res)
		}
	}
}

// checkNonFinite compares the assembly results res[0] with the Go ones
// res[1]: the same infinities and NaNs, close finite values, both kinds
// present.
func checkNonFinite(t *testing.T, name string, res *[2][3][]float32) {
	t.Helper()
	for k, op := range []string{"Forward", "BackpropInput", "BackpropFilter"} {
		nonFinite, finite := 0, 0
		for e, av := range res[0][k] {
			a, b := float64(av), float64(res[1][k][e])
			switch {
			case math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0):
				nonFinite++
				if !(math.IsNaN(a) && math.IsNaN(b)) && a != b {
					t.Fatalf("%s %s: element %d is %v with assembly, %v in Go", name, op, e, a, b)
				}
			case math.Abs(a-b) > 1e-5*(1+math.Abs(b)):
				t.Fatalf("%s %s: element %d is %v with assembly, %v in Go", name, op, e, a, b)
			default:
				finite++
			}
		}
		if nonFinite == 0 || finite == 0 {
			t.Fatalf("%s %s: %d non-finite and %d finite elements, want both", name, op, nonFinite, finite)
		}
	}
}
