package main

import (
	"bytes"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Test ops, registered only in this test binary. cmdtest.Prod2(a, b) =
// 2ab is closed under differentiation (its gradients are Prod2s), so
// cmdtest.Square (x², gradient Prod2(x, dy)) passes every order;
// cmdtest.BadSquare claims the gradient 4x·dy.
func init() {
	k := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		a, err := tensorx.Slice[float64](in[0])
		if err != nil {
			return nil, err
		}
		b := a
		if len(in) > 1 {
			if b, err = tensorx.Slice[float64](in[1]); err != nil {
				return nil, err
			}
			if len(b) != len(a) {
				return nil, registry.Errorf(registry.ErrShape, "cmdtest: shapes differ")
			}
		}
		out := make([]float64, len(a))
		for i := range a {
			out[i] = a[i] * b[i]
			if len(in) > 1 {
				out[i] *= 2
			}
		}
		d, err := tensorx.New(tensorx.Shape(in[0]), out)
		return []*tensor.Dense{d}, err
	}
	kernels := map[tensor.Dtype]registry.Kernel{tensor.Float64: k}
	one := []registry.Arg{{Name: "x"}}
	two := []registry.Arg{{Name: "a"}, {Name: "b"}}
	out := []registry.Arg{{Name: "y"}}
	samples := func(r *rand.Rand) []registry.Sample {
		var s []registry.Sample
		for _, n := range []int{1, 3, 4, 7} {
			v := make([]float64, n)
			for i := range v {
				v[i] = r.NormFloat64()
			}
			d, _ := tensorx.New([]int{n}, v)
			s = append(s, registry.Sample{Name: "n" + string(rune('0'+n)), Inputs: []*tensor.Dense{d}})
		}
		return s
	}
	for _, name := range []string{"cmdtest.Square", "cmdtest.BadSquare", "cmdtest.NoSamples", "cmdtest.NotDiff", "cmdtest.Unset"} {
		def := &registry.OpDef{Name: name, Inputs: one, Outputs: out, Kernels: kernels}
		if name == "cmdtest.Square" || name == "cmdtest.BadSquare" {
			def.Samples = samples
		}
		registry.MustRegister(def)
	}
	registry.MustRegister(&registry.OpDef{Name: "cmdtest.Prod2", Inputs: two, Outputs: out, Kernels: kernels})
	prod := func(e registry.Emitter, a, b registry.Value) registry.Value {
		return e.Apply("cmdtest.Prod2", nil, a, b)[0]
	}
	registry.MustSetGradient("cmdtest.Prod2", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		in := n.Inputs()
		return []registry.Value{prod(e, in[1], dy[0]), prod(e, in[0], dy[0])}, nil
	})
	registry.MustSetGradient("cmdtest.Square", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{prod(e, n.Inputs()[0], dy[0])}, nil
	})
	registry.MustSetGradient("cmdtest.BadSquare", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{prod(e, n.Inputs()[0], e.Apply("AddN", nil, dy[0], dy[0])[0])}, nil
	})
	registry.MustSetGradient("cmdtest.NoSamples", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		return []registry.Value{prod(e, n.Inputs()[0], dy[0])}, nil
	})
	registry.MustNotDifferentiable("cmdtest.NotDiff")
}

func runCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	if errOut.Len() > 0 && code != 2 {
		t.Errorf("stderr: %s", errOut.String())
	}
	return out.String(), code
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return l[len(l)-1]
}

func TestPassingOp(t *testing.T) {
	out, code := runCmd(t, "-op", "cmdtest.Square")
	if code != 0 || lastLine(out) != "1 passed, 0 failed" {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if !regexp.MustCompile(`(?m)^ok +cmdtest\.Square +4/4 configs +first 4/4 +second 4/4`).MatchString(out) {
		t.Errorf("op line not found in:\n%s", out)
	}
	out, code = runCmd(t, "-quick", "-seed", "5", "-op", "cmdtest.Square")
	if code != 0 || !strings.Contains(out, "3/3 configs") {
		t.Errorf("-quick: exit %d, output:\n%s", code, out)
	}
	out, _ = runCmd(t, "-v", "-op", "cmdtest.Square")
	if n := strings.Count(out, "second ok"); n != 4 {
		t.Errorf("-v printed %d configuration lines:\n%s", n, out)
	}
}

func TestFailingOps(t *testing.T) {
	out, code := runCmd(t, "-op", "cmdtest.Square,cmdtest.BadSquare,cmdtest.NoSamples,cmdtest.NotDiff,cmdtest.Unset,cmdtest.Missing")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if got := lastLine(out); got != "2 passed, 4 failed" {
		t.Errorf("last line %q, want \"2 passed, 4 failed\"; output:\n%s", got, out)
	}
	for _, re := range []string{
		`(?m)^FAIL cmdtest\.BadSquare +0/4 configs +first 0/4 +second 0/0`,
		`(?m)^ +sample "n1", first order: gradcheck: first-order gradient mismatch: d\(output 0\)/d\(input 0\)`,
		`(?m)^FAIL cmdtest\.NoSamples +no samples`,
		`(?m)^ok +cmdtest\.NotDiff +no samples \(not differentiable\)`,
		`(?m)^FAIL cmdtest\.Unset +no gradient state`,
		`(?m)^FAIL cmdtest\.Missing +not registered`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("%s not found in:\n%s", re, out)
		}
	}
}

func TestUsage(t *testing.T) {
	if _, code := runCmd(t, "-nope"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if _, code := runCmd(t, "extra"); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}
}
