package autodiff_test

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// gradreadytest.Probe is the identity; its gradient (the identity too)
// first calls probeHook, so a test sees what happened before the backward
// pass reached it.
var probeHook func()

func init() {
	ident := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		copy(out.Float64s(), in[0].Float64s())
		return []*tensor.Dense{out}, nil
	}
	one := []registry.Arg{{Name: "x"}}
	registry.MustRegister(&registry.OpDef{Name: "gradreadytest.Probe", Inputs: one, Outputs: one,
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: ident}})
	registry.MustSetGradient("gradreadytest.Probe", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		if probeHook != nil {
			probeHook()
		}
		return []registry.Value{e.Apply("gradreadytest.Probe", nil, dy[0])[0]}, nil
	})
}

func randParam(t *testing.T, r *rand.Rand, name string, shape ...int) *autodiff.Param {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = r.NormFloat64()
	}
	d, err := tensorx.New(shape, xs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := autodiff.NewParam(name, d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOnGradReady: Backward reports each trainable parameter once, with the
// gradient it then adds to Grad, as soon as no later op can add to it:
// w3, w2, w1 (w1 also feeds a later L2Loss, summed in first) before the
// backward pass reaches the probe between w0 and w1, then w0, and the
// unused w4 last with zeros; the frozen parameter never. Grad does not call the
// hook, and the gradients are bit-identical to a pass without it.
func TestOnGradReady(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	w0, w1, w2, w3 := randParam(t, r, "w0", 3, 3), randParam(t, r, "w1", 3, 4), randParam(t, r, "w2", 4, 4), randParam(t, r, "w3", 4, 2)
	w4, frozen := randParam(t, r, "w4", 2), randParam(t, r, "frozen", 2, 3)
	frozen.Trainable = false
	xd, err := tensorx.New([]int{2, 3}, []float64{0.1, -0.2, 0.3, 0.4, 0.5, -0.6})
	if err != nil {
		t.Fatal(err)
	}
	var (
		order   []string
		got     = map[string][]float64{}
		atProbe []string
	)
	probeHook = func() { atProbe = slices.Clone(order) }
	defer func() { probeHook = nil }()
	hook := func(p *autodiff.Param, g *tensor.Dense) {
		order = append(order, p.Name)
		got[p.Name] = slices.Clone(g.Float64s())
	}
	pass := func(tape *autodiff.Tape) autodiff.Value {
		tape.Reset()
		tape.Param(w4) // bound, unused
		x := autodiff.MatMul(autodiff.Add(tape.Constant(xd), tape.Param(frozen)), tape.Param(w0), forward.MatMulAttrs{})
		x = tape.Apply("gradreadytest.Probe", nil, x)[0]
		h := autodiff.Tanh(autodiff.MatMul(x, tape.Param(w1), forward.MatMulAttrs{}))
		h = autodiff.Tanh(autodiff.MatMul(h, tape.Param(w2), forward.MatMulAttrs{}))
		h = autodiff.MatMul(h, tape.Param(w3), forward.MatMulAttrs{})
		return autodiff.Add(autodiff.Sum(h, nil, false), autodiff.L2Loss(tape.Param(w1)))
	}
	params := []*autodiff.Param{w0, w1, w2, w3, w4, frozen}
	grads := func() map[string][]float64 {
		m := map[string][]float64{}
		for _, p := range params {
			if p.Grad != nil {
				m[p.Name] = slices.Clone(p.Grad.Float64s())
				p.Grad = nil
			}
		}
		return m
	}

	plain := autodiff.NewTape()
	if err := plain.Backward(pass(plain)); err != nil {
		t.Fatal(err)
	}
	want := grads()

	tape := autodiff.NewTape()
	tape.OnGradReady(hook)
	for step := range 2 { // the scratch is reused on the second pass
		order, atProbe, got = nil, nil, map[string][]float64{}
		if err := tape.Backward(pass(tape)); err != nil {
			t.Fatal(err)
		}
		if w := []string{"w3", "w2", "w1", "w0", "w4"}; !slices.Equal(order, w) {
			t.Errorf("step %d: hook order %v, want %v", step, order, w)
		}
		if w := []string{"w3", "w2", "w1"}; !slices.Equal(atProbe, w) {
			t.Errorf("step %d: reported before the backward pass reached the input: %v, want %v", step, atProbe, w)
		}
		have := grads()
		for _, name := range []string{"w0", "w1", "w2", "w3", "w4"} {
			if !slices.Equal(have[name], want[name]) {
				t.Errorf("step %d: %s: Grad %v with the hook, %v without", step, name, have[name], want[name])
			}
			if !slices.Equal(got[name], want[name]) {
				t.Errorf("step %d: %s: hook saw %v, Backward added %v", step, name, got[name], want[name])
			}
		}
		if _, ok := have["frozen"]; ok {
			t.Errorf("step %d: frozen parameter got a gradient", step)
		}
	}

	// Grad never calls the hook; OnGradReady(nil) removes it.
	order = nil
	y := pass(tape)
	if _, err := tape.Grad([]autodiff.Value{y}, []autodiff.Value{tape.Param(w1)}, nil, autodiff.GradOpts{}); err != nil {
		t.Fatal(err)
	}
	tape.OnGradReady(nil)
	if err := tape.Backward(pass(tape)); err != nil {
		t.Fatal(err)
	}
	if len(order) != 0 {
		t.Errorf("hook called by Grad or after removal: %v", order)
	}
}

// TestOnGradReadyFailedPass: a pass that fails calls no hook for the
// parameters it did not finish, and a later pass reports all of them.
func TestOnGradReadyFailedPass(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	w1, w2 := randParam(t, r, "w1", 3, 3), randParam(t, r, "w2", 3, 3)
	xd, err := tensorx.New([]int{1, 3}, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	tape := autodiff.NewTape()
	tape.OnGradReady(func(p *autodiff.Param, _ *tensor.Dense) { order = append(order, p.Name) })
	pass := func(bad bool) error {
		tape.Reset()
		h := autodiff.MatMul(tape.Constant(xd), tape.Param(w1), forward.MatMulAttrs{})
		if bad {
			h = tape.Apply("tapetest.NoGrad", nil, h)[0]
		}
		h = autodiff.MatMul(h, tape.Param(w2), forward.MatMulAttrs{})
		return tape.Backward(autodiff.Sum(h, nil, false))
	}
	if err := pass(true); err == nil {
		t.Fatal("Backward through an op without gradient succeeded")
	}
	if !slices.Equal(order, []string{"w2"}) {
		t.Errorf("failed pass reported %v, want [w2] (w1's gradient was never finished)", order)
	}
	if w1.Grad != nil || w2.Grad != nil {
		t.Errorf("failed pass changed Grad")
	}
	order = nil
	if err := pass(false); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"w2", "w1"}) {
		t.Errorf("hook order %v, want [w2 w1]", order)
	}
}

// ExampleTape_OnGradReady shows the order in which a backward pass
// finishes the gradients of a two-layer network: the last layer's first.
func ExampleTape_OnGradReady() {
	newParam := func(name string, xs ...float64) *autodiff.Param {
		d, _ := tensorx.New([]int{2, 2}, xs)
		p, _ := autodiff.NewParam(name, d)
		return p
	}
	w1, w2 := newParam("layer1", 1, 2, 3, 4), newParam("layer2", 0.5, -1, 1, 0.5)
	x, _ := tensorx.New([]int{1, 2}, []float64{1, 1})

	tape := autodiff.NewTape()
	tape.OnGradReady(func(p *autodiff.Param, g *tensor.Dense) {
		fmt.Println(p.Name, "gradient ready:", g.Float64s())
	})
	h := autodiff.Relu(autodiff.MatMul(tape.Constant(x), tape.Param(w1), forward.MatMulAttrs{}))
	y := autodiff.MatMul(h, tape.Param(w2), forward.MatMulAttrs{})
	if err := tape.Backward(autodiff.Sum(y, nil, false)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// layer2 gradient ready: [4 4 6 6]
	// layer1 gradient ready: [-0.5 1.5 -0.5 1.5]
}
