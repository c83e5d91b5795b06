package autodiff_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Test ops, registered from outside the library as a user would.
func init() {
	f64 := func(k registry.Kernel) map[tensor.Dtype]registry.Kernel {
		return map[tensor.Dtype]registry.Kernel{tensor.Float64: k, tensor.Float32: k}
	}
	double := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		switch out.Dtype() {
		case tensor.Float64:
			for i, v := range in[0].Float64s() {
				out.Float64s()[i] = 2 * v
			}
		case tensor.Float32:
			for i, v := range in[0].Float32s() {
				out.Float32s()[i] = 2 * v
			}
		}
		return []*tensor.Dense{out}, nil
	}
	one := []registry.Arg{{Name: "x"}}
	registry.MustRegister(&registry.OpDef{Name: "tapetest.Double", Inputs: one, Outputs: one, Kernels: f64(double)})
	registry.MustSetGradient("tapetest.Double", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{e.Apply("tapetest.Double", nil, dy[0])[0]}, nil
	})
	registry.MustRegister(&registry.OpDef{Name: "tapetest.Panic", Inputs: one, Outputs: one,
		Kernels: f64(func(*registry.KernelCtx, any, []*tensor.Dense) ([]*tensor.Dense, error) { panic("boom") })})
	registry.MustNoGradient("tapetest.Panic", "test op")
	registry.MustRegister(&registry.OpDef{Name: "tapetest.NoGrad", Inputs: one, Outputs: one, Kernels: f64(double)})
	registry.MustNoGradient("tapetest.NoGrad", "it is a test op without gradient")
	registry.MustRegister(&registry.OpDef{Name: "tapetest.BadGrad", Inputs: one, Outputs: one, Kernels: f64(double)})
	registry.MustSetGradient("tapetest.BadGrad", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{e.Scalar(tensor.Float64, 1)}, nil // wrong shape
	})
	registry.MustRegister(&registry.OpDef{Name: "tapetest.GradPanic", Inputs: one, Outputs: one, Kernels: f64(double)})
	registry.MustSetGradient("tapetest.GradPanic", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		var s []int
		_ = s[3]
		return nil, nil
	})
	// tapetest.Stash doubles; its gradient keeps what it was handed and
	// what it returns in stash, as a misbehaving gradient function could.
	registry.MustRegister(&registry.OpDef{Name: "tapetest.Stash", Inputs: one, Outputs: one, Kernels: f64(double)})
	registry.MustSetGradient("tapetest.Stash", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		g := e.Apply("tapetest.Double", nil, dy[0])[0]
		res := e.Values(1)
		res[0] = g
		stash = stashed{in: n.Inputs()[0], out: n.Outputs()[0], dy: dy[0], g: g, res: res}
		return res, nil
	})
	registry.MustRegister(&registry.OpDef{Name: "tapetest.Wrong", Inputs: one, Outputs: one, Kernels: f64(double)})
	registry.MustSetGradient("tapetest.Wrong", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return nil, errors.New("refused")
	})
}

// stashed is what tapetest.Stash's gradient last saw and returned.
type stashed struct {
	in, out, dy, g registry.Value
	res            []registry.Value
}

var stash stashed

func vec(t testing.TB, v ...float64) *tensor.Dense {
	t.Helper()
	d, err := tensorx.New([]int{len(v)}, v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func f64s(t *testing.T, v autodiff.Value) []float64 {
	t.Helper()
	s, err := v.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eq(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestGradFanOutAndHigherOrder(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(vec(t, 1, 2))
	d := tp.Apply("tapetest.Double", nil, x)[0]
	y := tp.Apply("AddN", nil, d, x, tp.Apply("Identity", nil, d)[0])[0] // 5x
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := f64s(t, g[0]); !eq(got, []float64{5, 5}) {
		t.Fatalf("dy/dx = %v, want [5 5]", got)
	}
	// The gradient of a recorded gradient: d/dx of sum(Double(g)) through the
	// graph is 0 (g does not depend on x), and d/d(upstream) works.
	u := tp.Watch(vec(t, 3, 4))
	g2, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{u}, autodiff.GradOpts{CreateGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := f64s(t, g2[0]); !eq(got, []float64{15, 20}) {
		t.Fatalf("vjp = %v, want [15 20]", got)
	}
	gg, err := tp.Grad([]autodiff.Value{g2[0]}, []autodiff.Value{u, x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f64s(t, gg[0]); !eq(got, []float64{5, 5}) {
		t.Fatalf("d vjp / du = %v, want [5 5]", got)
	}
	if got := f64s(t, gg[1]); !eq(got, []float64{0, 0}) {
		t.Fatalf("d vjp / dx = %v, want [0 0]", got)
	}
}

func TestGradWithoutCreateGraphIsConstant(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(vec(t, 1))
	y := tp.Apply("tapetest.Double", nil, x)[0]
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if g[0].RequiresGrad() {
		t.Fatal("gradient without CreateGraph requires grad")
	}
}

func TestUnconnectedSourceGetsZeros(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(vec(t, 1, 2))
	z := tp.Watch(vec(t, 7, 8, 9))
	c := tp.Constant(vec(t, 1))
	y := tp.Apply("tapetest.Double", nil, x)[0]
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{z, c, x, x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f64s(t, g[0]); !eq(got, []float64{0, 0, 0}) {
		t.Fatalf("unconnected = %v", got)
	}
	if got := f64s(t, g[1]); !eq(got, []float64{0}) {
		t.Fatalf("constant = %v", got)
	}
	if got, got2 := f64s(t, g[2]), f64s(t, g[3]); !eq(got, []float64{2, 2}) || !eq(got2, got) {
		t.Fatalf("repeated source = %v %v", got, got2)
	}
}

func TestStopGradient(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(vec(t, 1, 2))
	s := tp.Apply("StopGradient", nil, x)[0]
	y := tp.Apply("AddN", nil, s, x)[0]
	g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f64s(t, g[0]); !eq(got, []float64{1, 1}) {
		t.Fatalf("grad through StopGradient = %v, want [1 1]", got)
	}
}

func TestParamsBackwardAccumulates(t *testing.T) {
	p, err := autodiff.NewParam("w", vec(t, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	frozen, _ := autodiff.NewParam("frozen", vec(t, 1, 1, 1))
	frozen.Trainable = false
	tp := autodiff.NewTape()
	for step := 0; step < 2; step++ {
		tp.Reset()
		w := tp.Param(p)
		if w2 := tp.Param(p); w2 != w {
			t.Fatal("binding a param twice gave two values")
		}
		y := tp.Apply("AddN", nil, tp.Apply("tapetest.Double", nil, w)[0], w, tp.Param(frozen))[0]
		if err := tp.Backward(y); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Grad.Float64s(); !eq(got, []float64{6, 6, 6}) {
		t.Fatalf("accumulated grad = %v, want [6 6 6]", got)
	}
	if frozen.Grad != nil {
		t.Fatal("frozen parameter got a gradient")
	}
	p.ZeroGrad()
	if got := p.Grad.Float64s(); !eq(got, []float64{0, 0, 0}) {
		t.Fatalf("after ZeroGrad = %v", got)
	}
}

func TestParamModifiedAfterUse(t *testing.T) {
	p, _ := autodiff.NewParam("w", vec(t, 1))
	tp := autodiff.NewTape()
	y := tp.Apply("tapetest.Double", nil, tp.Param(p))[0]
	p.MarkModified()
	err := tp.Backward(y)
	if !errors.Is(err, autodiff.ErrModified) {
		t.Fatalf("err = %v, want ErrModified", err)
	}
}

func TestFailedBackwardLeavesGradsUntouched(t *testing.T) {
	p, _ := autodiff.NewParam("w", vec(t, 1))
	q, _ := autodiff.NewParam("v", vec(t, 1))
	tp := autodiff.NewTape()
	a := tp.Apply("tapetest.Double", nil, tp.Param(p))[0]
	b := tp.Apply("tapetest.NoGrad", nil, tp.Param(q))[0]
	err := tp.Backward(tp.Apply("AddN", nil, a, b)[0])
	if !errors.Is(err, autodiff.ErrNoGradient) || !strings.Contains(err.Error(), "tapetest.NoGrad") {
		t.Fatalf("err = %v", err)
	}
	if p.Grad != nil || q.Grad != nil {
		t.Fatal("a failed Backward wrote gradients")
	}
}

func TestStickyErrors(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Constant(vec(t, 1, 2))
	y := tp.Constant(vec(t, 1, 2, 3))
	bad := tp.Apply("AddN", nil, x, y)[0] // shape mismatch
	err := tp.Err()
	var oe *autodiff.OpError
	if !errors.As(err, &oe) || oe.Op != "AddN" || oe.Phase != "forward" || !errors.Is(err, autodiff.ErrShape) {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(oe.Loc, "tape_test.go:") {
		t.Fatalf("location %q does not name the test file", oe.Loc)
	}
	// Later ops do nothing and report the first error.
	z := tp.Apply("Identity", nil, bad)[0]
	if _, err2 := z.Float64s(); err2 != err {
		t.Fatalf("read after error = %v, want the first error", err2)
	}
	if _, err2 := z.Item(); err2 != err {
		t.Fatalf("Item after error = %v", err2)
	}
	if err2 := tp.Backward(z); err2 != err {
		t.Fatalf("Backward after error = %v", err2)
	}
	tp.Reset()
	if tp.Err() != nil {
		t.Fatal("Reset did not clear the error")
	}
}

func TestInvalidValues(t *testing.T) {
	a, b := autodiff.NewTape(), autodiff.NewTape()
	x := a.Constant(vec(t, 1))
	b.Apply("Identity", nil, x)
	if !errors.Is(b.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("value of another tape: %v", b.Err())
	}
	c := autodiff.NewTape()
	c.Apply("Identity", nil, autodiff.Value{})
	if !errors.Is(c.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("zero value: %v", c.Err())
	}
	if _, err := (autodiff.Value{}).Float64s(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("zero value read: %v", err)
	}
	a.Reset()
	if _, err := x.Float64s(); !errors.Is(err, autodiff.ErrInvalidValue) {
		t.Fatalf("value after Reset: %v", err)
	}
	d := autodiff.NewTape()
	d.Apply("NoSuchOp", nil)
	if !errors.Is(d.Err(), autodiff.ErrNotFound) {
		t.Fatalf("unknown op: %v", d.Err())
	}
}

func TestKernelAndGradientPanicsBecomeErrors(t *testing.T) {
	tp := autodiff.NewTape()
	tp.Apply("tapetest.Panic", nil, tp.Constant(vec(t, 1)))
	if !errors.Is(tp.Err(), autodiff.ErrInternal) {
		t.Fatalf("kernel panic: %v", tp.Err())
	}
	for _, op := range []string{"tapetest.GradPanic", "tapetest.BadGrad", "tapetest.Wrong"} {
		tp := autodiff.NewTape()
		x := tp.Watch(vec(t, 1, 2))
		y := tp.Apply(op, nil, x)[0]
		_, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
		var oe *autodiff.OpError
		if !errors.As(err, &oe) || oe.Op != op || oe.Phase != "backward" {
			t.Fatalf("%s: err = %v", op, err)
		}
	}
}

func TestNoGradTape(t *testing.T) {
	tp := autodiff.NewTape(autodiff.NoGrad())
	p, _ := autodiff.NewParam("w", vec(t, 1))
	y := tp.Apply("tapetest.Double", nil, tp.Param(p))[0]
	if tp.NumOps() != 0 || y.RequiresGrad() {
		t.Fatal("NoGrad tape recorded an op")
	}
	if got := f64s(t, y); !eq(got, []float64{2}) {
		t.Fatalf("forward on NoGrad tape = %v", got)
	}
	if _, err := tp.Grad([]autodiff.Value{y}, nil, nil, autodiff.GradOpts{}); err == nil {
		t.Fatal("Grad on a NoGrad tape succeeded")
	}
}

func TestOnlyNeededOpsAreRecorded(t *testing.T) {
	tp := autodiff.NewTape()
	c := tp.Constant(vec(t, 1, 2))
	tp.Apply("tapetest.Double", nil, c) // no input requires grad: not recorded
	if tp.NumOps() != 0 {
		t.Fatalf("recorded %d ops on constants", tp.NumOps())
	}
	x := tp.Watch(vec(t, 1, 2))
	tp.Apply("tapetest.Double", nil, x)
	if tp.NumOps() != 1 {
		t.Fatalf("recorded %d ops, want 1", tp.NumOps())
	}
}

func TestUpstreamValidation(t *testing.T) {
	tp := autodiff.NewTape()
	x := tp.Watch(vec(t, 1, 2))
	y := tp.Apply("tapetest.Double", nil, x)[0]
	_, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, []autodiff.Value{tp.Constant(vec(t, 1))}, autodiff.GradOpts{})
	if !errors.Is(err, autodiff.ErrShape) {
		t.Fatalf("wrong upstream shape: %v", err)
	}
}

func TestArenaReusesBuffers(t *testing.T) {
	tp := autodiff.NewTape()
	in := vec(t, 1, 2, 3)
	var first map[*tensor.Dense]bool
	for i := 0; i < 3; i++ {
		tp.Reset()
		c := tp.Constant(in)
		y := tp.Apply("tapetest.Double", nil, c)[0]
		dc, err1 := c.Data()
		dy, err2 := y.Data()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		got := map[*tensor.Dense]bool{dc: true, dy: true}
		if i == 0 {
			first = got
			continue
		}
		for d := range got {
			if !first[d] {
				t.Fatalf("step %d used a new buffer instead of recycling", i)
			}
		}
		if s := f64s(t, y); !eq(s, []float64{2, 4, 6}) {
			t.Fatalf("step %d: %v", i, s)
		}
	}
}

func TestSteadyStateAllocations(t *testing.T) {
	p, _ := autodiff.NewParam("w", vec(t, 1, 2, 3, 4))
	in := vec(t, 1, 2, 3, 4)
	tp := autodiff.NewTape()
	step := func() {
		tp.Reset()
		x := tp.Constant(in)
		w := tp.Param(p)
		y := tp.Apply("AddN", nil, tp.Apply("tapetest.Double", nil, w)[0], x)[0]
		if err := tp.Backward(y); err != nil {
			t.Fatal(err)
		}
	}
	step()
	step()
	allocs := testing.AllocsPerRun(20, step)
	// The buffers are recycled and the tape's own slices and boxes come
	// from its slabs; what remains are the test ops' own slices (the
	// kernel's result literal, forward and backward, and the gradient's
	// result and argument lists): 4. Keep it bounded so regressions show.
	if allocs > 8 {
		t.Fatalf("steady-state step allocates %.0f objects", allocs)
	}
	t.Logf("allocs per step: %.0f", allocs)
}

func TestFailAndReseed(t *testing.T) {
	tp := autodiff.NewTape(autodiff.Seed(5))
	a := tp.Rand().Int63()
	tp.Reseed(5)
	if b := tp.Rand().Int63(); a != b {
		t.Fatalf("Reseed did not restart the random source: %d vs %d", a, b)
	}
	v := tp.Fail("mylayer", fmt.Errorf("%w: bad config", autodiff.ErrInvalidArgument))
	var oe *autodiff.OpError
	if !errors.As(v.Err(), &oe) || oe.Op != "mylayer" || !errors.Is(tp.Err(), autodiff.ErrInvalidArgument) || !strings.Contains(oe.Loc, "tape_test.go:") {
		t.Fatalf("Fail: %#v", v.Err())
	}
	tp.Fail("second", errors.New("ignored"))
	if !strings.Contains(tp.Err().Error(), "bad config") {
		t.Fatalf("the first error did not win: %v", tp.Err())
	}
}

// TestUseAfterResetWithRecycledStorage checks that everything a tape hands
// out stays invalid after Reset although the next step reuses its storage:
// the same value ids, the same tensor headers from the arena. Values and
// the registry.Values gradient functions see (boxes from the tape's slab)
// keep their generation, and the slab never rewrites what it handed out.
func TestUseAfterResetWithRecycledStorage(t *testing.T) {
	tp := autodiff.NewTape()
	in := vec(t, 1, 2, 3)
	step := func() (x, y, gx autodiff.Value) {
		tp.Reset()
		x = tp.Watch(in)
		y = tp.Apply("tapetest.Stash", nil, x)[0]
		g, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
		if err != nil {
			t.Fatal(err)
		}
		return x, y, g[0]
	}
	x1, y1, g1 := step()
	old := stash
	oldRes := old.res[0]
	// The seed dy is the pass's own: released once the gradient function
	// that reads it has run.
	if err := old.dy.(*autodiff.Value).Err(); !errors.Is(err, autodiff.ErrReleased) {
		t.Errorf("the seed after the pass: Err %v, want ErrReleased", err)
	}
	// Every tensor of the step the user holds: x, y and the gradient.
	headers := map[*tensor.Dense]bool{}
	for _, v := range []autodiff.Value{x1, y1, g1} {
		d, err := v.Data()
		if err != nil {
			t.Fatal(err)
		}
		headers[d] = true
	}
	x2, y2, g2 := step()
	for _, v := range []autodiff.Value{x2, y2, g2} {
		if d, err := v.Data(); err != nil || !headers[d] {
			t.Fatalf("the arena did not hand out the same tensor headers again (the test needs it): %v", err)
		}
	}
	if s := f64s(t, g2); !eq(s, []float64{2, 2, 2}) {
		t.Fatalf("second step's gradient %v", s)
	}
	for name, v := range map[string]autodiff.Value{"x": x1, "y": y1, "gradient": g1} {
		if !errors.Is(v.Err(), autodiff.ErrInvalidValue) {
			t.Errorf("%s from before Reset: Err %v", name, v.Err())
		}
		if _, err := v.Data(); !errors.Is(err, autodiff.ErrInvalidValue) {
			t.Errorf("%s from before Reset: Data error %v", name, err)
		}
		if v.Shape() != nil {
			t.Errorf("%s from before Reset has shape %v", name, v.Shape())
		}
	}
	for name, rv := range map[string]registry.Value{"input": old.in, "output": old.out, "dy": old.dy, "gradient": old.g} {
		pv, ok := rv.(*autodiff.Value)
		if !ok {
			t.Fatalf("%s: gradient functions see a %T", name, rv)
		}
		if !errors.Is(pv.Err(), autodiff.ErrInvalidValue) || rv.Shape() != nil {
			t.Errorf("%s kept by a gradient function across Reset: Err %v, shape %v", name, pv.Err(), rv.Shape())
		}
		if *pv == x2 || *pv == y2 || *pv == g2 {
			t.Errorf("%s kept across Reset was rewritten into a live value", name)
		}
	}
	if old.res[0] != oldRes || stash.in == old.in {
		t.Error("the slab rewrote a slice or box it had handed out")
	}
	if y, ok := stash.out.(*autodiff.Value); !ok || *y != y2 {
		t.Errorf("this step's gradient function saw output %v, want %v", stash.out, y2)
	}
	tp.Apply("Identity", nil, y1)
	if !errors.Is(tp.Err(), autodiff.ErrInvalidValue) {
		t.Fatalf("op on a value from before Reset: %v", tp.Err())
	}
}

// TestApplyResultsAreTheCallers checks that the output slices of Apply,
// carved from the tape's slab, do not overlap: appending to or writing
// into one leaves the others alone.
func TestApplyResultsAreTheCallers(t *testing.T) {
	tp := autodiff.NewTape()
	c := tp.Constant(vec(t, 1, 2))
	var outs [][]autodiff.Value
	for i := 0; i < 300; i++ { // across slab boundaries
		outs = append(outs, tp.Apply("tapetest.Double", nil, c))
	}
	want := make([]autodiff.Value, len(outs))
	for i, o := range outs {
		if len(o) != 1 || cap(o) != 1 {
			t.Fatalf("result %d: len %d cap %d, want 1 and 1", i, len(o), cap(o))
		}
		want[i] = o[0]
	}
	for i := range outs {
		outs[i] = append(outs[i], c)
		outs[i][0] = c
	}
	for i := range outs {
		if got := tp.Apply("Identity", nil, want[i])[0]; f64s(t, got)[1] != 4 {
			t.Fatalf("result %d changed", i)
		}
	}
	g, err := tp.Grad([]autodiff.Value{want[0]}, []autodiff.Value{c}, nil, autodiff.GradOpts{})
	if err != nil || len(g) != 1 || cap(g) != 1 {
		t.Fatalf("Grad: %v, len %d cap %d", err, len(g), cap(g))
	}
}
