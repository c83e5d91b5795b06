// Package philox implements the Philox4x32-10 counter-based random number
// generator (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011; the Random123 library) and the small helpers TensorFlow layers
// on top of it, so that ops drawing random numbers the way TensorFlow's CPU
// kernels do produce the same numbers for the same seeds:
//
//   - New: seeding from TensorFlow's (seed, seed2) op attributes
//     (tensorflow/core/lib/random/philox_random.h);
//   - Generator.Reserve32 / Reserve128: TensorFlow's GuardedPhiloxRandom
//     reservation, which hands out a copy of the generator and skips the
//     shared one past the reserved blocks;
//   - Single: TensorFlow's SingleSampleAdapter, one 32-bit sample at a
//     time in block order;
//   - Uint64ToDouble and Single.Double: TensorFlow's uniform double in
//     [0, 1) built from two 32-bit samples (SimplePhilox::RandDouble).
//
// The package is written from the published algorithm and the behaviour
// described in docs/spec/fractional_avg_pool.md §6; it is verified against the
// Random123 known-answer vectors.
package philox

import "math"

// Philox4x32 round and key-schedule constants (Random123).
const (
	mult0 = 0xD2511F53
	mult1 = 0xCD9E8D57
	weyl0 = 0x9E3779B9 // golden ratio
	weyl1 = 0xBB67AE85 // sqrt(3) - 1
)

// Rounds is the number of Philox rounds (Philox4x32-10).
const Rounds = 10

// Counter is Philox's 128-bit counter, least significant word first.
type Counter [4]uint32

// Key is Philox's 64-bit key, least significant word first.
type Key [2]uint32

// Block returns the Philox4x32-10 output block for counter ctr under key
// (the Random123 function philox4x32(ctr, key)).
func Block(ctr Counter, key Key) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	for r := 0; r < Rounds; r++ {
		if r > 0 {
			k0 += weyl0
			k1 += weyl1
		}
		p0 := uint64(mult0) * uint64(c0)
		p1 := uint64(mult1) * uint64(c2)
		hi0, lo0 := uint32(p0>>32), uint32(p0)
		hi1, lo1 := uint32(p1>>32), uint32(p1)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
	}
	return [4]uint32{c0, c1, c2, c3}
}

// Generator is a Philox4x32-10 stream: each call of Next returns the block
// of the current counter and then increments the counter. The zero value
// is the stream of key 0 from counter 0. Generators are values: copying
// one forks the stream.
type Generator struct {
	ctr Counter
	key Key
}

// New seeds a generator as TensorFlow's PhiloxRandom(seed, seed2) does:
// the key is seed (low word first), the counter's high 64 bits are seed2
// and its low 64 bits are 0. TensorFlow's int64 seed attributes are
// reinterpreted as uint64.
func New(seed, seed2 uint64) Generator {
	return Generator{
		key: Key{uint32(seed), uint32(seed >> 32)},
		ctr: Counter{0, 0, uint32(seed2), uint32(seed2 >> 32)},
	}
}

// FromState returns the generator at counter ctr under key.
func FromState(ctr Counter, key Key) Generator { return Generator{ctr: ctr, key: key} }

// Counter returns the generator's current counter.
func (g Generator) Counter() Counter { return g.ctr }

// Key returns the generator's key.
func (g Generator) Key() Key { return g.key }

// Next returns the block of the current counter and advances the counter
// by one.
func (g *Generator) Next() [4]uint32 {
	b := Block(g.ctr, g.key)
	g.Skip(1)
	return b
}

// Skip advances the counter by n blocks, as TensorFlow's
// PhiloxRandom::Skip: n is added to the low 64 bits of the counter, and a
// carry out of them increments the high 64 bits. (Like TensorFlow's, the
// carry out of the low word is folded into n's high word, so for n >=
// 2^64 - 2^32 a carry can be lost; no caller skips that far.)
func (g *Generator) Skip(n uint64) {
	lo := uint32(n)
	hi := uint32(n >> 32)
	g.ctr[0] += lo
	if g.ctr[0] < lo {
		hi++
	}
	g.ctr[1] += hi
	if g.ctr[1] < hi {
		g.ctr[2]++
		if g.ctr[2] == 0 {
			g.ctr[3]++
		}
	}
}

// Reserve128 returns a copy of the generator positioned at the current
// counter and advances g past n blocks (n 128-bit samples), as
// TensorFlow's GuardedPhiloxRandom::ReserveSamples128: the caller draws up
// to n blocks from the copy while g serves later reservations.
func (g *Generator) Reserve128(n uint64) Generator {
	c := *g
	g.Skip(n)
	return c
}

// Reserve32 reserves enough blocks for n 32-bit samples, ceil(n/4), as
// TensorFlow's GuardedPhiloxRandom::ReserveSamples32.
func (g *Generator) Reserve32(n uint64) Generator {
	return g.Reserve128((n + 3) / 4)
}

// Single hands out a generator's output one 32-bit word at a time, in
// block order (word 0, 1, 2, 3, then the next block), as TensorFlow's
// SingleSampleAdapter<PhiloxRandom>.
type Single struct {
	gen  Generator
	buf  [4]uint32
	used int
}

// NewSingle returns a single-sample reader of g's stream (g is copied).
func NewSingle(g Generator) *Single {
	return &Single{gen: g, used: 4}
}

// Uint32 returns the next 32-bit sample.
func (s *Single) Uint32() uint32 {
	if s.used == 4 {
		s.buf = s.gen.Next()
		s.used = 0
	}
	v := s.buf[s.used]
	s.used++
	return v
}

// Double returns a uniform double in [0, 1) built from the next two
// samples, as TensorFlow's SimplePhilox::RandDouble.
func (s *Single) Double() float64 {
	x0 := s.Uint32()
	x1 := s.Uint32()
	return Uint64ToDouble(x0, x1)
}

// Uint64ToDouble converts two 32-bit samples into a uniform double in
// [0, 1) as TensorFlow's random::Uint64ToDouble: the 52-bit mantissa is
// the low 20 bits of x0 followed by the 32 bits of x1, the exponent that
// of 1.0; the result is that number in [1, 2) minus 1.
func Uint64ToDouble(x0, x1 uint32) float64 {
	man := uint64(x0&0xFFFFF)<<32 | uint64(x1)
	return math.Float64frombits(1023<<52|man) - 1.0
}
