package conv

import (
	"math/rand"
	"testing"
)

// TestRowsOffsets checks the im2col row offsets of rowsOf
// against a direct per-position, per-tap computation, for random
// geometries (strides, dilations, paddings larger than the filter,
// negative paddings as in the stride-1 input gradient) and random row
// ranges that start and end anywhere in an output row.
func TestRowsOffsets(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for it := 0; it < 3000; it++ {
		g := Geom{
			N: 1 + r.Intn(3), H: 1 + r.Intn(9), W: 1 + r.Intn(9),
			KH: 1 + r.Intn(4), KW: 1 + r.Intn(4),
			SH: 1 + r.Intn(3), SW: 1 + r.Intn(3), DH: 1 + r.Intn(3), DW: 1 + r.Intn(3),
			CF: 1 + r.Intn(3), G: 1 + r.Intn(2),
		}
		g.C = g.CF * g.G
		g.PT, g.PB, g.PL, g.PR = r.Intn(6)-2, r.Intn(6)-2, r.Intn(6)-2, r.Intn(6)-2
		g.OH = (g.H+g.PT+g.PB-((g.KH-1)*g.DH+1))/g.SH + 1
		g.OW = (g.W+g.PL+g.PR-((g.KW-1)*g.DW+1))/g.SW + 1
		if g.OH <= 0 || g.OW <= 0 {
			continue
		}
		grp := r.Intn(g.G)
		total := g.N * g.OH * g.OW
		r0 := r.Intn(total)
		pos := r.Intn(total - r0)
		n := 1 + r.Intn(total-r0-pos)
		nseg := g.KH * g.KW
		ld := n + r.Intn(4)
		dst := make([]int, nseg*ld)
		for i := range dst {
			dst[i] = -7
		}
		x := make([]float32, g.N*g.H*g.W*g.C)
		m := getRowsMap(&g)
		rows := rowsOf(&g, x, grp, r0, m)
		rows.Map.Offsets(rows.First+pos, n, dst, ld)
		putRowsMap(m)
		for k := 0; k < n; k++ {
			q := r0 + pos + k
			b, oy, ox := q/(g.OH*g.OW), q/g.OW%g.OH, q%g.OW
			for a := 0; a < g.KH; a++ {
				for c := 0; c < g.KW; c++ {
					y, x := oy*g.SH-g.PT+a*g.DH, ox*g.SW-g.PL+c*g.DW
					want := -1
					if y >= 0 && y < g.H && x >= 0 && x < g.W {
						want = ((b*g.H+y)*g.W + x) * g.C // relative to rows.Data = x[grp·cf:]
					}
					got := dst[(a*g.KW+c)*ld+k]
					if got >= 0 && got+g.CF > len(rows.Data) {
						t.Fatalf("%+v grp %d: offset %d past rows.Data (%d)", g, grp, got, len(rows.Data))
					}
					if got != want && !(want < 0 && got < 0) {
						t.Fatalf("%+v grp %d r0 %d rows [%d,%d): row %d tap (%d,%d): offset %d, want %d", g, grp, r0, pos, pos+n, k, a, c, got, want)
					}
				}
			}
		}
		for s := 0; s < nseg; s++ {
			for k := n; k < ld; k++ {
				if dst[s*ld+k] != -7 {
					t.Fatalf("%+v: rows [%d,%d): wrote past the rows at segment %d row %d", g, pos, pos+n, s, k)
				}
			}
		}
	}
}

// BenchmarkRowsOffsets times the im2col offsets of W1's geometry
// (3x3 SAME, 32x32, 16 channels) in blocks of 256 rows, as the GEMMs ask
// for them; ns/op is per block of 256 rows × 9 taps.
func BenchmarkRowsOffsets(b *testing.B) {
	g := Geom{N: 32, H: 32, W: 32, C: 16, KH: 3, KW: 3, CF: 16, O: 32, G: 1, OG: 32,
		OH: 32, OW: 32, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PB: 1, PL: 1, PR: 1}
	m := getRowsMap(&g)
	defer putRowsMap(m)
	const rows = 256
	dst := make([]int, 9*rows)
	total := g.N * g.OH * g.OW
	pos := 0
	for b.Loop() {
		m.Offsets(pos, rows, dst, rows)
		if pos += rows; pos+rows > total {
			pos = 0
		}
	}
}

// BenchmarkFilterOneChannel times the filter gradient of W10's first
// convolution (3x3 SAME, 28x28, one input channel, 32 filters, batch 64):
// a Rows B of one-element segments gathered into the GEMM's panels.
func BenchmarkFilterOneChannel(b *testing.B) {
	g := Geom{N: 64, H: 28, W: 28, C: 1, KH: 3, KW: 3, CF: 1, O: 32, G: 1, OG: 32,
		OH: 28, OW: 28, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PB: 1, PL: 1, PR: 1}
	x := make([]float32, g.N*g.H*g.W*g.C)
	dy := make([]float32, g.N*g.OH*g.OW*g.O)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range dy {
		dy[i] = float32(i%5) - 2
	}
	df := make([]float32, g.KCol()*g.O)
	na, np := BackpropFilterScratch(&g)
	acc, parts := make([]float64, na), make([]float32, np)
	for b.Loop() {
		clear(acc)
		BackpropFilter(df, x, dy, &g, 1, acc, parts)
	}
}

// BenchmarkForwardOneChannel times the forward pass of W10's first
// convolution (3x3 SAME, 28x28, one input channel, 32 filters, batch 64):
// a Rows A of one-element segments read in place by the GEMM.
func BenchmarkForwardOneChannel(b *testing.B) {
	g := Geom{N: 64, H: 28, W: 28, C: 1, KH: 3, KW: 3, CF: 1, O: 32, G: 1, OG: 32,
		OH: 28, OW: 28, SH: 1, SW: 1, DH: 1, DW: 1, PT: 1, PB: 1, PL: 1, PR: 1}
	x := make([]float32, g.N*g.H*g.W*g.C)
	f := make([]float32, g.KCol()*g.O)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for i := range f {
		f[i] = float32(i%5) - 2
	}
	out := make([]float32, g.N*g.OH*g.OW*g.O)
	for b.Loop() {
		Forward(out, x, f, &g, 1)
	}
}
