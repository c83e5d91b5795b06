package fracpool

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The pooling sequences against the spec: their properties, the spec's
// trace, and the random mode against a shuffle written from the spec's
// pseudocode.

// TestFractionalPoolSequenceProperties checks both generators over many
// sizes, ratios and seeds: start 0, end at the input size, every step k or
// k+1 with k = in/out, and (so) exactly in mod out long steps.
func TestFractionalPoolSequenceProperties(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	checked := 0
	for in := 1; in <= 64; in++ {
		for out := 1; out <= in; out++ {
			for _, pseudo := range []bool{false, true} {
				for rep := 0; rep < 3; rep++ {
					g := philox.New(r.Uint64(), r.Uint64())
					seq := make([]int64, out+1)
					Sequence(seq, in, out, &g, pseudo)
					if err := testutil.FracPoolSeqProps(seq, in, out); err != nil {
						t.Fatalf("in=%d out=%d pseudo=%v: %v", in, out, pseudo, err)
					}
					checked++
				}
			}
		}
	}
	// Sizes from ratios, as the op computes them, including large inputs.
	for _, ratio := range []float32{1, 1.0001, 1.2, 1.414, 1.44, 1.5, 1.73, 1.999, 2, 2.3, 2.5, 3.7, 5, 9.99} {
		for _, in := range []int{7, 32, 100, 257, 1000} {
			if float32(in) < ratio {
				continue
			}
			out := OutputSize(in, ratio)
			for _, pseudo := range []bool{false, true} {
				g := philox.New(r.Uint64(), r.Uint64())
				seq := make([]int64, out+1)
				Sequence(seq, in, out, &g, pseudo)
				if err := testutil.FracPoolSeqProps(seq, in, out); err != nil {
					t.Fatalf("in=%d ratio=%v pseudo=%v: %v", in, ratio, pseudo, err)
				}
				checked++
			}
		}
	}
	t.Logf("%d sequences checked", checked)
}

// TestFractionalPoolSequenceTrace checks the spec's cross-check trace:
// seeds (1, 2), pseudo-random, in 10, out 6.
func TestFractionalPoolSequenceTrace(t *testing.T) {
	g := philox.New(1, 2)
	seq := make([]int64, 7)
	Sequence(seq, 10, 6, &g, true)
	if fmt.Sprint(seq) != "[0 2 3 5 7 8 10]" {
		t.Fatalf("sequence %v, want [0 2 3 5 7 8 10]", seq)
	}
	// The generator advanced by one block (two samples reserved).
	want := philox.New(1, 2)
	want.Skip(1)
	if g.Counter() != want.Counter() {
		t.Fatalf("counter %v after a pseudo-random sequence, want %v", g.Counter(), want.Counter())
	}
}

// TestFractionalPoolSequenceRandomMode checks the random mode against a
// shuffle written directly from the spec's pseudocode, and the block
// reservation of rows then columns.
func TestFractionalPoolSequenceRandomMode(t *testing.T) {
	for _, c := range []struct{ in, out int }{{10, 7}, {13, 9}, {32, 22}, {5, 1}, {9, 4}} {
		g := philox.New(42, 43)
		seq := make([]int64, c.out+1)
		Sequence(seq, c.in, c.out, &g, false)
		// Reference.
		ref := philox.New(42, 43)
		var words []uint32
		for len(words) < c.out {
			b := ref.Next()
			words = append(words, b[:]...)
		}
		k, rem := c.in/c.out, c.in%c.out
		diff := make([]int, c.out)
		for i := range diff {
			diff[i] = k
			if i < rem {
				diff[i]++
			}
		}
		for i := 0; i < c.out-1; i++ {
			j := i + int(words[i]%uint32(c.out-i))
			diff[i], diff[j] = diff[j], diff[i]
		}
		want := []int64{0}
		for _, d := range diff {
			want = append(want, want[len(want)-1]+int64(d))
		}
		if fmt.Sprint(seq) != fmt.Sprint(want) {
			t.Fatalf("in=%d out=%d: %v, want %v", c.in, c.out, seq, want)
		}
		// ceil(out/4) blocks were reserved.
		after := philox.New(42, 43)
		after.Skip(uint64((c.out + 3) / 4))
		if g.Counter() != after.Counter() {
			t.Fatalf("in=%d out=%d: counter %v, want %v", c.in, c.out, g.Counter(), after.Counter())
		}
	}
}
