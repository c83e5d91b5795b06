package forward

import (
	"math/rand"
	"testing"
)

// TestConv2DRowsOffsets checks the im2col row offsets of conv2DRows
// against a direct per-position, per-tap computation, for random
// geometries (strides, dilations, paddings larger than the filter,
// negative paddings as in the stride-1 input gradient) and random row
// ranges that start and end anywhere in an output row.
func TestConv2DRowsOffsets(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for it := 0; it < 3000; it++ {
		g := conv2DGeom{
			n: 1 + r.Intn(3), h: 1 + r.Intn(9), w: 1 + r.Intn(9),
			kh: 1 + r.Intn(4), kw: 1 + r.Intn(4),
			sh: 1 + r.Intn(3), sw: 1 + r.Intn(3), dh: 1 + r.Intn(3), dw: 1 + r.Intn(3),
			cf: 1 + r.Intn(3), g: 1 + r.Intn(2),
		}
		g.c = g.cf * g.g
		g.pt, g.pb, g.pl, g.pr = r.Intn(6)-2, r.Intn(6)-2, r.Intn(6)-2, r.Intn(6)-2
		g.oh = (g.h+g.pt+g.pb-((g.kh-1)*g.dh+1))/g.sh + 1
		g.ow = (g.w+g.pl+g.pr-((g.kw-1)*g.dw+1))/g.sw + 1
		if g.oh <= 0 || g.ow <= 0 {
			continue
		}
		grp := r.Intn(g.g)
		total := g.n * g.oh * g.ow
		r0 := r.Intn(total)
		pos := r.Intn(total - r0)
		n := 1 + r.Intn(total-r0-pos)
		nseg := g.kh * g.kw
		ld := n + r.Intn(4)
		dst := make([]int, nseg*ld)
		for i := range dst {
			dst[i] = -7
		}
		x := make([]float32, g.n*g.h*g.w*g.c)
		m := getConvRowsMap(&g)
		rows := conv2DRows(&g, x, grp, r0, m)
		rows.Map.Offsets(rows.First+pos, n, dst, ld)
		putConvRowsMap(m)
		for k := 0; k < n; k++ {
			q := r0 + pos + k
			b, oy, ox := q/(g.oh*g.ow), q/g.ow%g.oh, q%g.ow
			for a := 0; a < g.kh; a++ {
				for c := 0; c < g.kw; c++ {
					y, x := oy*g.sh-g.pt+a*g.dh, ox*g.sw-g.pl+c*g.dw
					want := -1
					if y >= 0 && y < g.h && x >= 0 && x < g.w {
						want = ((b*g.h+y)*g.w + x) * g.c // relative to rows.Data = x[grp·cf:]
					}
					got := dst[(a*g.kw+c)*ld+k]
					if got >= 0 && got+g.cf > len(rows.Data) {
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

// BenchmarkConv2DRowsOffsets times the im2col offsets of W1's geometry
// (3x3 SAME, 32x32, 16 channels) in blocks of 256 rows, as the GEMMs ask
// for them; ns/op is per block of 256 rows × 9 taps.
func BenchmarkConv2DRowsOffsets(b *testing.B) {
	g := conv2DGeom{n: 32, h: 32, w: 32, c: 16, kh: 3, kw: 3, cf: 16, o: 32, g: 1, og: 32,
		oh: 32, ow: 32, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pb: 1, pl: 1, pr: 1}
	m := getConvRowsMap(&g)
	defer putConvRowsMap(m)
	const rows = 256
	dst := make([]int, 9*rows)
	total := g.n * g.oh * g.ow
	pos := 0
	for b.Loop() {
		m.Offsets(pos, rows, dst, rows)
		if pos += rows; pos+rows > total {
			pos = 0
		}
	}
}
