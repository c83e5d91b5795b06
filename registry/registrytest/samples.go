package registrytest

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// RunSamples draws the samples of the registered op named op from r and
// runs each one on kc (nil: the kernel's defaults), failing the test when
// the op has no sample generator, gives fewer than least samples, or a
// sample returns an error. It returns the samples and their outputs, in
// order, for the caller's own checks.
func RunSamples(t testing.TB, op string, r *rand.Rand, least int, kc *registry.KernelCtx) ([]registry.Sample, [][]*tensor.Dense) {
	t.Helper()
	def, err := registry.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	if def.Samples == nil {
		t.Fatalf("%s has no sample generator", op)
	}
	ss := def.Samples(r)
	if len(ss) < least {
		t.Fatalf("%s: only %d samples", op, len(ss))
	}
	outs := make([][]*tensor.Dense, len(ss))
	for i, s := range ss {
		if outs[i], err = registry.Run(def, kc, s.Attrs, s.Inputs); err != nil {
			t.Fatalf("%s sample %s: %v", op, s.Name, err)
		}
	}
	return ss, outs
}
