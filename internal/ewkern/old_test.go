//go:build amd64 && !noasm && !gccgo && !safe

package ewkern

import (
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
)

// TestGeneratedAVX2MatchesHandWritten compares the generated AVX2
// routines with the hand-written ones they replace, bit for bit, over a
// grid of lengths (whole vectors, as both take) and unaligned offsets, and
// logs a hash of all outputs of each.
func TestGeneratedAVX2MatchesHandWritten(t *testing.T) {
	if !cpu.Has(cpu.AVX2) {
		t.Log("NOT RUN: this CPU lacks AVX2")
		return
	}
	r := rand.New(rand.NewSource(3))
	hOld, hNew := sha256.New(), sha256.New()
	var cases int
	for _, n := range []int{4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 64, 120, 124, 128, 132, 136, 1024, 4100, 4104} {
		for off := range 4 {
			x32, g32 := fill[float32](r, n+off), fill[float32](r, n+off)
			x64, g64 := fill[float64](r, n+off), fill[float64](r, n+off)
			o1, o2 := make([]float32, n+off+8), make([]float32, n+off+8)
			d1, d2 := make([]float64, n+off+8), make([]float64, n+off+8)
			if n%8 == 0 {
				oldReluF32(&o1[off], &x32[off], n)
				reluAVX2F32(&o2[off], &x32[off], n)
				cmp32(t, hOld, hNew, "relu f32", n, off, o1, o2)
				oldReluGradF32(&o1[off], &g32[off], &x32[off], n)
				reluGradAVX2F32(&o2[off], &g32[off], &x32[off], n)
				cmp32(t, hOld, hNew, "reluGrad f32", n, off, o1, o2)
				cases += 2
			}
			{
				m := n
				oldReluF64(&d1[off], &x64[off], m)
				reluAVX2F64(&d2[off], &x64[off], m)
				cmp64(t, hOld, hNew, "relu f64", m, off, d1, d2)
				oldReluGradF64(&d1[off], &g64[off], &x64[off], m)
				reluGradAVX2F64(&d2[off], &g64[off], &x64[off], m)
				cmp64(t, hOld, hNew, "reluGrad f64", m, off, d1, d2)
				cases += 2
			}
		}
	}
	t.Logf("%d calls: sha256 hand-written %x, generated %x", cases, hOld.Sum(nil)[:8], hNew.Sum(nil)[:8])
}

func cmp32(t *testing.T, h1, h2 interface{ Write([]byte) (int, error) }, what string, n, off int, a, b []float32) {
	t.Helper()
	for i := range a {
		x, y := math.Float32bits(a[i]), math.Float32bits(b[i])
		fmt.Fprint(h1, x)
		fmt.Fprint(h2, y)
		if x != y {
			t.Fatalf("%s n=%d off=%d: element %d: hand-written %x, generated %x", what, n, off, i, x, y)
		}
	}
}

func cmp64(t *testing.T, h1, h2 interface{ Write([]byte) (int, error) }, what string, n, off int, a, b []float64) {
	t.Helper()
	for i := range a {
		x, y := math.Float64bits(a[i]), math.Float64bits(b[i])
		fmt.Fprint(h1, x)
		fmt.Fprint(h2, y)
		if x != y {
			t.Fatalf("%s n=%d off=%d: element %d: hand-written %x, generated %x", what, n, off, i, x, y)
		}
	}
}
