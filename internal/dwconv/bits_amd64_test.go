//go:build amd64 && !noasm && !gccgo && !safe

package dwconv

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/internal/cpu"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The bits of the assembly tiers, pinned: testdata/avx2_bits.txt holds a
// hash of every result of the kernels and of Forward, BackpropInput and
// BackpropFilter on random inputs over many shapes, strides, paddings and
// channel tails, as the hand-written AVX2 kernels (kernel_amd64.s before
// the kernels were generated) computed them. Every assembly tier must
// reproduce them bit for bit: the generated AVX2 kernels, and the AVX-512
// ones, which do the same operations per channel in the same order.

var writeBits = flag.Bool("dwconv.writebits", false, "write testdata/avx2_bits.txt from the current assembly kernels")

const bitsFile = "testdata/avx2_bits.txt"

// hasher hashes float32 and float64 values by their bits.
type hasher struct{ b []byte }

func (h *hasher) f32(s []float32) {
	for _, v := range s {
		h.b = binary.LittleEndian.AppendUint32(h.b, math.Float32bits(v))
	}
}

func (h *hasher) f64(s []float64) {
	for _, v := range s {
		h.b = binary.LittleEndian.AppendUint64(h.b, math.Float64bits(v))
	}
}

func (h *hasher) sum() string {
	s := sha256.Sum256(h.b)
	return hex.EncodeToString(s[:12])
}

// bitsCases runs every case and returns its name and hash, in order;
// with stream, the storing kernels and passes write with non-temporal
// stores where they can (the outputs 64-byte aligned, dwStreamBytes 0).
func bitsCases(stream bool) (names, sums []string) {
	if stream {
		old := dwStreamBytes
		dwStreamBytes = 0
		defer func() { dwStreamBytes = old }()
	}
	add := func(name string, h *hasher) {
		names = append(names, name)
		sums = append(sums, h.sum())
	}
	r := rand.New(rand.NewSource(41))
	// The kernel cases, as first pinned: c channels per pixel, nb blocks of
	// 8 channels.
	type kgeom struct{ c, nb, n, s int }
	var gs []kgeom
	for _, c := range []int{8, 9, 16, 17, 24, 31, 40, 128} {
		for nb := 1; Block*nb <= c; nb++ {
			if c > 40 && nb != c/Block && nb != 1 {
				continue
			}
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 19} {
				for _, s := range []int{1, 2} {
					gs = append(gs, kgeom{c, nb, n, s})
				}
			}
		}
	}
	for _, c := range []int{32, 64, 128, 136} {
		for _, n := range []int{23, 54, 55, 56} {
			for _, s := range []int{1, 2} {
				gs = append(gs, kgeom{c, c / Block, n, s})
			}
		}
	}
	// The packed tap sums in the order of the 8-lane layout: element
	// 72b+8k+l holds tap k of channel 8b+l.
	packed := func(w int, canon []float32) []float32 {
		acc := make([]float32, accLen(w))
		for i, v := range canon {
			acc[accIndex(w, i%72/8, i/72*8+i%8)] = v
		}
		return acc
	}
	canonical := func(w int, acc []float32) []float32 {
		canon := make([]float32, 9*w)
		for i := range canon {
			canon[i] = acc[accIndex(w, i%72/8, i/72*8+i%8)]
		}
		return canon
	}
	for _, g := range gs {
		c, nb, n, s := g.c, g.nb, g.n, g.s
		w := Block * nb
		name := fmt.Sprintf("c%d/nb%d/n%d/s%d", c, nb, n, s)
		rowLen := ((n-1)*s + 3) * c
		x := [3][]float32{randF32(r, rowLen), randF32(r, rowLen), randF32(r, rowLen)}
		t := randF32(r, 9*c)
		o := aligned(n*c, 0)
		Fwd3x3(o, &x, t, n, w, c, s, nil, stream)
		h := &hasher{}
		h.f32(o)
		add("Fwd3x3 "+name, h)

		acc := packed(w, randF32(r, 72*nb))
		dy := randF32(r, n*c)
		Filter3x3(acc, dy, &x, n, w, c, s, nil)
		h = &hasher{}
		h.f32(canonical(w, acc))
		add("Filter3x3 "+name, h)

		if s == 1 {
			d := [3][]float32{randF32(r, (n+1)*c), randF32(r, (n+1)*c), randF32(r, (n+1)*c)}
			o := aligned(2*n*c, 0)
			BwdInput3x3S2(o, &d, t, n, w, c, nil, stream)
			h = &hasher{}
			h.f32(o)
			add("BwdInput3x3S2 "+name, h)
		}
	}
	for _, c := range []int{8, 13, 16, 24, 40, 128} {
		for nb := 1; Block*nb <= c; nb++ {
			for n := 1; n <= 9; n++ {
				xs, ts := make([][]float32, n), make([][]float32, n)
				for i := range n {
					xs[i], ts[i] = randF32(r, c), randF32(r, c)
				}
				w := Block * nb
				o := make([]float32, c)
				DotTaps(o, xs, ts, w)
				h := &hasher{}
				h.f32(o)
				add(fmt.Sprintf("DotTaps c%d/nb%d/n%d", c, nb, n), h)

				ks := r.Perm(9)[:n]
				acc := packed(w, randF32(r, 72*nb))
				AxpyTaps(acc, ks, xs, ts[0], w)
				h = &hasher{}
				h.f32(canonical(w, acc))
				add(fmt.Sprintf("AxpyTaps c%d/nb%d/n%d", c, nb, n), h)
			}
		}
	}
	cases := pathCases()
	cases = append(cases,
		pathCase{n: 2, h: 14, w: 14, c: 128, sh: 1, sw: 1, dh: 1, dw: 1, padding: "SAME"},
		pathCase{n: 2, h: 28, w: 28, c: 32, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
		pathCase{n: 1, h: 19, w: 23, c: 20, sh: 2, sw: 2, dh: 1, dw: 1, padding: "SAME"},
		pathCase{n: 3, h: 11, w: 30, c: 44, sh: 1, sw: 2, dh: 1, dw: 1, padding: "VALID"},
		pathCase{n: 1, h: 9, w: 40, c: 72, sh: 2, sw: 1, dh: 2, dw: 1, padding: "SAME", nchw: true},
	)
	for i, pc := range cases {
		ref, ok := testutil.NewDepthwiseRef(pc.nchw, pc.n, pc.h, pc.w, pc.c, 1, 3, 3, pc.sh, pc.sw, pc.dh, pc.dw, pc.padding, pc.pads)
		if !ok {
			continue
		}
		g := refGeom(&ref)
		x := randF32(r, testutil.Numel(ref.XShape()))
		f := randF32(r, testutil.Numel(ref.FShape()))
		dy := randF32(r, testutil.Numel(ref.YShape()))
		res := run3(&g, 1, x, f, dy)
		for k, op := range []string{"Forward", "BackpropInput", "BackpropFilter"} {
			h := &hasher{}
			h.f32(res[k])
			add(fmt.Sprintf("%s case %d %+v", op, i, pc), h)
		}
	}
	return names, sums
}

// TestAsmBits checks that every assembly tier the CPU has reproduces the
// pinned bits of testdata/avx2_bits.txt, with and without non-temporal
// stores.
func TestAsmBits(t *testing.T) {
	run := 0
	for _, isa := range modes() {
		if isa == cpu.Go {
			continue
		}
		run++
		for _, stream := range []bool{false, true} {
			withMode(isa, func() { checkBits(t, isa, stream) })
		}
	}
	if run == 0 {
		t.Skip("NOT RUN: no assembly kernels on this CPU")
	}
}

func checkBits(t *testing.T, isa cpu.ISA, stream bool) {
	names, sums := bitsCases(stream)
	if *writeBits {
		if isa != cpu.AVX2 || stream {
			return
		}
		var b strings.Builder
		for i := range names {
			fmt.Fprintf(&b, "%s %s\n", sums[i], names[i])
		}
		if err := os.WriteFile(bitsFile, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d hashes to %s", len(names), bitsFile)
		return
	}
	f, err := os.Open(bitsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("%s: bad line %q", bitsFile, sc.Text())
		}
		want[name] = sum
	}
	if len(want) != len(names) {
		t.Fatalf("%s holds %d cases, the test runs %d", bitsFile, len(want), len(names))
	}
	bad := 0
	for i, name := range names {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("case %q is not in %s", name, bitsFile)
			bad++
		case w != sums[i]:
			t.Errorf("%v (stream %v): %s: bits differ from the pinned AVX2 results", isa, stream, name)
			bad++
		}
		if bad > 20 {
			t.Fatal("too many differences")
		}
	}
	t.Logf("%v (stream %v): %d cases bit-identical to %s", isa, stream, len(names), bitsFile)
}
