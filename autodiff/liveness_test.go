package autodiff_test

import (
	"errors"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// ramp returns a float32 tensor of n elements -n/2, ..., n/2-1, scaled.
func ramp(t *testing.T, n int, scale float32) *tensor.Dense {
	t.Helper()
	s := make([]float32, n)
	for i := range s {
		s[i] = scale * float32(i-n/2)
	}
	d, err := tensorx.New([]int{n}, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// wantReleased checks that v reports ErrReleased from every read.
func wantReleased(t *testing.T, name string, v autodiff.Value) {
	t.Helper()
	if err := v.Err(); !errors.Is(err, autodiff.ErrReleased) || !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Errorf("%s: Err %v, want ErrReleased (an ErrInvalidValue)", name, err)
	}
	if _, err := v.Data(); !errors.Is(err, autodiff.ErrReleased) {
		t.Errorf("%s: Data error %v, want ErrReleased", name, err)
	}
	if _, err := v.Float32s(); !errors.Is(err, autodiff.ErrReleased) {
		t.Errorf("%s: Float32s error %v, want ErrReleased", name, err)
	}
	if v.Shape() != nil {
		t.Errorf("%s: released value has shape %v", name, v.Shape())
	}
}

// TestIntermediatesNoGrad: on a NoGrad tape the values a chain of steps
// declares are released at once, the buffers serve the next steps (the
// peak holds about two steps' values, not all of them), and using a
// released value is an ErrReleased error, also as an op's input, where it
// becomes the tape's error.
func TestIntermediatesNoGrad(t *testing.T) {
	const n, steps = 1 << 16, 20
	tp := autodiff.NewTape(autodiff.NoGrad())
	x := tp.Constant(ramp(t, n, 1))
	m := tp.Mark()
	y := x
	var first, inner autodiff.Value
	for i := range steps {
		inner = autodiff.Relu(y)
		y = autodiff.Neg(inner)
		if i == 0 {
			first = y
		}
		m = tp.Intermediates(m, y)
		wantReleased(t, "a step's temporary", inner)
	}
	wantReleased(t, "the first step's output", first)
	if err := x.Err(); err != nil {
		t.Fatalf("the input (before the mark) was released: %v", err)
	}
	got, err := y.Float32s()
	if err != nil {
		t.Fatalf("the last output: %v", err)
	}
	for i, v := range got {
		// relu then neg: after the first step every element is <= 0, so
		// each later step gives 0 (-0 for the first step's negatives).
		if v != 0 {
			t.Fatalf("output[%d] = %v, want 0", i, v)
		}
	}
	ms := tp.MemStats()
	bytes := int64(n * 4)
	if ms.PeakInUse > 4*bytes || ms.Pooled > 4*bytes {
		t.Errorf("%d steps of %d-byte values: peak in use %d, pooled %d bytes, want at most 4 values' worth", steps, bytes, ms.PeakInUse, ms.Pooled)
	}
	if ms.InUse != 2*bytes {
		t.Errorf("in use after the chain: %d bytes, want the input and the output, %d", ms.InUse, 2*bytes)
	}
	// A released value as an op's input: the tape's error.
	autodiff.Relu(first)
	if err := tp.Err(); !errors.Is(err, autodiff.ErrReleased) {
		t.Fatalf("op on a released value: tape error %v", err)
	}
	// Reset makes everything valid again (and invalidates the old handles
	// with their generation).
	tp.Reset()
	if err := first.Err(); err == nil || errors.Is(err, autodiff.ErrReleased) {
		t.Errorf("after Reset, an old released handle reports %v, want the use-after-Reset error", err)
	}
	if ms := tp.MemStats(); ms.InUse != 0 || ms.PeakInUse != 0 {
		t.Errorf("after Reset: %+v", ms)
	}
}

// TestIntermediatesKeepsOutput: a step returning its input (an identity
// layer) keeps it; Keep exempts a value; parameter values and watched
// leaves are never declared; a mark from before Reset declares nothing.
func TestIntermediatesKeepsOutput(t *testing.T) {
	tp := autodiff.NewTape(autodiff.NoGrad())
	x := tp.Constant(ramp(t, 8, 1))
	m := tp.Mark()
	a := autodiff.Relu(x)
	m = tp.Intermediates(m, a)
	m = tp.Intermediates(m, a) // an identity step: a is still the output
	if err := a.Err(); err != nil {
		t.Fatalf("an output kept by an identity step was released: %v", err)
	}
	kept := autodiff.Neg(a)
	tp.Keep(kept)
	p, err := autodiff.NewParam("w", ramp(t, 8, 1))
	if err != nil {
		t.Fatal(err)
	}
	pv := tp.Param(p)
	w := tp.Watch(ramp(t, 8, 2))
	b := autodiff.Add(kept, autodiff.Add(pv, w))
	tp.Intermediates(m, b)
	wantReleased(t, "the previous output", a)
	for name, v := range map[string]autodiff.Value{"kept": kept, "parameter": pv, "watched": w, "output": b} {
		if err := v.Err(); err != nil {
			t.Errorf("%s value released: %v", name, err)
		}
	}
	if tp.Param(p) != pv {
		t.Error("binding the parameter again gave a new value")
	}
	old := tp.Mark()
	tp.Reset()
	c := autodiff.Relu(tp.Constant(ramp(t, 8, 1)))
	tp.Intermediates(old, autodiff.Value{})
	if err := c.Err(); err != nil {
		t.Errorf("a mark from before Reset released a value: %v", err)
	}
}

// TestFree: Free releases a value at once (if no recorded op saved it);
// parameter values and watched leaves stay.
func TestFree(t *testing.T) {
	tp := autodiff.NewTape(autodiff.NoGrad())
	a := autodiff.Relu(tp.Constant(ramp(t, 8, 1)))
	before := tp.MemStats().InUse
	tp.Free(a)
	wantReleased(t, "freed", a)
	if got := tp.MemStats().InUse; got != before-8*4 {
		t.Errorf("in use %d bytes after Free, want %d", got, before-8*4)
	}
	tp.Free(a) // twice: nothing
	tp.Keep(a) // on a released value: nothing
	wantReleased(t, "freed", a)
	p, err := autodiff.NewParam("w", ramp(t, 4, 1))
	if err != nil {
		t.Fatal(err)
	}
	pv := tp.Param(p)
	tp.Free(pv)
	if err := pv.Err(); err != nil {
		t.Errorf("freed parameter value: %v", err)
	}
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
}
