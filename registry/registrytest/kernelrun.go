package registrytest

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// KernelRun returns a function that runs op's kernel with attrs on in
// with threads, its outputs from a testutil.Recycler reset on every call:
// what the tape does in a steady-state training step. name labels failures.
func KernelRun(t testing.TB, name, op string, attrs any, threads int, in []*tensor.Dense) func() {
	t.Helper()
	def, err := registry.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	if attrs, err = def.NormalizeAttrs(attrs); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	alloc := &testutil.Recycler{}
	kc := &registry.KernelCtx{Alloc: alloc, Threads: threads}
	return func() {
		alloc.Reset()
		if _, err := registry.RunNormalized(def, kc, attrs, in); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
