package autodiff

import (
	"testing"

	"gorgonia.org/tensor"
)

func mustAlloc(t *testing.T, a *arena, dt tensor.Dtype, shape ...int) *tensor.Dense {
	t.Helper()
	d, err := a.Alloc(dt, shape, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Shape(); len(got) != len(shape) {
		t.Fatalf("rank %d, want %d", len(got), len(shape))
	}
	return d
}

// blockOf returns the block behind a live buffer.
func blockOf(t *testing.T, a *arena, d *tensor.Dense) *block {
	t.Helper()
	b, ok := a.live[d]
	if !ok {
		t.Fatal("buffer not live")
	}
	return b
}

// TestArenaReusesAcrossShapes: a released block serves a request of
// another shape (the smallest block large enough, not more than maxWaste
// times too large), with a header of exactly the requested size; a small
// request does not take a much larger block.
func TestArenaReusesAcrossShapes(t *testing.T) {
	var a arena
	big := mustAlloc(t, &a, tensor.Float32, 4, 25) // 100
	mid := mustAlloc(t, &a, tensor.Float32, 60)
	bb, mb := blockOf(t, &a, big), blockOf(t, &a, mid)
	a.Release(big)
	a.Release(mid)
	x := mustAlloc(t, &a, tensor.Float32, 5, 10) // 50: mid (60) fits best
	if blockOf(t, &a, x) != mb || len(x.Float32s()) != 50 {
		t.Fatalf("a 50-element request got block of %d, %d elements", blockOf(t, &a, x).cap, len(x.Float32s()))
	}
	y := mustAlloc(t, &a, tensor.Float32, 2, 2, 20) // 80: big
	if blockOf(t, &a, y) != bb || len(y.Float32s()) != 80 {
		t.Fatal("an 80-element request did not get the 100-element block")
	}
	a.Release(y)
	z := mustAlloc(t, &a, tensor.Float32, 3) // 100 > 4·3: a new block
	if blockOf(t, &a, z) == bb {
		t.Fatal("a 3-element request took a 100-element block")
	}
	w := mustAlloc(t, &a, tensor.Float64, 10) // other dtype: a new block
	if blockOf(t, &a, w) == bb {
		t.Fatal("a float64 request took a float32 block")
	}
	if want := int64((100+60+3)*4 + 10*8); a.pooled != want {
		t.Fatalf("pooled %d bytes, want %d", a.pooled, want)
	}
	if want, peak := int64((60+3)*4+10*8), int64((100+60)*4); a.inUse != want || a.peak != peak {
		t.Fatalf("in use %d bytes, peak %d; want %d and %d", a.inUse, a.peak, want, peak)
	}
}

// TestArenaEvictsOutgrownBlocks: when no free block is large enough, the
// largest smaller free one makes way for the new one (unless it is far
// smaller, or small: under minEvict bytes), so a pool does not keep large
// blocks that no request of its steps fits.
func TestArenaEvictsOutgrownBlocks(t *testing.T) {
	const k = minEvict / 4 // float32 elements of a minEvict block
	var a arena
	s := mustAlloc(t, &a, tensor.Float32, k)
	small := mustAlloc(t, &a, tensor.Float32, k/2) // under minEvict bytes
	tiny := mustAlloc(t, &a, tensor.Float32, 2)
	a.Release(s)
	a.Release(small)
	a.Release(tiny)
	l := mustAlloc(t, &a, tensor.Float32, 2*k)
	if blockOf(t, &a, l).cap != 2*k {
		t.Fatal("no new block")
	}
	if want := int64((2*k + k/2 + 2) * 4); a.pooled != want {
		t.Fatalf("pooled %d bytes, want %d (the %d-element block evicted, the smaller ones kept)", a.pooled, want, k)
	}
	if len(a.free[tensor.Float32]) != 2 || len(a.all[tensor.Float32]) != 3 {
		t.Fatalf("%d free, %d blocks", len(a.free[tensor.Float32]), len(a.all[tensor.Float32]))
	}
	m := mustAlloc(t, &a, tensor.Float32, k) // small (k/2) is under minEvict: kept
	if blockOf(t, &a, m).cap != k || len(a.all[tensor.Float32]) != 4 {
		t.Fatalf("a %d-element request: block of %d, %d blocks", k, blockOf(t, &a, m).cap, len(a.all[tensor.Float32]))
	}
}

// TestArenaStepsRepeatHeaders: steps that make the same requests get the
// same headers back after recycle (nothing allocated), whatever shapes
// share a block; zeroed requests are zero.
func TestArenaStepsRepeatHeaders(t *testing.T) {
	var a arena
	step := func() []*tensor.Dense {
		x := mustAlloc(t, &a, tensor.Float32, 8, 8)
		y := mustAlloc(t, &a, tensor.Float32, 64)
		a.Release(x)
		z := mustAlloc(t, &a, tensor.Float32, 4, 15) // x's block, another shape
		for i := range z.Float32s() {
			z.Float32s()[i] = 3
		}
		a.Release(z)
		u, err := a.Alloc(tensor.Float32, []int{2, 30}, true) // zeroed, same block
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range u.Float32s() {
			if v != 0 {
				t.Fatalf("zeroed buffer [%d] = %v", i, v)
			}
		}
		return []*tensor.Dense{x, y, z, u}
	}
	first := step()
	a.recycle()
	if a.inUse != 0 {
		t.Fatalf("in use %d after recycle", a.inUse)
	}
	second := step()
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("request %d got a new header", i)
		}
	}
	a.recycle()
	if n := testing.AllocsPerRun(20, func() { step(); a.recycle() }); n > 1 { // the result slice
		t.Fatalf("a repeated step allocates %v objects", n)
	}
}
