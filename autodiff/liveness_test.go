package autodiff_test

import (
	"errors"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
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

// chain applies relu, a multiplication by w, tanh and a multiplication by
// w, declaring the steps' values if declare, and returns the loss and the
// first step's output.
func chain(tp *autodiff.Tape, x, w autodiff.Value, declare bool) (loss, first autodiff.Value) {
	m := tp.Mark()
	h := x
	for i, f := range []func(autodiff.Value) autodiff.Value{
		autodiff.Relu,
		func(h autodiff.Value) autodiff.Value { return autodiff.Mul(h, w) },
		autodiff.Tanh,
		func(h autodiff.Value) autodiff.Value { return autodiff.Mul(h, w) },
	} {
		h = f(h)
		if i == 0 {
			first = h
		}
		if declare {
			m = tp.Intermediates(m, h)
		}
	}
	return autodiff.L2Loss(h), first
}

// TestBackwardReleases: on a recording tape, declared values that a
// recorded op saved live until Backward, which releases them after their
// last reader and gives the same gradients, to the bit, as without
// release; Backward consumes the recording (Grad after it fails with
// ErrReleased), Grad does not (it can be called again). The pass's own
// gradients are released, the returned ones are not.
func TestBackwardReleases(t *testing.T) {
	const n = 1 << 12
	grads := map[bool][]float32{}
	for _, declare := range []bool{false, true} {
		p, err := autodiff.NewParam("w", ramp(t, n, 1.0/n))
		if err != nil {
			t.Fatal(err)
		}
		tp := autodiff.NewTape()
		x := tp.Constant(ramp(t, n, 3.0/n))
		w := tp.Param(p)
		loss, first := chain(tp, x, w, declare)
		if err := first.Err(); err != nil {
			t.Fatalf("declare=%v: a declared value saved for Backward was released before it: %v", declare, err)
		}
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if declare {
			wantReleased(t, "a declared value after Backward", first)
		} else if err := first.Err(); err != nil {
			t.Fatalf("an undeclared value after Backward: %v", err)
		}
		if _, err := loss.Item(); err != nil {
			t.Fatalf("declare=%v: the loss after Backward: %v", declare, err)
		}
		grads[declare] = append([]float32(nil), p.Grad.Float32s()...)
		_, err = tp.Grad([]autodiff.Value{loss}, []autodiff.Value{w}, nil, autodiff.GradOpts{})
		if declare && !errors.Is(err, autodiff.ErrReleased) {
			t.Errorf("Grad after Backward on a consumed recording: %v, want ErrReleased", err)
		}
		if !declare && err != nil {
			t.Errorf("Grad after Backward without declared values: %v", err)
		}
		ms := tp.MemStats()
		if want := int64(3*n*4 + 4); declare && ms.InUse != want {
			// x, the chain's output (not declared: the chain's last),
			// the parameter's gradient and the loss: the chain's other
			// saved values and every other gradient went back.
			t.Errorf("after Backward %d bytes in use, want %d", ms.InUse, want)
		}
	}
	if !tensorx.SameShape([]int{len(grads[false])}, []int{len(grads[true])}) {
		t.Fatal("gradient sizes differ")
	}
	for i := range grads[false] {
		if math.Float32bits(grads[false][i]) != math.Float32bits(grads[true][i]) {
			t.Fatalf("gradient[%d]: %v with release, %v without", i, grads[true][i], grads[false][i])
		}
	}
}

// TestGradReleasesOwnGradients: Grad without CreateGraph releases the
// gradients it computes on the way (in use afterwards: the forward values
// and the results), keeps the forward values (Grad again gives the same
// result), and with CreateGraph releases nothing.
func TestGradReleasesOwnGradients(t *testing.T) {
	const n = 1 << 10
	for _, create := range []bool{false, true} {
		tp := autodiff.NewTape()
		x := tp.Watch(ramp(t, n, 1.0/n))
		y := autodiff.Tanh(autodiff.Mul(autodiff.Exp(x), autodiff.Sigmoid(x)))
		loss := autodiff.L2Loss(autodiff.Add(y, x))
		before := tp.MemStats().InUse
		g1, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: create})
		if err != nil {
			t.Fatal(err)
		}
		after := tp.MemStats().InUse
		if !create && after != before+n*4 {
			t.Errorf("Grad: %d bytes in use after, %d before; want the result's %d more", after, before, n*4)
		}
		if create && after <= before+n*4 {
			t.Errorf("Grad with CreateGraph released gradients: %d bytes in use after, %d before", after, before)
		}
		g2, err := tp.Grad([]autodiff.Value{loss}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: create})
		if err != nil {
			t.Fatalf("create=%v: Grad again: %v", create, err)
		}
		a, _ := g1[0].Float32s()
		b, err := g2[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("create=%v: second Grad differs at %d: %v, %v", create, i, a[i], b[i])
			}
		}
	}
}

func init() {
	// tapetest.GradIsY: x·y elementwise, whose gradient with respect to x
	// is y itself (a forward value; right for a ones upstream only), as a
	// gradient function may return one of its node's values.
	mul := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		for i := range out.Float32s() {
			out.Float32s()[i] = in[0].Float32s()[i] * in[1].Float32s()[i]
		}
		return kc.Results(out), nil
	}
	registry.MustRegister(&registry.OpDef{Name: "tapetest.GradIsY", Inputs: []registry.Arg{{Name: "x"}, {Name: "y"}}, Outputs: []registry.Arg{{Name: "z"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float32: mul}})
	registry.MustSetGradient("tapetest.GradIsY", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{n.Inputs()[1], nil}, nil
	})
}

// TestBackwardForwardValueAsGradient: a gradient function returns a
// declared forward value c as a gradient contribution, which the pass
// consumes before the last gradient function that reads c as an input has
// run: c must live until then.
func TestBackwardForwardValueAsGradient(t *testing.T) {
	p, err := autodiff.NewParam("p", ramp(t, 8, 0.25))
	if err != nil {
		t.Fatal(err)
	}
	tp := autodiff.NewTape()
	m := tp.Mark()
	pv := tp.Param(p)
	c := autodiff.Neg(pv)
	a := autodiff.Mul(c, pv)                        // reads c (the last reader in the pass)
	x := autodiff.Relu(pv)                          // consumes the gradient c below
	y := tp.Apply("tapetest.GradIsY", nil, x, c)[0] // returns c as x's gradient
	loss := autodiff.Add(autodiff.Sum(y, []int{0}, false), autodiff.Sum(a, []int{0}, false))
	tp.Intermediates(m, loss)
	if err := tp.Backward(loss); err != nil {
		t.Fatalf("Backward: %v", err)
	}
	// d/dp of sum(relu(p)·(-p)) with the op's gradient (c for x, none for
	// c) plus sum(-p·p): c·relu'(p) - 2p.
	for i, g := range p.Grad.Float32s() {
		v := 0.25 * float32(i-4)
		want := -2 * v
		if v > 0 {
			want += -v
		}
		if g != want {
			t.Fatalf("grad[%d] = %v, want %v", i, g, want)
		}
	}
}
