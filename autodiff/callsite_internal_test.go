package autodiff

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

func init() {
	registry.MustRegister(&registry.OpDef{Name: "callsitetest.Copy", Inputs: []registry.Arg{{Name: "x"}}, Outputs: []registry.Arg{{Name: "y"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
			out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
			if err != nil {
				return nil, err
			}
			copy(registry.Elems[float64](out), registry.Elems[float64](in[0]))
			return kc.Results(out), nil
		}}})
	registry.MustSetGradient("callsitetest.Copy", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		g := e.Values(1)
		g[0] = dy[0]
		return g, nil
	})
}

// Only ops whose gradient errors are the user's keep a call stack: the
// library's own ops skip runtime.Callers (it costs about as much as the
// rest of the tape's work for an op), unless anomaly detection is on.
func TestCallStacksOnlyForUserOps(t *testing.T) {
	tp := NewTape()
	x := tp.Watch(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	y := tp.Apply("Identity", nil, x)[0]
	if len(tp.pcs) != 0 || tp.nodes[0].npc != 0 {
		t.Fatalf("a library op kept %d frames", len(tp.pcs))
	}
	tp.Apply("callsitetest.Copy", nil, y)
	if tp.nodes[1].npc == 0 || tp.nodeLoc(1) == "" {
		t.Fatal("a user op kept no call stack")
	}
	// Each recording starts a new stack store, also when its first
	// recorded op is a library op: the store does not grow step by step.
	n := len(tp.pcs)
	for range 3 {
		tp.Reset()
		x = tp.Watch(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
		y = tp.Apply("Identity", nil, x)[0]
		tp.Apply("callsitetest.Copy", nil, y)
		if len(tp.pcs) != n || tp.nodes[1].pc0 != 0 {
			t.Fatalf("the stack store has %d frames, the user op's start at %d; want %d and 0", len(tp.pcs), tp.nodes[1].pc0, n)
		}
	}
	// With anomaly detection, every op's location is known (its own stack).
	tp = NewTape(DetectAnomaly())
	x = tp.Watch(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	tp.Apply("Identity", nil, x)
	if len(tp.pcs) != 0 || tp.nodeLoc(0) == "" {
		t.Fatalf("anomaly detection: %d own frames, location %q", len(tp.pcs), tp.nodeLoc(0))
	}
}
