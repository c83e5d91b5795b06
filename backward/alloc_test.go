//go:build !race

package backward_test

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// TestGradKernelsAllocateNothing checks that the gradient kernels a
// training step runs most allocate nothing of their own when their
// buffers are recycled and they run on one thread (as package forward's
// allocation test does for the forward kernels). Excluded from -race
// builds, whose instrumentation allocates.
func TestGradKernelsAllocateNothing(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	f32 := func(shape ...int) *tensor.Dense { return testutil.To32(t, testutil.RandDense(t, r, shape...)) }
	cases := []struct {
		op    string
		attrs any
		in    []*tensor.Dense
	}{
		{"ReluGrad", nil, []*tensor.Dense{f32(4, 5), f32(4, 5)}},
		{"BiasAddGrad", forward.BiasAddAttrs{DataFormat: "NHWC"}, []*tensor.Dense{f32(4, 5)}},
	}
	for _, c := range cases {
		def, err := registry.Lookup(c.op)
		if err != nil {
			t.Fatal(err)
		}
		attrs, err := def.NormalizeAttrs(c.attrs)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		alloc := &testutil.Recycler{}
		kc := &registry.KernelCtx{Alloc: alloc, Threads: 1}
		run := func() {
			alloc.Reset()
			if _, err := registry.RunNormalized(def, kc, attrs, c.in); err != nil {
				t.Fatalf("%s: %v", c.op, err)
			}
		}
		run()
		if n := testing.AllocsPerRun(20, run); n != 0 {
			t.Errorf("%s %v: %v allocations per run", c.op, c.in[0].Shape(), n)
		}
	}
}
