package bnkern

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"unsafe"

	"github.com/tapegrad/tapegrad/internal/cpu"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The assembly kernels must match the Go loops bit for bit (same
// operations, same order); the Go loops are checked against float64
// evaluations of the contracts. Operands are windows of larger buffers
// whose surroundings hold NaN sentinels, so a write outside the contract's
// elements or a read of the sentinels shows up.

// modes returns the kernel modes to test: the Go loops (tier go), and the
// block kernels of every tier this CPU has (cpu.Has, whatever
// TAPEGRAD_ISA says; in a noasm build their Go twins, as tier avx2).
func modes() []cpu.ISA {
	ms := []cpu.ISA{cpu.Go}
	for _, isa := range []cpu.ISA{cpu.AVX2, cpu.AVX512} {
		if cpu.Has(isa) || isa == cpu.AVX2 && cpu.Max() == cpu.Go {
			ms = append(ms, isa)
		}
	}
	return ms
}

// withMode runs fn with the block kernels of tier isa (the Go loops for
// cpu.Go).
func withMode(isa cpu.ISA, fn func()) {
	old := tier
	tier = isa
	defer func() { tier = old }()
	testutil.WithFlag(&useAsm, isa > cpu.Go, fn)
}

// TestTiers logs which tiers the kernel tests run.
func TestTiers(t *testing.T) {
	ms := modes()
	for _, isa := range cpu.ISAs {
		switch {
		case slices.Contains(ms, isa) && cpu.Has(isa):
			t.Logf("tier %-6v: run", isa)
		case slices.Contains(ms, isa):
			t.Logf("tier %-6v: run on the Go twins of its kernels (noasm build or not amd64)", isa)
		default:
			t.Logf("tier %-6v: NOT RUN: this CPU or build lacks it (cpu.Max() = %v)", isa, cpu.Max())
		}
	}
	if len(ms) < 2 {
		t.Errorf("only the Go loops run: %v", ms)
	}
}

const guard = 40 // sentinel elements on each side of an operand

// operand returns a slice of n elements inside a NaN-guarded buffer,
// starting at a 32-byte boundary plus skew elements, filled by gen (or
// NaN if gen is nil), and the whole buffer.
func operand[T Float](n, skew int, gen func(i int) float64) (s, all []T) {
	all = make([]T, n+2*guard+8)
	for i := range all {
		all[i] = T(math.NaN())
	}
	base := guard
	for uintptr(unsafe.Pointer(&all[base]))%32 != 0 {
		base++
	}
	base += skew
	s = all[base : base+n : base+n]
	if gen != nil {
		for i := range s {
			s[i] = T(gen(i))
		}
	}
	return s, all
}

// checkGuards fails if a sentinel around s (inside all) was overwritten.
func checkGuards[T Float](t *testing.T, what string, s, all []T) {
	t.Helper()
	off := int((uintptr(unsafe.Pointer(unsafe.SliceData(s))) - uintptr(unsafe.Pointer(&all[0]))) / unsafe.Sizeof(all[0]))
	for i, v := range all {
		if (i < off || i >= off+len(s)) && !math.IsNaN(float64(v)) {
			t.Fatalf("%s: element %d outside the operand written (%v)", what, i-off, v)
		}
	}
}

// sameBits reports the first index where a and b differ in their bits.
func sameBits[T Float](a, b []T) (int, bool) {
	for i := range a {
		if a[i] != b[i] && !(a[i] != a[i] && b[i] != b[i]) {
			return i, false
		}
		if math.Signbit(float64(a[i])) != math.Signbit(float64(b[i])) {
			return i, false
		}
	}
	return -1, true
}

var shapes = []struct{ rows, c int }{
	{1, 8}, {3, 8}, {4, 8}, {5, 8}, {7, 16}, {12, 24}, {9, 9}, {6, 13}, {17, 15},
	{33, 64}, {10, 67}, {4, 3}, {7, 1}, {5, 5}, {0, 8}, {8, 72}, {11, 31},
}

func gen(r *rand.Rand, mean, spread float64) func(int) float64 {
	return func(int) float64 { return mean + spread*r.NormFloat64() }
}

func TestReducingKernels(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, sh := range shapes {
		for _, skew := range []int{0, 1} {
			n, c := sh.rows*sh.c, sh.c
			x, _ := operand[float32](n, skew, gen(r, 3, 2))
			dy, _ := operand[float32](n, 0, gen(r, 0, 1))
			k, _ := operand[float32](c, skew, gen(r, 3, 1))
			init1, init2 := make([]float64, c), make([]float64, c)
			for i := range init1 {
				init1[i], init2[i] = r.NormFloat64(), 5+r.Float64()
			}
			name := fmt.Sprintf("rows %d c %d skew %d", sh.rows, c, skew)
			var ref [2][]float64
			for _, asm := range modes() {
				for _, kern := range []string{"Stats", "GradSums", "GradSumsAVX2"} {
					p1, all1 := operand[float64](c, 0, func(i int) float64 { return init1[i] })
					p2, all2 := operand[float64](c, 0, func(i int) float64 { return init2[i] })
					withMode(asm, func() {
						switch kern {
						case "Stats":
							statsRows(x, c, k, p1, p2)
						case "GradSums":
							gradSumsRows(dy, x, c, k, p1, p2, tierKernels)
						default:
							gradSumsRows(dy, x, c, k, p1, p2, avx2Kernels)
						}
					})
					checkGuards(t, name+" "+kern, p1, all1)
					checkGuards(t, name+" "+kern, p2, all2)
					// float64 evaluation of the contract.
					for ch := 0; ch < c; ch++ {
						var s1, s2, mag1, mag2 float64
						for row := 0; row < sh.rows; row++ {
							v := float64(x[row*c+ch])
							var d, q float64
							if kern == "Stats" {
								d = v - float64(k[ch])
								q = d * d
							} else {
								d = float64(dy[row*c+ch])
								q = d * (v - float64(k[ch]))
							}
							s1, s2 = s1+d, s2+q
							mag1, mag2 = mag1+math.Abs(d), mag2+math.Abs(q)
						}
						s1, s2 = s1+init1[ch], s2+init2[ch]
						tol1 := 1e-6*(mag1+math.Abs(init1[ch])) + 1e-12
						tol2 := 1e-6*(mag2+math.Abs(init2[ch])) + 1e-12
						if math.Abs(p1[ch]-s1) > tol1 || math.Abs(p2[ch]-s2) > tol2 {
							t.Fatalf("%s %s asm=%v channel %d: got %v %v, want %v %v", name, kern, asm, ch, p1[ch], p2[ch], s1, s2)
						}
					}
					if kern != "Stats" {
						continue
					}
					if ref[0] == nil {
						ref = [2][]float64{append([]float64(nil), p1...), append([]float64(nil), p2...)}
					} else if i, ok := sameBits(ref[0], p1); !ok {
						t.Fatalf("%s Stats: asm sum %d = %v, Go %v", name, i, p1[i], ref[0][i])
					} else if i, ok := sameBits(ref[1], p2); !ok {
						t.Fatalf("%s Stats: asm square sum %d = %v, Go %v", name, i, p2[i], ref[1][i])
					}
				}
			}
			// GradSums asm (both variants) vs Go, exactly.
			var gref [2][]float64
			for _, asm := range modes() {
				for _, v := range []variant{tierKernels, avx2Kernels} {
					p1, p2 := append([]float64(nil), init1...), append([]float64(nil), init2...)
					withMode(asm, func() { gradSumsRows(dy, x, c, k, p1, p2, v) })
					if gref[0] == nil {
						gref = [2][]float64{p1, p2}
						continue
					}
					for j, p := range [][]float64{p1, p2} {
						if i, ok := sameBits(gref[j], p); !ok {
							t.Fatalf("%s GradSums output %d (variant %d): asm %d = %v, Go %v", name, j, v, i, p[i], gref[j][i])
						}
					}
				}
			}
		}
	}
}

func TestStoringKernels(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, sh := range shapes {
		for _, skew := range []int{0, 1} {
			for _, stream := range []variant{tierKernels, avx2Kernels, streamKernels} {
				n, c := sh.rows*sh.c, sh.c
				x, _ := operand[float32](n, skew, gen(r, 3, 2))
				dy, _ := operand[float32](n, 1-skew, gen(r, 0, 1))
				co := make([][]float32, 4)
				for i := range co {
					co[i], _ = operand[float32](c, skew, gen(r, 1, 1))
				}
				name := fmt.Sprintf("rows %d c %d skew %d variant %d", sh.rows, c, skew, stream)
				type kern struct {
					name string
					run  func(out []float32)
					want func(i, ch int) float64
				}
				kerns := []kern{
					{"Norm", func(y []float32) { normRows(x, y, c, co[0], co[1], co[2], stream) },
						func(i, ch int) float64 {
							return (float64(x[i])-float64(co[0][ch]))*float64(co[1][ch]) + float64(co[2][ch])
						}},
					{"GradDx", func(dx []float32) { gradDxRows(dy, x, dx, c, co[0], co[1], co[2], co[3], stream) },
						func(i, ch int) float64 {
							return float64(co[0][ch])*(float64(dy[i])-float64(co[1][ch])) -
								float64(co[2][ch])*(float64(x[i])-float64(co[3][ch]))
						}},
					{"Scale", func(dx []float32) { scaleRows(dy, dx, c, co[0]) },
						func(i, ch int) float64 { return float64(dy[i]) * float64(co[0][ch]) }},
				}
				for _, kn := range kerns {
					var ref []float32
					for _, asm := range modes() {
						out, all := operand[float32](n, skew, nil)
						withMode(asm, func() { kn.run(out) })
						checkGuards(t, name+" "+kn.name, out, all)
						for i, v := range out {
							w := kn.want(i, i%c)
							if math.Abs(float64(v)-w) > 1e-5*(1+math.Abs(w)) {
								t.Fatalf("%s %s asm=%v: element %d = %v, want %v", name, kn.name, asm, i, v, w)
							}
						}
						if ref == nil {
							ref = append([]float32{}, out...)
						} else if i, ok := sameBits(ref, out); !ok {
							t.Fatalf("%s %s: asm element %d = %v, Go %v", name, kn.name, i, out[i], ref[i])
						}
					}
				}
			}
		}
	}
}

// TestFloat64 runs the generic loops on float64 against the contracts.
func TestFloat64(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	const rows, c = 7, 5
	x, _ := operand[float64](rows*c, 0, gen(r, 1, 1))
	k, _ := operand[float64](c, 0, gen(r, 1, 1))
	p1, p2 := make([]float64, c), make([]float64, c)
	statsRows(x, c, k, p1, p2)
	y := make([]float64, rows*c)
	normRows(x, y, c, k, k, k, streamKernels)
	for ch := 0; ch < c; ch++ {
		var s1, s2 float64
		for row := 0; row < rows; row++ {
			d := x[row*c+ch] - k[ch]
			s1, s2 = s1+d, s2+d*d
			if w := d*k[ch] + k[ch]; math.Abs(y[row*c+ch]-w) > 1e-15*(1+math.Abs(w)) {
				t.Fatalf("Norm float64 (%d, %d) = %v, want %v", row, ch, y[row*c+ch], w)
			}
		}
		if math.Abs(p1[ch]-s1) > 1e-13 || math.Abs(p2[ch]-s2) > 1e-13 {
			t.Fatalf("Stats float64 channel %d = %v %v, want %v %v", ch, p1[ch], p2[ch], s1, s2)
		}
	}
}

func TestBadArgumentsPanic(t *testing.T) {
	x := make([]float32, 10)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"partial row", func() { statsRows(x, 3, make([]float32, 3), make([]float64, 3), make([]float64, 3)) }},
		{"short shift", func() { statsRows(x, 5, make([]float32, 4), make([]float64, 5), make([]float64, 5)) }},
		{"short output", func() { normRows(x, make([]float32, 9), 5, x, x, x, tierKernels) }},
		{"short x", func() { gradDxRows(x, x[:5], x, 5, x, x, x, x, tierKernels) }},
		{"zero channels", func() { scaleRows(x, x, 0, x) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

func TestNoAllocations(t *testing.T) {
	const rows, c = 64, 20
	x := make([]float32, rows*c)
	y := make([]float32, rows*c)
	k := make([]float32, c)
	p1, p2 := make([]float64, c), make([]float64, c)
	if n := testing.AllocsPerRun(20, func() {
		statsRows(x, c, k, p1, p2)
		gradSumsRows(x, x, c, k, p1, p2, tierKernels)
		normRows(x, y, c, k, k, k, streamKernels)
		gradDxRows(x, x, y, c, k, k, k, k, streamKernels)
		scaleRows(x, y, c, k)
	}); n != 0 {
		t.Fatalf("%v allocations per call", n)
	}
}
