package autodiff_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Issue 18 §1: mistakes that used to train nothing, or train wrongly,
// without a word are errors.

func init() {
	// silenttest.BadInnerOp's gradient applies an op that fails (a
	// MatMul of mismatched shapes): the error is raised inside the
	// gradient function, by the emitter.
	registry.MustRegister(&registry.OpDef{Name: "silenttest.BadInnerOp", Inputs: []registry.Arg{{Name: "x"}}, Outputs: []registry.Arg{{Name: "y"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
			out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
			if err != nil {
				return nil, err
			}
			copy(out.Float64s(), in[0].Float64s())
			return kc.Results(out), nil
		}}})
	registry.MustSetGradient("silenttest.BadInnerOp", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		g := e.Values(1)
		g[0] = forward.MatMul(e, registry.Attrs[forward.MatMulAttrs]{}, dy[0], dy[0]) // dy is a vector: not a matrix
		return g, nil
	})
}

// here returns the file:line of its caller, as OpError.Loc spells it.
func here() string {
	_, file, line, _ := runtime.Caller(1)
	i := strings.LastIndexByte(file, '/')
	j := strings.LastIndexByte(file[:i], '/')
	return fmt.Sprintf("%s:%d", file[j+1:], line)
}

func TestBackwardWithoutTrainableParamIsAnError(t *testing.T) {
	w, err := autodiff.NewParam("w", vec(t, 1, 2))
	if err != nil {
		t.Fatal(err)
	}
	// The mistake: the parameter's data enters the tape as a constant.
	tp := autodiff.NewTape()
	loss := autodiff.Sum(autodiff.Mul(tp.Constant(w.Data), tp.Constant(vec(t, 3, 4))), nil, false)
	err = tp.Backward(loss)
	if !errors.Is(err, autodiff.ErrNoGradient) || !strings.Contains(err.Error(), "tape.Param(p)") {
		t.Fatalf("Backward on a loss without parameters: %v, want ErrNoGradient naming tape.Param", err)
	}
	if w.Grad != nil {
		t.Fatalf("w.Grad = %v, want nil", w.Grad)
	}

	// Parameters bound, but the loss reaches none of them: they are named.
	b, _ := autodiff.NewParam("b", vec(t, 0, 0))
	tp.Reset()
	tp.Param(w)
	tp.Param(b)
	loss = autodiff.Sum(autodiff.Mul(tp.Constant(w.Data), tp.Watch(vec(t, 3, 4))), nil, false)
	err = tp.Backward(loss)
	if !errors.Is(err, autodiff.ErrNoGradient) || !strings.Contains(err.Error(), `"w", "b"`) {
		t.Fatalf("Backward on a loss reaching no bound parameter: %v, want ErrNoGradient naming w and b", err)
	}

	// One parameter reached, one not: that is a model with an unused
	// part, not a mistake.
	tp.Reset()
	tp.Param(b)
	loss = autodiff.Sum(autodiff.Mul(tp.Param(w), tp.Constant(vec(t, 3, 4))), nil, false)
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if g := w.Grad.Float64s(); g[0] != 3 || g[1] != 4 {
		t.Fatalf("w.Grad = %v", g)
	}
}

func TestSecondBackwardOnOneRecordingIsRefused(t *testing.T) {
	w, _ := autodiff.NewParam("w", vec(t, 1, 2))
	tp := autodiff.NewTape()
	loss := autodiff.Sum(autodiff.Mul(tp.Param(w), tp.Constant(vec(t, 3, 4))), nil, false)
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	err := tp.Backward(loss)
	if !errors.Is(err, autodiff.ErrBackwardTwice) || !strings.Contains(err.Error(), "tape.Reset()") || !strings.Contains(err.Error(), "RetainGraph") {
		t.Fatalf("second Backward: %v, want ErrBackwardTwice saying why", err)
	}
	if g := w.Grad.Float64s(); g[0] != 3 || g[1] != 4 {
		t.Fatalf("w.Grad = %v after a refused second Backward, want [3 4]", g)
	}

	// Asked for: the first pass retains the graph, the second adds again.
	w.ZeroGrad()
	tp.Reset()
	loss = autodiff.Sum(autodiff.Mul(tp.Param(w), tp.Constant(vec(t, 3, 4))), nil, false)
	if err := tp.BackwardWith(loss, autodiff.BackwardOpts{RetainGraph: true}); err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	if g := w.Grad.Float64s(); g[0] != 6 || g[1] != 8 {
		t.Fatalf("w.Grad = %v after two deliberate passes, want [6 8]", g)
	}
	if err := tp.Backward(loss); !errors.Is(err, autodiff.ErrBackwardTwice) {
		t.Fatalf("third Backward after a spending one: %v, want ErrBackwardTwice", err)
	}

	// Gradient accumulation over two micro-batches on one recording: the
	// second Backward runs through new ops only, and is allowed.
	w.ZeroGrad()
	tp.Reset()
	l1 := autodiff.Sum(autodiff.Mul(tp.Param(w), tp.Constant(vec(t, 3, 4))), nil, false)
	if err := tp.Backward(l1); err != nil {
		t.Fatal(err)
	}
	l2 := autodiff.Sum(autodiff.Mul(tp.Param(w), tp.Constant(vec(t, 5, 6))), nil, false)
	if err := tp.Backward(l2); err != nil {
		t.Fatal(err)
	}
	if g := w.Grad.Float64s(); g[0] != 8 || g[1] != 10 {
		t.Fatalf("w.Grad = %v after two micro-batches, want [8 10]", g)
	}

	// Grad neither spends nor checks: it adds nothing into Grad.
	tp.Reset()
	x := tp.Watch(vec(t, 1, 2))
	y := autodiff.Sum(autodiff.Mul(x, x), nil, false)
	for range 2 {
		if _, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGradientFunctionErrorsCarryTheForwardCallSite(t *testing.T) {
	for _, c := range []struct {
		op   string
		want string // in the message
	}{
		{"tapetest.Wrong", "refused"},                                         // the gradient function returns an error
		{"tapetest.BadGrad", "gradient is float64 ()"},                        // it returns a gradient of the wrong shape
		{"tapetest.GradPanic", "panicked"},                                    // it panics
		{"silenttest.BadInnerOp", "in the gradient of silenttest.BadInnerOp"}, // an op it applies fails
	} {
		tp := autodiff.NewTape()
		x := tp.Watch(vec(t, 1, 2))
		y, loc := tp.Apply(c.op, nil, x)[0], here()
		tp.Apply("Identity", nil, y) // a later op: not where the error is
		_, err := tp.Grad([]autodiff.Value{y}, []autodiff.Value{x}, nil, autodiff.GradOpts{})
		var oe *autodiff.OpError
		if !errors.As(err, &oe) {
			t.Fatalf("%s: %v, want an OpError", c.op, err)
		}
		if oe.Loc != loc || oe.Phase != "backward" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Loc %q phase %q (%v), want Loc %q (the forward call site), phase backward, message with %q", c.op, oe.Loc, oe.Phase, err, loc, c.want)
		}
	}
}

func TestModifiedParameterErrorSaysReset(t *testing.T) {
	w, _ := autodiff.NewParam("w", vec(t, 1, 2))
	tp := autodiff.NewTape()
	loss := autodiff.Sum(tp.Param(w), nil, false)
	w.MarkModified()
	err := tp.Backward(loss)
	if !errors.Is(err, autodiff.ErrModified) || !strings.Contains(err.Error(), "call tape.Reset() at the start of each step") {
		t.Fatalf("Backward after a change: %v", err)
	}
}

func TestDtypeAndShapeErrorsNameTheInput(t *testing.T) {
	f32 := func(s ...int) *tensor.Dense {
		n := 1
		for _, d := range s {
			n *= d
		}
		return tensor.New(tensor.WithShape(s...), tensor.WithBacking(make([]float32, n)))
	}
	f64 := func(s ...int) *tensor.Dense {
		n := 1
		for _, d := range s {
			n *= d
		}
		return tensor.New(tensor.WithShape(s...), tensor.WithBacking(make([]float64, n)))
	}
	conv := forward.Conv2DAttrs{Strides: []int{1, 1, 1, 1}, Padding: "SAME"}
	for _, c := range []struct {
		name  string
		f     func(tp *autodiff.Tape)
		input int
		kind  error
		text  string // in the message
	}{
		{"MatMul shapes", func(tp *autodiff.Tape) {
			autodiff.MatMul(tp.Constant(f32(2, 3)), tp.Constant(f32(2, 3)), forward.MatMulAttrs{})
		}, 1, autodiff.ErrShape, ""},
		{"MatMul dtypes", func(tp *autodiff.Tape) {
			autodiff.MatMul(tp.Constant(f32(2, 3)), tp.Constant(f64(3, 3)), forward.MatMulAttrs{})
		}, 1, autodiff.ErrDtype, "Go dtypes: got float64, want float32"},
		{"AddV2 dtypes", func(tp *autodiff.Tape) { autodiff.Add(tp.Constant(f32(2, 3)), tp.Constant(f64(2, 3))) }, 1, autodiff.ErrDtype, "float64"},
		{"AddV2 shapes", func(tp *autodiff.Tape) { autodiff.Add(tp.Constant(f32(2, 3)), tp.Constant(f32(3, 2))) }, 1, autodiff.ErrShape, ""},
		{"Conv2D input rank", func(tp *autodiff.Tape) {
			autodiff.Conv2D(tp.Constant(f32(2, 3, 3)), tp.Constant(f32(1, 1, 3, 2)), conv)
		}, 0, autodiff.ErrShape, ""},
		{"Conv2D filter depth", func(tp *autodiff.Tape) {
			autodiff.Conv2D(tp.Constant(f32(1, 3, 3, 2)), tp.Constant(f32(1, 1, 3, 2)), conv)
		}, 1, autodiff.ErrInvalidArgument, ""},
		{"Conv2D filter dtype", func(tp *autodiff.Tape) {
			autodiff.Conv2D(tp.Constant(f32(1, 3, 3, 3)), tp.Constant(f64(1, 1, 3, 2)), conv)
		}, 1, autodiff.ErrDtype, ""},
		{"Relu of int32", func(tp *autodiff.Tape) { autodiff.Relu(tp.Ints(1, 2)) }, 0, autodiff.ErrDtype, "int32"},
		{"Reshape count", func(tp *autodiff.Tape) { autodiff.Reshape(tp.Constant(f32(2, 3)), 4, 2) }, 1, autodiff.ErrInvalidArgument, ""},
		{"labels batch", func(tp *autodiff.Tape) { autodiff.SparseSoftmaxCrossEntropy(tp.Constant(f32(2, 3)), tp.Ints(1, 2, 3)) }, 1, autodiff.ErrShape, ""},
		{"labels dtype", func(tp *autodiff.Tape) {
			autodiff.SparseSoftmaxCrossEntropy(tp.Constant(f32(2, 3)), tp.Constant(f32(2)))
		}, 1, autodiff.ErrDtype, ""},
	} {
		tp := autodiff.NewTape()
		c.f(tp)
		var oe *autodiff.OpError
		if err := tp.Err(); !errors.As(err, &oe) || !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want an OpError wrapping %v", c.name, err, c.kind)
			continue
		}
		if oe.Input != c.input || !strings.Contains(oe.Error(), c.text) {
			t.Errorf("%s: Input %d (%v), want input %d and %q in the message", c.name, oe.Input, oe, c.input, c.text)
		}
		if strings.Contains(oe.Error(), "double") && !strings.Contains(oe.Error(), "float64") {
			t.Errorf("%s: %v names a dtype as TensorFlow does only", c.name, oe)
		}
	}
}
