package testutil

import (
	"fmt"
	"testing"
)

// FracPoolNum is the set of element types of the fractional pooling ops.
type FracPoolNum interface {
	float32 | float64 | int32 | int64
}

// FracPoolCell is the naive fractional pooling reference's cell
// (spec/fractional_pool.md §4): the inclusive input range of cell i of seq
// over an axis of size n.
func FracPoolCell(seq []int64, i, n int, overlapping bool) (int, int) {
	lo, hi := int(seq[i]), int(seq[i+1])
	if !overlapping {
		hi--
	}
	return lo, min(hi, n-1)
}

// FracPoolAvg is average pooling of the NHWC input x [n,h,w,c] over the
// row and column sequences in T with TensorFlow's order: per output
// element a T accumulator from 0, rows outer, columns inner, then a
// division by the count in T.
func FracPoolAvg[T FracPoolNum](x []T, n, h, w, c int, rows, cols []int64, overlapping bool) []T {
	oh, ow := len(rows)-1, len(cols)-1
	out := make([]T, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := FracPoolCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := FracPoolCell(cols, j, w, overlapping)
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

// FracPoolAvgGrad is FractionalAvgPoolGrad of dy [nd,oh,ow,c] for an input
// [n,h,w,c]: float64 accumulation in TensorFlow's loop order, one
// conversion to T at the end; images nd.. get zeros.
func FracPoolAvgGrad[T FracPoolNum](dy []T, n, nd, h, w, c int, rows, cols []int64, overlapping bool) []T {
	oh, ow := len(rows)-1, len(cols)-1
	acc := make([]float64, n*h*w*c)
	for b := 0; b < nd; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := FracPoolCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := FracPoolCell(cols, j, w, overlapping)
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

// FracPoolArgmax returns, per output element, the flat input index of the
// first maximum of its cell (TensorFlow's FractionalMaxPoolGrad scan).
func FracPoolArgmax[T FracPoolNum](x []T, n, h, w, c int, rows, cols []int64, overlapping bool) []int {
	oh, ow := len(rows)-1, len(cols)-1
	am := make([]int, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for a := 0; a < oh; a++ {
			r0, r1 := FracPoolCell(rows, a, h, overlapping)
			for j := 0; j < ow; j++ {
				c0, c1 := FracPoolCell(cols, j, w, overlapping)
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

// FracPoolSeqProps checks the properties of a pooling sequence of an axis
// of in elements into out cells: out+1 entries from 0 to in, every step
// in/out or in/out+1 long, in%out long steps.
func FracPoolSeqProps(seq []int64, in, out int) error {
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

// SameBits fails the test unless got and want have the same length and
// the same bits in every element.
func SameBits[T FracPoolNum](t testing.TB, name string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	if i := BitDiff(got, want, false); i >= 0 {
		t.Fatalf("%s: element %d = %v, want %v", name, i, got[i], want[i])
	}
}

// FracPoolGridCase is one configuration of the fractional pooling ops'
// test grid: the NHWC input shape and the attrs pooling_ratio,
// pseudo_random, overlapping, and deterministic seeds Seed and 3·Seed.
type FracPoolGridCase struct {
	Shape                     []int
	Ratio                     []float32
	PseudoRandom, Overlapping bool
	Seed                      int64
}

// FracPoolGrid is the fractional pooling ops' test grid: five shapes by
// five ratios (where the input is at least the ratio), both modes, both
// cell kinds, each with its own seed.
func FracPoolGrid() []FracPoolGridCase {
	var cs []FracPoolGridCase
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
					cs = append(cs, FracPoolGridCase{Shape: s, Ratio: r, PseudoRandom: pseudo, Overlapping: ov, Seed: seed})
				}
			}
		}
	}
	return cs
}
