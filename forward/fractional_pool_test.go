package forward

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/philox"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// ---------------------------------------------------------------------
// Naive references, written from the spec (§4, §5) one output element at
// a time.

func fpRefCell(seq []int64, i, n int, overlapping bool) (int, int) {
	lo, hi := int(seq[i]), int(seq[i+1])
	if !overlapping {
		hi--
	}
	if hi > n-1 {
		hi = n - 1
	}
	return lo, hi
}

// fpRefAvg is average pooling in T with TensorFlow's order: per output
// element a T accumulator from 0, rows outer, columns inner, then a
// division by the count in T.
func fpRefAvg[T fpNum](x []T, n, h, w, c int, rows, cols []int64, overlapping bool) []T {
	oh, ow := len(rows)-1, len(cols)-1
	out := make([]T, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := fpRefCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := fpRefCell(cols, j, w, overlapping)
				for ch := 0; ch < c; ch++ {
					var acc, cnt T
					for r := r0; r <= r1; r++ {
						for cc := c0; cc <= c1; cc++ {
							acc += x[((b*h+r)*w+cc)*c+ch]
							cnt++
						}
					}
					out[((b*oh+a)*ow+j)*c+ch] = acc / cnt
				}
			}
		}
	}
	return out
}

// fpRefAvgGrad is FractionalAvgPoolGrad: float64 accumulation in
// TensorFlow's loop order, one cast at the end.
func fpRefAvgGrad[T fpNum](dy []T, n, h, w, c int, rows, cols []int64, overlapping bool) []T {
	oh, ow := len(rows)-1, len(cols)-1
	acc := make([]float64, n*h*w*c)
	for b := 0; b < n; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := fpRefCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := fpRefCell(cols, j, w, overlapping)
				cnt := (r1 - r0 + 1) * (c1 - c0 + 1)
				for r := r0; r <= r1; r++ {
					for cc := c0; cc <= c1; cc++ {
						for ch := 0; ch < c; ch++ {
							acc[((b*h+r)*w+cc)*c+ch] += float64(dy[((b*oh+a)*ow+j)*c+ch]) / float64(cnt)
						}
					}
				}
			}
		}
	}
	out := make([]T, len(acc))
	for i, v := range acc {
		out[i] = T(v)
	}
	return out
}

// fpRefArgmax returns, per output element, the flat input index of the
// first maximum of its cell (TensorFlow's FractionalMaxPoolGrad scan).
func fpRefArgmax[T fpNum](x []T, n, h, w, c int, rows, cols []int64, overlapping bool) []int {
	oh, ow := len(rows)-1, len(cols)-1
	am := make([]int, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := fpRefCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := fpRefCell(cols, j, w, overlapping)
				for ch := 0; ch < c; ch++ {
					best := -1
					for r := r0; r <= r1; r++ {
						for cc := c0; cc <= c1; cc++ {
							p := ((b*h+r)*w+cc)*c + ch
							if best < 0 || x[best] < x[p] {
								best = p
							}
						}
					}
					am[((b*oh+a)*ow+j)*c+ch] = best
				}
			}
		}
	}
	return am
}

// ---------------------------------------------------------------------
// Pooling sequences.

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
					fpSequence(in, out, &g, pseudo, seq)
					if err := fpSeqProps(seq, in, out); err != nil {
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
			out := fpOutputSize(in, ratio)
			for _, pseudo := range []bool{false, true} {
				g := philox.New(r.Uint64(), r.Uint64())
				seq := make([]int64, out+1)
				fpSequence(in, out, &g, pseudo, seq)
				if err := fpSeqProps(seq, in, out); err != nil {
					t.Fatalf("in=%d ratio=%v pseudo=%v: %v", in, ratio, pseudo, err)
				}
				checked++
			}
		}
	}
	t.Logf("%d sequences checked", checked)
}

func fpSeqProps(seq []int64, in, out int) error {
	if len(seq) != out+1 || seq[0] != 0 || seq[out] != int64(in) {
		return fmt.Errorf("sequence %v does not run from 0 to %d in %d steps", seq, in, out)
	}
	k := int64(in / out)
	long := 0
	for i := 0; i < out; i++ {
		d := seq[i+1] - seq[i]
		if d != k && d != k+1 {
			return fmt.Errorf("step %d of %v is %d, want %d or %d", i, seq, d, k, k+1)
		}
		if d == k+1 {
			long++
		}
	}
	if long != in%out {
		return fmt.Errorf("%d long steps in %v, want %d", long, seq, in%out)
	}
	return nil
}

// TestFractionalPoolSequenceTrace checks the spec's cross-check trace:
// seeds (1, 2), pseudo-random, in 10, out 6.
func TestFractionalPoolSequenceTrace(t *testing.T) {
	g := philox.New(1, 2)
	seq := make([]int64, 7)
	fpSequence(10, 6, &g, true, seq)
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
		fpSequence(c.in, c.out, &g, false, seq)
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

// TestFractionalPoolSeeds checks the op-level seed handling: non-zero
// seeds give the same sequences on every call and thread count (rows from
// the generator's first blocks, columns after the rows' reservation);
// zero seeds draw from the context's source.
func TestFractionalPoolSeeds(t *testing.T) {
	x := testutil.New(t, []int{2, 23, 17, 3}, testutil.Arange(2*23*17*3))
	a := FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.73, 1}, Deterministic: true, Seed: 123, Seed2: 456}
	// Expected sequences straight from the generator.
	g := philox.New(123, 456)
	wantRows, wantCols := make([]int64, 16), make([]int64, 10)
	fpSequence(23, 15, &g, false, wantRows)
	fpSequence(17, 9, &g, false, wantCols)
	for _, op := range []string{fpAvgName, fpMaxName} {
		var first []*tensor.Dense
		for i, threads := range []int{1, 4, 1} {
			out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, int64(i)), op, a, x)
			if fmt.Sprint(out[1].Int64s()) != fmt.Sprint(wantRows) || fmt.Sprint(out[2].Int64s()) != fmt.Sprint(wantCols) {
				t.Fatalf("%s: sequences %v %v, want %v %v", op, out[1].Int64s(), out[2].Int64s(), wantRows, wantCols)
			}
			if first == nil {
				first = out
			} else if testutil.BitDiff(out[0].Float64s(), first[0].Float64s(), false) >= 0 {
				t.Fatalf("%s: output differs between calls/thread counts", op)
			}
		}
	}
	// Seeds 0: drawn from the context's source. The same source seed gives
	// the same sequences; other source seeds give others.
	a = FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.73, 1}}
	seqs := map[string]bool{}
	var ref string
	for s := int64(0); s < 8; s++ {
		out := registrytest.MustRunKC(t, registrytest.SeededKC(2, s), fpAvgName, a, x)
		key := fmt.Sprint(out[1].Int64s(), out[2].Int64s())
		seqs[key] = true
		if s == 3 {
			ref = key
		}
	}
	if len(seqs) < 4 {
		t.Fatalf("only %d distinct sequence pairs from 8 source seeds", len(seqs))
	}
	if out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 3), fpAvgName, a, x); fmt.Sprint(out[1].Int64s(), out[2].Int64s()) != ref {
		t.Fatal("the same source seed gave different sequences")
	}
	// The draws use the source: two calls on one context differ.
	kc := registrytest.SeededKC(1, 5)
	o1 := registrytest.MustRunKC(t, kc, fpAvgName, a, x)
	k1 := fmt.Sprint(o1[1].Int64s(), o1[2].Int64s())
	differ := false
	for i := 0; i < 5 && !differ; i++ {
		o := registrytest.MustRunKC(t, kc, fpAvgName, a, x)
		differ = fmt.Sprint(o[1].Int64s(), o[2].Int64s()) != k1
	}
	if !differ {
		t.Fatal("zero seeds gave the same sequences on six calls of one context")
	}
	// Deterministic with zero seeds also draws from the source (no kernel
	// instances to cache them in); a nil source is allowed.
	a.Deterministic = true
	if _, err := registrytest.RunKC(t, nil, fpAvgName, a, x); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------
// Forward.

// TestFractionalAvgPoolSpecExample checks the op documentation's example
// (spec §4): one axis 20 5 16 3 7 with sequence [0, 2, 4] overlapping gives
// 41/3 and 26/3, as does the generated [0, 2, 5]; non-overlapping [0, 2, 5]
// gives 12.5 and 26/3.
func TestFractionalAvgPoolSpecExample(t *testing.T) {
	x := testutil.New(t, []int{1, 1, 5, 1}, []float64{20, 5, 16, 3, 7})
	rows := fpInt64s(0, 1)
	for _, c := range []struct {
		cols        []int64
		overlapping bool
		want        []float64
	}{
		{[]int64{0, 2, 4}, true, []float64{41.0 / 3, 26.0 / 3}},
		{[]int64{0, 2, 5}, true, []float64{41.0 / 3, 26.0 / 3}},
		{[]int64{0, 2, 5}, false, []float64{12.5, 26.0 / 3}},
	} {
		out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgSeqName, FractionalPoolSeqAttrs{Overlapping: c.overlapping}, x, rows, fpInt64s(c.cols...))
		testutil.Near(t, fmt.Sprintf("cols %v overlapping %v", c.cols, c.overlapping), out[0].Float64s(), c.want, 1e-15)
	}
	// FAP6: the example through the gradient op.
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgGradName, FractionalPoolGradAttrs{Overlapping: true}, fpInt64s(1, 1, 5, 1), testutil.New(t, []int{1, 1, 2, 1}, []float64{3, 3}), fpInt64s(0, 1), fpInt64s(0, 2, 5))
	testutil.Near(t, "FAP6", out[0].Float64s(), []float64{1, 1, 2, 1, 1}, 1e-15)
}

// TestFractionalAvgPoolSpecVectors checks FAP2–FAP5 and FAP7.
func TestFractionalAvgPoolSpecVectors(t *testing.T) {
	x := testutil.New(t, []int{1, 4, 4, 1}, testutil.Convert[float32](testutil.Arange(16)))
	for _, pseudo := range []bool{false, true} {
		for _, seed := range []int64{1, 77} {
			a := FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}, PseudoRandom: pseudo, Deterministic: true, Seed: seed, Seed2: 1}
			out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, x) // FAP2
			testutil.Near(t, "FAP2", testutil.Float64s(t, out[0]), []float64{3.5, 5.5, 11.5, 13.5}, 0)
			if fmt.Sprint(out[1].Int64s(), out[2].Int64s()) != "[0 2 4] [0 2 4]" {
				t.Fatalf("FAP2 sequences %v %v", out[1].Int64s(), out[2].Int64s())
			}
			a.Overlapping = true
			out = registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, x) // FAP3
			testutil.Near(t, "FAP3", testutil.Float64s(t, out[0]), []float64{6, 7.5, 12, 13.5}, 0)
		}
	}
	// FAP4.
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgGradName, FractionalPoolGradAttrs{}, fpInt64s(1, 4, 4, 1), testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 2, 3, 4}), fpInt64s(0, 2, 4), fpInt64s(0, 2, 4))
	testutil.Near(t, "FAP4", out[0].Float64s(), []float64{.25, .25, .5, .5, .25, .25, .5, .5, .75, .75, 1, 1, .75, .75, 1, 1}, 1e-15)
	// FAP5.
	out = registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgGradName, FractionalPoolGradAttrs{Overlapping: true}, fpInt64s(1, 5, 5, 1), testutil.New(t, []int{1, 2, 2, 1}, []float64{3, 6, 9, 12}), fpInt64s(0, 2, 5), fpInt64s(0, 2, 5))
	third := 1.0 / 3
	testutil.Near(t, "FAP5", out[0].Float64s(), []float64{
		third, third, 1, 2 * third, 2 * third,
		third, third, 1, 2 * third, 2 * third,
		4 * third, 4 * third, 10 * third, 2, 2,
		1, 1, 7 * third, 4 * third, 4 * third,
		1, 1, 7 * third, 4 * third, 4 * third,
	}, 1e-15)
	// FAP7: int input, float32 size arithmetic (6/√3 → 3, 6/√2 → 4).
	for _, dt := range []tensor.Dtype{tensor.Int32, tensor.Int64} {
		var xi *tensor.Dense
		if dt == tensor.Int32 {
			xi = testutil.New(t, []int{1, 6, 6, 1}, testutil.Convert[int32](testutil.Arange(36)))
		} else {
			xi = testutil.New(t, []int{1, 6, 6, 1}, testutil.Convert[int64](testutil.Arange(36)))
		}
		a := FractionalPoolAttrs{PoolingRatio: []float32{1, float32(math.Sqrt(3)), float32(math.Sqrt(2)), 1},
			PseudoRandom: true, Overlapping: true, Deterministic: true, Seed: 5}
		out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, xi)
		if out[0].Dtype() != dt || fmt.Sprint(out[0].Shape()) != "(1, 3, 4, 1)" ||
			fmt.Sprint(out[1].Shape()) != "(4)" || fmt.Sprint(out[2].Shape()) != "(5)" {
			t.Fatalf("FAP7 %v: shapes %v %v %v", dt, out[0].Shape(), out[1].Shape(), out[2].Shape())
		}
		if err := fpSeqProps(out[1].Int64s(), 6, 3); err != nil {
			t.Fatal(err)
		}
		if err := fpSeqProps(out[2].Int64s(), 6, 4); err != nil {
			t.Fatal(err)
		}
	}
}

// fpForwardCase is one configuration of the forward grid.
type fpForwardCase struct {
	shape []int
	attrs FractionalPoolAttrs
}

func fpForwardGrid() []fpForwardCase {
	var cs []fpForwardCase
	shapes := [][]int{{1, 5, 5, 1}, {2, 7, 9, 3}, {3, 10, 6, 5}, {1, 32, 32, 8}, {2, 3, 11, 4}}
	ratios := [][]float32{{1, 1.44, 1.44, 1}, {1, 2, 1.5, 1}, {1, 1, 3, 1}, {1, 2.7, 1.1, 1}, {1, 3, 3, 1}}
	seed := int64(1)
	for _, s := range shapes {
		for _, r := range ratios {
			if float32(s[1]) < r[1] || float32(s[2]) < r[2] {
				continue
			}
			for _, pseudo := range []bool{false, true} {
				for _, ov := range []bool{false, true} {
					seed++
					cs = append(cs, fpForwardCase{s, FractionalPoolAttrs{PoolingRatio: r, PseudoRandom: pseudo, Overlapping: ov,
						Deterministic: true, Seed: seed, Seed2: seed * 3}})
				}
			}
		}
	}
	return cs
}

// TestFractionalAvgPoolForward compares FractionalAvgPool with the naive
// reference over the grid: float64 and float32 bit-identical to
// TensorFlow's order of operations, int32/int64 exact (truncating
// division), for 1 and 3 threads.
func TestFractionalAvgPoolForward(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, c := range fpForwardGrid() {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		xv := make([]float64, n*h*w*ch)
		for i := range xv {
			xv[i] = r.NormFloat64() * 10
		}
		name := fmt.Sprintf("%v/%v/pseudo=%v/ov=%v", c.shape, c.attrs.PoolingRatio, c.attrs.PseudoRandom, c.attrs.Overlapping)
		for _, threads := range []int{1, 3} {
			out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xv))
			rows, cols := out[1].Int64s(), out[2].Int64s()
			if err := fpSeqProps(rows, h, fpOutputSize(h, c.attrs.PoolingRatio[1])); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := fpSeqProps(cols, w, fpOutputSize(w, c.attrs.PoolingRatio[2])); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			fpCheckAvg(t, name+"/f64", out[0].Float64s(), fpRefAvg(xv, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			x32 := testutil.Convert[float32](xv)
			o32 := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, x32))
			fpCheckAvg(t, name+"/f32", o32[0].Float32s(), fpRefAvg(x32, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			xi := testutil.Convert[int32](xv)
			oi := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xi))
			fpCheckAvg(t, name+"/i32", oi[0].Int32s(), fpRefAvg(xi, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			xl := testutil.Convert[int64](xv)
			ol := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgName, c.attrs, testutil.New(t, c.shape, xl))
			fpCheckAvg(t, name+"/i64", ol[0].Int64s(), fpRefAvg(xl, n, h, w, ch, rows, cols, c.attrs.Overlapping))
			// Same input through the sequences op.
			os := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpAvgSeqName, FractionalPoolSeqAttrs{Overlapping: c.attrs.Overlapping}, testutil.New(t, c.shape, x32), out[1], out[2])
			fpCheckAvg(t, name+"/seq-f32", os[0].Float32s(), o32[0].Float32s())
		}
	}
}

func fpCheckAvg[T fpNum](t *testing.T, name string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	if i := testutil.BitDiff(got, want, false); i >= 0 {
		t.Fatalf("%s: element %d = %v, want %v", name, i, got[i], want[i])
	}
}

// TestFractionalAvgPoolIntegerTruncation checks integer averages truncate
// toward zero, negative sums included.
func TestFractionalAvgPoolIntegerTruncation(t *testing.T) {
	x := testutil.New(t, []int{1, 1, 6, 1}, []int32{-3, -4, 5, 2, 7, -1})
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgSeqName, FractionalPoolSeqAttrs{}, x, fpInt64s(0, 1), fpInt64s(0, 2, 4, 6))
	// (-7)/2 = -3, 7/2 = 3, 6/2 = 3.
	if fmt.Sprint(out[0].Int32s()) != "[-3 3 3]" {
		t.Fatalf("int32 averages %v, want [-3 3 3]", out[0].Int32s())
	}
}

// TestFractionalAvgPoolSignedZero checks that an all −0 cell averages to
// +0, as TensorFlow's zero-initialised accumulator gives, forward and
// backward.
func TestFractionalAvgPoolSignedZero(t *testing.T) {
	nz := math.Copysign(0, -1)
	x := testutil.New(t, []int{1, 1, 4, 1}, []float64{nz, nz, nz, 1})
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgSeqName, FractionalPoolSeqAttrs{}, x, fpInt64s(0, 1), fpInt64s(0, 2, 3, 4))
	if v := out[0].Float64s(); math.Signbit(v[0]) || math.Signbit(v[1]) {
		t.Fatalf("forward of −0 cells: %v", v)
	}
	g := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgGradName, FractionalPoolGradAttrs{}, fpInt64s(1, 1, 4, 1), testutil.New(t, []int{1, 1, 3, 1}, []float32{float32(nz), float32(nz), 2}), fpInt64s(0, 1), fpInt64s(0, 2, 3, 4))
	if v := g[0].Float32s(); math.Signbit(float64(v[0])) || math.Signbit(float64(v[2])) || v[3] != 2 {
		t.Fatalf("gradient of −0: %v", v)
	}
	// Overlapping: single and multiple contributions.
	g = registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgGradName, FractionalPoolGradAttrs{Overlapping: true}, fpInt64s(1, 1, 4, 1), testutil.New(t, []int{1, 1, 2, 1}, []float64{nz, nz}), fpInt64s(0, 1), fpInt64s(0, 2, 4))
	for i, v := range g[0].Float64s() {
		if v != 0 || math.Signbit(v) {
			t.Fatalf("overlapping gradient of −0: element %d = %v", i, v)
		}
	}
}

// TestFractionalAvgPoolGrad compares FractionalAvgPoolGrad with the naive
// float64-accumulating reference, bit for bit in every dtype, over
// generated and hand-written sequences (incomplete coverage, sequences
// longer than needed) and thread counts.
func TestFractionalAvgPoolGrad(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	type gc struct {
		shape      []int
		rows, cols []int64
	}
	cases := []gc{
		{[]int{1, 5, 5, 1}, []int64{0, 2, 5}, []int64{0, 2, 5}},
		{[]int{2, 1, 5, 3}, []int64{0, 1}, []int64{0, 2, 4}},
		{[]int{2, 9, 8, 3}, []int64{0, 1, 3, 5, 7, 9, 20}, []int64{0, 3, 6, 8}},
	}
	for i := 0; i < 12; i++ {
		h, w := 2+r.Intn(30), 2+r.Intn(30)
		oh, ow := 1+r.Intn(h), 1+r.Intn(w)
		cases = append(cases, gc{[]int{1 + r.Intn(3), h, w, 1 + r.Intn(5)},
			fpSampleSeq(h, oh, r.Intn(2) == 0, r.Uint64()), fpSampleSeq(w, ow, r.Intn(2) == 0, r.Uint64())})
	}
	for _, c := range cases {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		oh, ow := len(c.rows)-1, len(c.cols)-1
		if c.rows[oh] > int64(h) { // the third case: one extra entry
			oh--
		}
		dv := make([]float64, n*oh*ow*ch)
		for i := range dv {
			dv[i] = r.NormFloat64() * 7
		}
		st := fpInt64s(int64(n), int64(h), int64(w), int64(ch))
		rs, cs := c.rows[:oh+1], c.cols[:ow+1]
		for _, ov := range []bool{false, true} {
			name := fmt.Sprintf("%v rows %v cols %v ov=%v", c.shape, c.rows, c.cols, ov)
			a := FractionalPoolGradAttrs{Overlapping: ov}
			for _, threads := range []int{1, 3} {
				dyShape := []int{n, oh, ow, ch}
				kc := func() *registry.KernelCtx { return registrytest.SeededKC(threads, 1) }
				o := registrytest.MustRunKC(t, kc(), fpAvgGradName, a, st, testutil.New(t, dyShape, dv), fpInt64s(c.rows...), fpInt64s(c.cols...))
				fpCheckAvg(t, name+"/f64", o[0].Float64s(), fpRefAvgGrad(dv, n, h, w, ch, rs, cs, ov))
				d32 := testutil.Convert[float32](dv)
				o = registrytest.MustRunKC(t, kc(), fpAvgGradName, a, st, testutil.New(t, dyShape, d32), fpInt64s(c.rows...), fpInt64s(c.cols...))
				fpCheckAvg(t, name+"/f32", o[0].Float32s(), fpRefAvgGrad(d32, n, h, w, ch, rs, cs, ov))
				di := testutil.Convert[int32](dv)
				o = registrytest.MustRunKC(t, kc(), fpAvgGradName, a, st, testutil.New(t, dyShape, di), fpInt64s(c.rows...), fpInt64s(c.cols...))
				fpCheckAvg(t, name+"/i32", o[0].Int32s(), fpRefAvgGrad(di, n, h, w, ch, rs, cs, ov))
				dl := testutil.Convert[int64](dv)
				o = registrytest.MustRunKC(t, kc(), fpAvgGradName, a, st, testutil.New(t, dyShape, dl), fpInt64s(c.rows...), fpInt64s(c.cols...))
				fpCheckAvg(t, name+"/i64", o[0].Int64s(), fpRefAvgGrad(dl, n, h, w, ch, rs, cs, ov))
			}
		}
	}
}

// TestFractionalAvgPoolAdjoint checks <AvgPoolWithSequences(x), y> ==
// <x, AvgPoolGrad(y)>: the tapegrad op is the adjoint of the gradient op.
func TestFractionalAvgPoolAdjoint(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 10; i++ {
		n, h, w, c := 1+r.Intn(2), 2+r.Intn(12), 2+r.Intn(12), 1+r.Intn(3)
		rows, cols := fpSampleSeq(h, 1+r.Intn(h), i%2 == 0, uint64(i)), fpSampleSeq(w, 1+r.Intn(w), i%3 == 0, uint64(i+50))
		ov := i%2 == 1
		x := randDense(r, n, h, w, c)
		y := randDense(r, n, len(rows)-1, len(cols)-1, c)
		px := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgSeqName, FractionalPoolSeqAttrs{Overlapping: ov}, x, fpInt64s(rows...), fpInt64s(cols...))[0]
		gy := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgGradName, FractionalPoolGradAttrs{Overlapping: ov}, fpInt64s(int64(n), int64(h), int64(w), int64(c)), y, fpInt64s(rows...), fpInt64s(cols...))[0]
		l, rr := 0.0, 0.0
		for k, v := range px.Float64s() {
			l += v * y.Float64s()[k]
		}
		for k, v := range x.Float64s() {
			rr += v * gy.Float64s()[k]
		}
		if math.Abs(l-rr) > 1e-12*(1+math.Abs(l)) {
			t.Fatalf("case %d: <Px, y> = %v, <x, P'y> = %v", i, l, rr)
		}
	}
}

// TestFractionalAvgPoolGradSmallerBatch checks an out_backprop with fewer
// images than the original input (valid in TensorFlow: the other images
// get zero gradient), and its adjoint through output_batch.
func TestFractionalAvgPoolGradSmallerBatch(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	rows, cols := []int64{0, 2, 5}, []int64{0, 3, 4}
	dy := randDense(r, 1, 2, 2, 3)
	for _, ov := range []bool{false, true} {
		o := registrytest.MustRunKC(t, registrytest.SeededKC(2, 1), fpAvgGradName, FractionalPoolGradAttrs{Overlapping: ov}, fpInt64s(3, 5, 4, 3), dy, fpInt64s(rows...), fpInt64s(cols...))[0].Float64s()
		want := fpRefAvgGrad(dy.Float64s(), 1, 5, 4, 3, rows, cols, ov)
		want = append(want, make([]float64, 2*5*4*3)...)
		fpCheckAvg(t, fmt.Sprintf("ov=%v", ov), o, want)
		x := randDense(r, 3, 5, 4, 3)
		p := registrytest.MustRunKC(t, registrytest.SeededKC(2, 1), fpAvgSeqName, FractionalPoolSeqAttrs{Overlapping: ov, OutputBatch: 1}, x, fpInt64s(rows...), fpInt64s(cols...))[0]
		if fmt.Sprint(p.Shape()) != "(1, 2, 2, 3)" {
			t.Fatalf("output_batch 1: shape %v", p.Shape())
		}
		fpCheckAvg(t, "output_batch", p.Float64s(), fpRefAvg(x.Float64s()[:5*4*3], 1, 5, 4, 3, rows, cols, ov))
	}
}

// TestFractionalMaxPool compares FractionalMaxPool, FractionalMaxPoolGrad
// and tapegrad.FractionalMaxPoolGradGrad with the naive references in
// every dtype, on inputs with many ties (small integers), where the
// gradient must go to the first maximum in row-major order, as in
// TensorFlow's kernel.
func TestFractionalMaxPool(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	for _, c := range fpForwardGrid() {
		n, h, w, ch := c.shape[0], c.shape[1], c.shape[2], c.shape[3]
		xv := make([]float64, n*h*w*ch)
		for i := range xv {
			xv[i] = float64(r.Intn(5) - 2) // many ties
		}
		name := fmt.Sprintf("%v/%v/pseudo=%v/ov=%v", c.shape, c.attrs.PoolingRatio, c.attrs.PseudoRandom, c.attrs.Overlapping)
		ga := FractionalPoolGradAttrs{Overlapping: c.attrs.Overlapping}
		for _, threads := range []int{1, 3} {
			fpMaxCheck(t, name+"/f64", threads, c.attrs, ga, c.shape, xv, r)
			fpMaxCheck(t, name+"/f32", threads, c.attrs, ga, c.shape, testutil.Convert[float32](xv), r)
			fpMaxCheck(t, name+"/i32", threads, c.attrs, ga, c.shape, testutil.Convert[int32](xv), r)
			fpMaxCheck(t, name+"/i64", threads, c.attrs, ga, c.shape, testutil.Convert[int64](xv), r)
		}
	}
}

func fpMaxCheck[T fpNum](t *testing.T, name string, threads int, a FractionalPoolAttrs, ga FractionalPoolGradAttrs, shape []int, xv []T, r *rand.Rand) {
	t.Helper()
	n, h, w, c := shape[0], shape[1], shape[2], shape[3]
	x := testutil.New(t, shape, xv)
	out := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpMaxName, a, x)
	y, rows, cols := out[0], out[1], out[2]
	rs, cs := rows.Int64s(), cols.Int64s()
	am := fpRefArgmax(xv, n, h, w, c, rs, cs, a.Overlapping)
	ys := tensorx.MustSlice[T](y)
	for i, p := range am {
		if ys[i] != xv[p] {
			t.Fatalf("%s: output %d = %v, want %v", name, i, ys[i], xv[p])
		}
	}
	dyv := make([]T, len(am))
	for i := range dyv {
		dyv[i] = T(r.Intn(19) - 9)
	}
	want := make([]T, len(xv))
	for i, p := range am { // scatter in output order, in T
		want[p] += dyv[i]
	}
	g := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpMaxGradName, ga, x, y, testutil.New(t, tensorx.Shape(y), dyv), rows, cols)
	fpCheckAvg(t, name+"/grad", tensorx.MustSlice[T](g[0]), want)
	gv := make([]T, len(xv))
	for i := range gv {
		gv[i] = T(r.Intn(19) - 9)
	}
	wantGG := make([]T, len(am))
	for i, p := range am {
		wantGG[i] = gv[p]
	}
	gg := registrytest.MustRunKC(t, registrytest.SeededKC(threads, 1), fpMaxGradGradName, ga, x, y, testutil.New(t, shape, gv), rows, cols)
	fpCheckAvg(t, name+"/gradgrad", tensorx.MustSlice[T](gg[0]), wantGG)
}

// TestFractionalMaxPoolTies checks the tie rule directly: the first
// maximum in row-major order (rows outer, columns inner) gets the whole
// gradient, and NaN follows TensorFlow's gradient scan.
func TestFractionalMaxPoolTies(t *testing.T) {
	// One 2x2 cell with maxima at (0,1) and (1,0): (0,1) comes first.
	x := testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 5, 5, 2})
	y := testutil.New(t, []int{1, 1, 1, 1}, []float64{5})
	g := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpMaxGradName, FractionalPoolGradAttrs{}, x, y, testutil.New(t, []int{1, 1, 1, 1}, []float64{3}), fpInt64s(0, 2), fpInt64s(0, 2))
	if fmt.Sprint(g[0].Float64s()) != "[0 3 0 0]" {
		t.Fatalf("tie gradient %v, want [0 3 0 0]", g[0].Float64s())
	}
	// Overlapping cells sharing a maximum add both gradients there.
	x = testutil.New(t, []int{1, 1, 5, 1}, []float64{1, 2, 9, 3, 4})
	out := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpMaxGradName, FractionalPoolGradAttrs{Overlapping: true}, x, testutil.New(t, []int{1, 1, 2, 1}, []float64{9, 9}), testutil.New(t, []int{1, 1, 2, 1}, []float64{1, 10}), fpInt64s(0, 1), fpInt64s(0, 2, 5))
	if fmt.Sprint(out[0].Float64s()) != "[0 0 11 0 0]" {
		t.Fatalf("shared maximum gradient %v, want [0 0 11 0 0]", out[0].Float64s())
	}
	// NaN: a NaN first element is the maximum; a later NaN is skipped.
	nan := math.NaN()
	x = testutil.New(t, []int{1, 1, 4, 1}, []float64{nan, 7, 1, nan})
	p := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgSeqName, FractionalPoolSeqAttrs{}, x, fpInt64s(0, 1), fpInt64s(0, 2, 4))
	if v := p[0].Float64s(); !math.IsNaN(v[0]) || v[1] != 0.5*(1+nan) && !math.IsNaN(v[1]) {
		t.Fatalf("average with NaN: %v", v)
	}
	xm := testutil.New(t, []int{1, 1, 4, 1}, []float64{nan, 7, 1, nan})
	ym := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpMaxName, FractionalPoolAttrs{PoolingRatio: []float32{1, 1, 2, 1}, Deterministic: true, Seed: 1}, xm)
	if v := ym[0].Float64s(); !math.IsNaN(v[0]) || v[1] != 1 {
		t.Fatalf("max with NaN: %v, want [NaN 1]", v)
	}
	gm := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpMaxGradName, FractionalPoolGradAttrs{}, xm, ym[0], testutil.New(t, []int{1, 1, 2, 1}, []float64{2, 3}), ym[1], ym[2])
	if fmt.Sprint(gm[0].Float64s()) != "[2 0 3 0]" {
		t.Fatalf("max gradient with NaN: %v, want [2 0 3 0]", gm[0].Float64s())
	}
}

// ---------------------------------------------------------------------
// Errors.

type fpErrCase struct {
	name string
	op   string
	attr any
	in   []*tensor.Dense
	kind error
	msg  string
}

func fpErrCases(t *testing.T) []fpErrCase {
	f64 := func(shape ...int) *tensor.Dense {
		n, _ := tensorx.Numel(shape)
		return testutil.New(t, shape, make([]float64, n))
	}
	ratio := func(r ...float32) FractionalPoolAttrs { return FractionalPoolAttrs{PoolingRatio: r} }
	x := f64(1, 6, 6, 2)
	ga := FractionalPoolGradAttrs{Overlapping: true}
	st := fpInt64s(2, 2, 2, 2)
	dy := testutil.New(t, []int{1, 2, 3, 2}, testutil.Arange(12))
	var cs []fpErrCase
	for _, op := range []string{fpAvgName, fpMaxName} {
		kind := "average"
		if op == fpMaxName {
			kind = "max"
		}
		cs = append(cs,
			fpErrCase{"ratio-len", op, ratio(1, 2, 1), []*tensor.Dense{x}, registry.ErrInvalidArgument, "pooling_ratio field must specify 4 dimensions"},
			fpErrCase{"ratio-below-1", op, ratio(1, 0.5, 2, 1), []*tensor.Dense{x}, registry.ErrInvalidArgument, "pooling_ratio cannot be smaller than 1, got: 0.5"},
			fpErrCase{"FAPE2", op, ratio(1, -1, 3, 1), []*tensor.Dense{f64(3, 30, 30, 3)}, registry.ErrInvalidArgument, "pooling_ratio cannot be smaller than 1"},
			fpErrCase{"ratio-NaN", op, ratio(1, float32(math.NaN()), 2, 1), []*tensor.Dense{x}, registry.ErrInvalidArgument, "cannot be smaller than 1"},
			fpErrCase{"FAPE3", op, FractionalPoolAttrs{PoolingRatio: []float32{2, 3, 1.5, 1}, PseudoRandom: true, Overlapping: true},
				[]*tensor.Dense{f64(3, 30, 50, 3)}, registry.ErrUnimplemented, "Fractional " + kind + " pooling is not yet supported on the batch nor channel dimension"},
			fpErrCase{"channel-ratio", op, ratio(1, 2, 2, 1.5), []*tensor.Dense{x}, registry.ErrUnimplemented, "batch nor channel"},
			fpErrCase{"seed-not-deterministic", op, FractionalPoolAttrs{PoolingRatio: []float32{1, 2, 2, 1}, Seed2: 3},
				[]*tensor.Dense{x}, registry.ErrInvalidArgument, "Both seed and seed2 should be 0 if deterministic is false."},
			fpErrCase{"rank", op, ratio(1, 2, 2, 1), []*tensor.Dense{f64(6, 6, 2)}, registry.ErrShape, "tensor_in must be 4-dimensional"},
			fpErrCase{"FAPE1", op, ratio(1, 1.44, 1.73, 1), []*tensor.Dense{testutil.New(t, []int{1, 1, 1, 4}, []int64{1, 4, 2, 3})},
				registry.ErrInvalidArgument, "Pooling ratio is higher than input dimension size for dimension 1. Input dim size: 1 pooling ratio: 1.44"},
			fpErrCase{"empty-batch", op, ratio(1, 2, 2, 1), []*tensor.Dense{f64(0, 6, 6, 2)}, registry.ErrInvalidArgument, "for dimension 0"},
			fpErrCase{"empty-depth", op, ratio(1, 2, 2, 1), []*tensor.Dense{f64(1, 6, 6, 0)}, registry.ErrInvalidArgument, "for dimension 3"},
			fpErrCase{"dtype", op, ratio(1, 2, 2, 1), []*tensor.Dense{testutil.New(t, []int{1, 2, 2, 1}, []bool{true, false, true, false})}, registry.ErrDtype, "no kernel"},
		)
	}
	ag := fpAvgGradName
	cs = append(cs,
		fpErrCase{"FAPE4", ag, ga, []*tensor.Dense{st, dy, fpInt64s(-10, 1, 2, 3), fpInt64s(1, 2, 3, 4)}, registry.ErrInvalidArgument, "Row sequence tensor values must not be negative"},
		fpErrCase{"FAPE5", ag, ga, []*tensor.Dense{st, dy, fpInt64s(10, 1, 2, 3), fpInt64s(1, 2, -3, 4)}, registry.ErrInvalidArgument, "Column sequence tensor values must not be negative"},
		fpErrCase{"FAPE6", ag, ga, []*tensor.Dense{fpInt64s(-1879048192, -1879048192, -1879048192, -1879048192), f64(0, 0, 0, 0), fpInt64s(1, 1, 1, 1), fpInt64s(1, 1, 1, 1)},
			registry.ErrInvalidArgument, "out_backprop must be positive for all dimension"},
		fpErrCase{"shape-len", ag, ga, []*tensor.Dense{fpInt64s(2, 2, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrShape, "original input tensor shape must be1-dimensional and 4 elements"},
		fpErrCase{"shape-dtype", ag, ga, []*tensor.Dense{testutil.New(t, []int{4}, []int32{1, 2, 3, 2}), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrDtype, "orig_input_tensor_shape must be int64"},
		fpErrCase{"dy-rank", ag, ga, []*tensor.Dense{st, f64(2, 3, 2), fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrShape, "out_backprop must be 4-dimensional"},
		fpErrCase{"rows-short", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "row_seq_tensor must have at least 3 elements, but got 2"},
		fpErrCase{"cols-short", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2)}, registry.ErrInvalidArgument, "col_seq_tensor must have at least 4 elements, but got 3"},
		fpErrCase{"rows-rank", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, testutil.New(t, []int{1, 3}, []int64{0, 1, 2}), fpInt64s(0, 1, 2, 3)}, registry.ErrShape, "row_pooling_sequence must be a vector"},
		fpErrCase{"rows-dtype", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, testutil.New(t, []int{3}, []int32{0, 1, 2}), fpInt64s(0, 1, 2, 3)}, registry.ErrDtype, "row_pooling_sequence must be int64"},
		fpErrCase{"zero-rows", ag, ga, []*tensor.Dense{fpInt64s(1, 0, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "Rows dimension of input must not be 0"},
		fpErrCase{"zero-depth", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 0), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "Depth dimension of input must not be 0"},
		fpErrCase{"negative-dim", ag, ga, []*tensor.Dense{fpInt64s(1, -4, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "Expected a non-negative size, got -4"},
		fpErrCase{"too-large", ag, ga, []*tensor.Dense{fpInt64s(1, 1<<40, 1<<40, 2), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "The total elements specified by orig_input_tensor_shape is too large"},
		fpErrCase{"batch-too-large", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), testutil.New(t, []int{2, 2, 3, 2}, testutil.Arange(24)), fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)},
			registry.ErrInvalidArgument, "its batch must not exceed the input's"},
		fpErrCase{"depth-mismatch", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 3), dy, fpInt64s(0, 1, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "its depth must equal it"},
		fpErrCase{"beyond-input", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1, 5), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "row_pooling_sequence entry 2 is 5, beyond the input size 4"},
		fpErrCase{"start-beyond-input", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 1, 2), fpInt64s(4, 5, 6, 7)}, registry.ErrInvalidArgument, "col_pooling_sequence entry 1 is 5, beyond"},
		fpErrCase{"not-increasing", ag, ga, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 2, 2), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "row_pooling_sequence must be strictly increasing"},
		fpErrCase{"decreasing", ag, FractionalPoolGradAttrs{}, []*tensor.Dense{fpInt64s(1, 4, 4, 2), dy, fpInt64s(0, 3, 1), fpInt64s(0, 1, 2, 3)}, registry.ErrInvalidArgument, "strictly increasing"},
	)
	sq := fpAvgSeqName
	sa := FractionalPoolSeqAttrs{}
	cs = append(cs,
		fpErrCase{"seq-rank", sq, sa, []*tensor.Dense{f64(4, 4, 2), fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrShape, "value must be 4-dimensional"},
		fpErrCase{"seq-one-entry", sq, sa, []*tensor.Dense{x, fpInt64s(0), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "at least 2 entries"},
		fpErrCase{"seq-short-for-attr", sq, FractionalPoolSeqAttrs{OutputRows: 3}, []*tensor.Dense{x, fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "must have at least 4 elements"},
		fpErrCase{"seq-negative-attr", sq, FractionalPoolSeqAttrs{OutputCols: -1}, []*tensor.Dense{x, fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "must be >= 0"},
		fpErrCase{"seq-batch-attr", sq, FractionalPoolSeqAttrs{OutputBatch: 2}, []*tensor.Dense{x, fpInt64s(0, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "output_batch 2 exceeds the batch 1"},
		fpErrCase{"seq-negative", sq, sa, []*tensor.Dense{x, fpInt64s(-1, 2, 4), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "Row sequence tensor values must not be negative"},
		fpErrCase{"seq-beyond", sq, sa, []*tensor.Dense{x, fpInt64s(0, 2, 7), fpInt64s(0, 2, 4)}, registry.ErrInvalidArgument, "beyond the input size 6"},
		fpErrCase{"seq-dtype", sq, sa, []*tensor.Dense{x, fpInt64s(0, 2, 4), testutil.New(t, []int{3}, []float64{0, 2, 4})}, registry.ErrDtype, "col_pooling_sequence must be int64"},
	)
	xm := testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 5, 5, 2})
	ym := testutil.New(t, []int{1, 1, 1, 1}, []float64{5})
	dm := testutil.New(t, []int{1, 1, 1, 1}, []float64{1})
	r2 := fpInt64s(0, 2)
	for _, op := range []string{fpMaxGradName, fpMaxGradGradName} {
		g := dm
		if op == fpMaxGradGradName {
			g = testutil.New(t, []int{1, 2, 2, 1}, []float64{1, 2, 3, 4})
		}
		cs = append(cs,
			fpErrCase{"x-rank", op, ga, []*tensor.Dense{f64(2, 2, 1), ym, g, r2, r2}, registry.ErrShape, "orig_input should be a tensor of rank 4"},
			fpErrCase{"x-empty", op, ga, []*tensor.Dense{f64(0, 2, 2, 1), ym, g, r2, r2}, registry.ErrInvalidArgument, "orig_input must not be empty"},
			fpErrCase{"y-rank", op, ga, []*tensor.Dense{xm, f64(1, 1, 1), g, r2, r2}, registry.ErrShape, "orig_output should be a tensor of rank 4"},
			fpErrCase{"y-empty", op, ga, []*tensor.Dense{xm, f64(1, 0, 1, 1), g, r2, r2}, registry.ErrInvalidArgument, "orig_output must not be empty"},
			fpErrCase{"y-dtype", op, ga, []*tensor.Dense{xm, testutil.New(t, []int{1, 1, 1, 1}, []float32{5}), g, r2, r2}, registry.ErrDtype, "input 1 has dtype float32"},
			fpErrCase{"y-batch", op, ga, []*tensor.Dense{xm, f64(2, 1, 1, 1), g, r2, r2}, registry.ErrInvalidArgument, "batch or depth"},
			fpErrCase{"g-shape", op, ga, []*tensor.Dense{xm, ym, f64(1, 1, 2, 1), r2, r2}, registry.ErrShape, "must have shape"},
			fpErrCase{"rows-short", op, ga, []*tensor.Dense{xm, ym, g, fpInt64s(0), r2}, registry.ErrInvalidArgument, "row_seq_tensor must have at least 2 elements"},
			fpErrCase{"negative", op, ga, []*tensor.Dense{xm, ym, g, r2, fpInt64s(-1, 2)}, registry.ErrInvalidArgument, "Column sequence tensor values must not be negative"},
			fpErrCase{"beyond", op, ga, []*tensor.Dense{xm, ym, g, fpInt64s(0, 3), r2}, registry.ErrInvalidArgument, "beyond the input size 2"},
			fpErrCase{"stale-output", op, ga, []*tensor.Dense{xm, testutil.New(t, []int{1, 1, 1, 1}, []float64{4}), g, r2, r2}, registry.ErrInvalidArgument, "tensor_out_dup is not the same as tensor_out"},
		)
	}
	return cs
}

// TestFractionalPoolErrors checks every spec'd error (FAPE1–FAPE6 and §7)
// and tapegrad's extra validation: an error wrapping the right sentinel,
// naming the op, never a panic.
func TestFractionalPoolErrors(t *testing.T) {
	for _, c := range fpErrCases(t) {
		t.Run(c.op+"/"+c.name, func(t *testing.T) {
			_, err := registrytest.RunKC(t, registrytest.SeededKC(2, 1), c.op, c.attr, c.in...)
			testutil.WantErr(t, err, c.kind, c.op, c.msg)
		})
	}
}

// TestFractionalPoolAttrsParse checks the attrs parse from golden-case
// JSON (TensorFlow names, float list to float32).
func TestFractionalPoolAttrsParse(t *testing.T) {
	def, err := registry.Lookup(fpAvgName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := def.ParseAttrs(map[string]any{"pooling_ratio": []any{1.0, 1.4142135, 1.73, 1.0}, "pseudo_random": true,
		"overlapping": true, "deterministic": true, "seed": 3.0, "seed2": 4.0, "T": "float32"})
	if err != nil {
		t.Fatal(err)
	}
	if a, err = def.NormalizeAttrs(a); err != nil {
		t.Fatal(err)
	}
	got := a.(FractionalPoolAttrs)
	if got.PoolingRatio[1] != float32(1.4142135) || !got.PseudoRandom || !got.Overlapping || !got.Deterministic || got.Seed != 3 || got.Seed2 != 4 {
		t.Fatalf("parsed %+v", got)
	}
	// 11 rows / float32(1.4142135) = 7.78 → 7; 9 / 1.73 = 5.2 → 5 (golden case 0003).
	if fpOutputSize(11, got.PoolingRatio[1]) != 7 || fpOutputSize(9, got.PoolingRatio[2]) != 5 {
		t.Fatal("output sizes")
	}
	if fpOutputSize(6, float32(math.Sqrt(3))) != 3 || fpOutputSize(6, float32(math.Sqrt(2))) != 4 || fpOutputSize(32, 1.44) != 22 {
		t.Fatal("float32 output sizes")
	}
}

// BenchmarkFractionalPoolW9Kernels times the kernels of workload W9
// (perf/WORKLOADS.md: float32 NHWC [32,32,32,64], ratio 1.44 → 22x22) on
// one thread with recycled buffers: FractionalAvgPool forward, its
// gradient op (non-overlapping and overlapping), and FractionalMaxPool.
func BenchmarkFractionalPoolW9Kernels(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x32 := make([]float32, 32*32*32*64)
	for i := range x32 {
		x32[i] = float32(r.NormFloat64())
	}
	x, _ := tensorx.New([]int{32, 32, 32, 64}, x32)
	dy32 := make([]float32, 32*22*22*64)
	for i := range dy32 {
		dy32[i] = float32(r.NormFloat64())
	}
	dy, _ := tensorx.New([]int{32, 22, 22, 64}, dy32)
	for _, ov := range []bool{false, true} {
		a := FractionalPoolAttrs{PoolingRatio: []float32{1, 1.44, 1.44, 1}, Overlapping: ov, Deterministic: true, Seed: 1, Seed2: 2}
		al := &testutil.PoolAlloc{}
		kc := &registry.KernelCtx{Alloc: al, Threads: 1}
		avg, _ := registry.Lookup(fpAvgName)
		grad, _ := registry.Lookup(fpAvgGradName)
		mx, _ := registry.Lookup(fpMaxName)
		fwd, err := registry.Run(avg, kc, a, []*tensor.Dense{x})
		if err != nil {
			b.Fatal(err)
		}
		st := fpInt64s(32, 32, 32, 64)
		run := func(b *testing.B, def *registry.OpDef, attrs any, in ...*tensor.Dense) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				out, err := registry.Run(def, kc, attrs, in)
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range out {
					al.Release(o)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		}
		sfx := fmt.Sprintf("/overlapping=%v", ov)
		b.Run("avg"+sfx, func(b *testing.B) { run(b, avg, a, x) })
		b.Run("avggrad"+sfx, func(b *testing.B) {
			run(b, grad, FractionalPoolGradAttrs{Overlapping: ov}, st, dy, fwd[1], fwd[2])
		})
		b.Run("max"+sfx, func(b *testing.B) { run(b, mx, a, x) })
	}
}

// TestFractionalPoolRobustness feeds random shapes, sequences and attrs
// to every op of the family: each call returns a result or an error that
// is not internal (no kernel panic), and results of the gradient ops only
// come from sequences that pass validation.
func TestFractionalPoolRobustness(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	dim := func() int {
		if r.Intn(12) == 0 {
			return 0
		}
		return 1 + r.Intn(5)
	}
	shape := func() []int {
		s := make([]int, 3+r.Intn(3)) // ranks 3..5, mostly 4
		if len(s) == 5 {
			s = s[:4]
		}
		for i := range s {
			s[i] = dim()
		}
		return s
	}
	f64 := func(s []int) *tensor.Dense {
		n, _ := tensorx.Numel(s)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.Intn(7) - 3)
		}
		return testutil.New(t, s, v)
	}
	seq := func() *tensor.Dense {
		v := make([]int64, r.Intn(6))
		if r.Intn(2) == 0 { // increasing from 0, steps 1 or 2
			for i := 1; i < len(v); i++ {
				v[i] = v[i-1] + 1 + int64(r.Intn(2))
			}
			return testutil.New(t, []int{len(v)}, v)
		}
		for i := range v {
			v[i] = int64(r.Intn(9) - 2)
		}
		return testutil.New(t, []int{len(v)}, v)
	}
	ratio := func() []float32 {
		v := make([]float32, 3+r.Intn(2))
		for i := range v {
			v[i] = []float32{1, 1, 1, 1.5, 2, 0.5, 3}[r.Intn(7)]
		}
		return v
	}
	ok := 0
	for i := 0; i < 3000; i++ {
		ov := r.Intn(2) == 0
		var op string
		var attrs any
		var in []*tensor.Dense
		switch r.Intn(6) {
		case 0, 1:
			op = []string{fpAvgName, fpMaxName}[r.Intn(2)]
			attrs = FractionalPoolAttrs{PoolingRatio: ratio(), PseudoRandom: r.Intn(2) == 0, Overlapping: ov,
				Deterministic: r.Intn(2) == 0, Seed: int64(r.Intn(3))}
			in = []*tensor.Dense{f64(shape())}
		case 2:
			op, attrs = fpAvgGradName, FractionalPoolGradAttrs{Overlapping: ov}
			st := make([]int64, 3+r.Intn(2))
			for j := range st {
				st[j] = int64(r.Intn(6) - 1)
			}
			dy := f64(shape())
			if r.Intn(2) == 0 && dy.Dims() == 4 { // a plausible original shape half the time
				s := dy.Shape()
				st = []int64{int64(s[0]), int64(2 * s[1]), int64(2 * s[2]), int64(s[3])}
			}
			in = []*tensor.Dense{fpInt64s(st...), dy, seq(), seq()}
		case 3:
			op, attrs = fpAvgSeqName, FractionalPoolSeqAttrs{Overlapping: ov, OutputRows: r.Intn(3), OutputBatch: r.Intn(2)}
			in = []*tensor.Dense{f64(shape()), seq(), seq()}
		default:
			op = []string{fpMaxGradName, fpMaxGradGradName}[r.Intn(2)]
			attrs = FractionalPoolGradAttrs{Overlapping: ov}
			x := f64(shape())
			in = []*tensor.Dense{x, f64(shape()), f64(shape()), seq(), seq()}
			if r.Intn(2) == 0 && x.Dims() == 4 { // a consistent orig_output half the time
				res, err := registrytest.RunKC(t, registrytest.SeededKC(1, 1), fpMaxName, FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, Overlapping: ov}, x)
				if err == nil {
					g := in[2]
					if op == fpMaxGradName {
						g = f64(tensorx.Shape(res[0]))
					} else {
						g = f64(tensorx.Shape(x))
					}
					in = []*tensor.Dense{x, res[0], g, res[1], res[2]}
				}
			}
		}
		out, err := registrytest.RunKC(t, registrytest.SeededKC(1+r.Intn(3), int64(i)), op, attrs, in...)
		if errors.Is(err, registry.ErrInternal) {
			t.Fatalf("case %d %s %+v: internal error %v", i, op, attrs, err)
		}
		if err == nil {
			ok++
			if len(out) == 0 || out[0] == nil {
				t.Fatalf("case %d %s: no output", i, op)
			}
		}
	}
	if ok == 0 {
		t.Fatal("no random case succeeded")
	}
	t.Logf("%d of 3000 random cases ran, the others were refused", ok)
}

// TestFractionalAvgPoolLargeThreads runs FractionalAvgPool and its
// gradient on a batch large enough that their loops split across
// goroutines, with and without overlapping cells, and checks that 1, 2
// and 3 threads give the reference's values.
func TestFractionalAvgPoolLargeThreads(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	const n, h, w, c = 8, 36, 36, 16
	xv := make([]float32, n*h*w*c)
	for i := range xv {
		xv[i] = float32(r.NormFloat64())
	}
	for _, ov := range []bool{false, true} {
		a := FractionalPoolAttrs{PoolingRatio: []float32{1, 1.5, 1.5, 1}, PseudoRandom: true, Overlapping: ov,
			Deterministic: true, Seed: 7, Seed2: 8}
		ref := registrytest.MustRunKC(t, registrytest.SeededKC(1, 1), fpAvgName, a, testutil.New(t, []int{n, h, w, c}, xv))
		rows, cols := ref[1].Int64s(), ref[2].Int64s()
		oh, ow := len(rows)-1, len(cols)-1
		dv := make([]float32, n*oh*ow*c)
		for i := range dv {
			dv[i] = float32(r.NormFloat64())
		}
		name := fmt.Sprintf("ov=%v", ov)
		for _, threads := range []int{1, 2, 3} {
			kc := registrytest.SeededKC(threads, 1)
			out := registrytest.MustRunKC(t, kc, fpAvgName, a, testutil.New(t, []int{n, h, w, c}, xv))
			fpCheckAvg(t, name+"/fwd", out[0].Float32s(), fpRefAvg(xv, n, h, w, c, rows, cols, ov))
			g := registrytest.MustRunKC(t, kc, fpAvgGradName, FractionalPoolGradAttrs{Overlapping: ov},
				fpInt64s(n, h, w, c), testutil.New(t, []int{n, oh, ow, c}, dv), ref[1], ref[2])
			fpCheckAvg(t, name+"/grad", g[0].Float32s(), fpRefAvgGrad(dv, n, h, w, c, rows, cols, ov))
		}
	}
}
