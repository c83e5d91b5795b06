//go:build !race

package registry_test

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// The per-op work of the registry allocates nothing in a steady state:
// normalising attrs that are already normal (the tape normalises on every
// op), kernels' output shapes (copied before the Allocator interface call,
// so a kernel's variadic shape stays on its stack) and result slices.
// (Excluded from -race builds, whose instrumentation allocates.)
func TestRegistryAllocations(t *testing.T) {
	d, _ := registry.Lookup("regtest.Defaulted")
	normal, err := d.NormalizeAttrs(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, attrs := range map[string]any{"nil": nil, "normal": normal} {
		if n := testing.AllocsPerRun(50, func() { _, _ = d.NormalizeAttrs(attrs) }); n != 0 {
			t.Errorf("NormalizeAttrs of %s attrs: %v allocations", name, n)
		}
	}
	alloc := &countingAlloc{pool: map[[2]int]*tensor.Dense{}}
	kc := &registry.KernelCtx{Alloc: alloc}
	rows, cols := 2, 3
	n := testing.AllocsPerRun(50, func() {
		a, _ := kc.Output(tensor.Float64, rows, cols)
		b, _ := kc.Zeros(tensor.Float64, cols)
		_ = kc.Results(a, b)
	})
	if n != 0 || alloc.calls == 0 {
		t.Errorf("Output, Zeros and Results: %v allocations (%d Alloc calls)", n, alloc.calls)
	}
}
