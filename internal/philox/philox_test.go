package philox

import (
	"math"
	"math/bits"
	"math/rand"
	"testing"
)

// TestBlockKnownAnswers checks Block against the Random123 known-answer
// vectors for philox4x32-10 (kat_vectors in the Random123 distribution).
func TestBlockKnownAnswers(t *testing.T) {
	cases := []struct {
		ctr  Counter
		key  Key
		want [4]uint32
	}{
		{Counter{0, 0, 0, 0}, Key{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{Counter{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, Key{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{Counter{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, Key{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Block(c.ctr, c.key); got != c.want {
			t.Errorf("Block(%08x, %08x) = %08x, want %08x", c.ctr, c.key, got, c.want)
		}
	}
}

// refBlock is a second, independently structured Philox4x32-10 (round
// function via math/bits, key schedule precomputed) for a randomized
// comparison.
func refBlock(ctr [4]uint32, key [2]uint32) [4]uint32 {
	var keys [Rounds][2]uint32
	keys[0] = key
	for r := 1; r < Rounds; r++ {
		keys[r] = [2]uint32{keys[r-1][0] + 0x9E3779B9, keys[r-1][1] + 0xBB67AE85}
	}
	x := ctr
	for r := 0; r < Rounds; r++ {
		h0, l0 := bits.Mul32(0xD2511F53, x[0])
		h1, l1 := bits.Mul32(0xCD9E8D57, x[2])
		x = [4]uint32{h1 ^ x[1] ^ keys[r][0], l1, h0 ^ x[3] ^ keys[r][1], l0}
	}
	return x
}

func TestBlockMatchesReference(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		ctr := Counter{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()}
		key := Key{r.Uint32(), r.Uint32()}
		if got, want := Block(ctr, key), refBlock(ctr, key); got != want {
			t.Fatalf("Block(%08x, %08x) = %08x, reference %08x", ctr, key, got, want)
		}
	}
}

// TestSeeding checks TensorFlow's seed layout: key = seed, counter high
// half = seed2, low half 0.
func TestSeeding(t *testing.T) {
	g := New(0x1122334455667788, 0x99aabbccddeeff00)
	if g.Key() != (Key{0x55667788, 0x11223344}) {
		t.Fatalf("key %08x", g.Key())
	}
	if g.Counter() != (Counter{0, 0, 0xddeeff00, 0x99aabbcc}) {
		t.Fatalf("counter %08x", g.Counter())
	}
	// Negative int64 seeds are reinterpreted as uint64.
	s := int64(-2)
	g = New(uint64(s), 0)
	if g.Key() != (Key{0xfffffffe, 0xffffffff}) {
		t.Fatalf("key of seed -2: %08x", g.Key())
	}
}

// TestSpecTrace checks the first block of the generator seeded (1, 2)
// against the cross-check trace of docs/spec/fractional_avg_pool.md §6.
func TestSpecTrace(t *testing.T) {
	g := New(1, 2)
	s := NewSingle(g)
	if x0, x1 := s.Uint32(), s.Uint32(); x0 != 3878945999 || x1 != 2364392915 {
		t.Fatalf("first words %d %d, want 3878945999 2364392915", x0, x1)
	}
	// The trace's u is the double scaled by min(u_max1, u_max2) = 0.8 for
	// in = 10, out = 6.
	u := NewSingle(New(1, 2)).Double() * 0.8
	if math.Abs(u-0.2009395985) > 1e-10 {
		t.Fatalf("u = %.10f, want 0.2009395985", u)
	}
}

func TestNextAndSkip(t *testing.T) {
	g := New(7, 9)
	c0 := g.Counter()
	b := g.Next()
	if b != Block(c0, g.Key()) {
		t.Fatal("Next does not return the block of the current counter")
	}
	if g.Counter() != (Counter{1, 0, 9, 0}) {
		t.Fatalf("counter after Next: %08x", g.Counter())
	}
	cases := []struct {
		from Counter
		n    uint64
		want Counter
	}{
		{Counter{0, 0, 5, 6}, 3, Counter{3, 0, 5, 6}},
		{Counter{0xffffffff, 0, 5, 6}, 1, Counter{0, 1, 5, 6}},
		{Counter{0xffffffff, 0xffffffff, 5, 6}, 1, Counter{0, 0, 6, 6}},
		{Counter{0xffffffff, 0xffffffff, 0xffffffff, 6}, 1, Counter{0, 0, 0, 7}},
		{Counter{2, 3, 0, 0}, 1<<32 + 5, Counter{7, 4, 0, 0}},
		{Counter{0xfffffffe, 0xfffffffe, 1, 1}, 1<<32 + 2, Counter{0, 0, 2, 1}},
	}
	for _, c := range cases {
		g := FromState(c.from, Key{})
		g.Skip(c.n)
		if g.Counter() != c.want {
			t.Errorf("Skip(%d) from %08x = %08x, want %08x", c.n, c.from, g.Counter(), c.want)
		}
	}
	// Skip(n) equals n calls of Next.
	a, b2 := New(3, 4), New(3, 4)
	for i := 0; i < 10; i++ {
		a.Next()
	}
	b2.Skip(10)
	if a.Counter() != b2.Counter() || a.Next() != b2.Next() {
		t.Fatal("Skip(10) differs from 10 calls of Next")
	}
}

// TestReserve checks GuardedPhiloxRandom's reservation: the copy starts at
// the shared counter, the shared generator skips ceil(n/4) blocks for n
// 32-bit samples.
func TestReserve(t *testing.T) {
	for _, n := range []uint64{0, 1, 2, 3, 4, 5, 8, 9, 17} {
		g := New(11, 12)
		start := g.Counter()
		c := g.Reserve32(n)
		if c.Counter() != start {
			t.Fatalf("Reserve32(%d): copy at %08x, want %08x", n, c.Counter(), start)
		}
		want := New(11, 12)
		want.Skip((n + 3) / 4)
		if g.Counter() != want.Counter() {
			t.Fatalf("Reserve32(%d): shared counter %08x, want %08x", n, g.Counter(), want.Counter())
		}
	}
	g := New(1, 1)
	c := g.Reserve128(3)
	want := New(1, 1)
	want.Skip(3)
	if g.Counter() != want.Counter() || c.Counter() != New(1, 1).Counter() {
		t.Fatal("Reserve128(3)")
	}
}

// TestSingleOrder checks that Single hands out words 0..3 of each block in
// order and then moves to the next block.
func TestSingleOrder(t *testing.T) {
	g := New(5, 6)
	ref := g
	s := NewSingle(g)
	for blk := 0; blk < 3; blk++ {
		b := ref.Next()
		for i := 0; i < 4; i++ {
			if v := s.Uint32(); v != b[i] {
				t.Fatalf("block %d word %d: %d, want %d", blk, i, v, b[i])
			}
		}
	}
	// The source generator was copied, not advanced.
	if g.Counter() != New(5, 6).Counter() {
		t.Fatal("NewSingle advanced its argument")
	}
}

func TestUint64ToDouble(t *testing.T) {
	if v := Uint64ToDouble(0, 0); v != 0 {
		t.Fatalf("zero words: %v", v)
	}
	if v := Uint64ToDouble(0xffffffff, 0xffffffff); v != 1-math.Ldexp(1, -52) {
		t.Fatalf("all ones: %v, want 1-2^-52", v)
	}
	// Only the low 20 bits of x0 count.
	if Uint64ToDouble(0xfff00000, 7) != Uint64ToDouble(0, 7) {
		t.Fatal("high 12 bits of x0 used")
	}
	if v := Uint64ToDouble(0x80000, 0); v != 0.5 {
		t.Fatalf("mantissa top bit: %v, want 0.5", v)
	}
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 1000; i++ {
		v := Uint64ToDouble(r.Uint32(), r.Uint32())
		if !(v >= 0 && v < 1) {
			t.Fatalf("out of [0,1): %v", v)
		}
	}
}
