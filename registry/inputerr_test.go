package registry_test

import (
	"errors"
	"fmt"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

func TestInputErrorf(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", registry.InputErrorf(registry.ErrShape, 2, "Op: input %d is bad", 2))
	if got := registry.ErrorInput(err); got != 2 {
		t.Errorf("ErrorInput = %d, want 2", got)
	}
	if !errors.Is(err, registry.ErrShape) || err.Error() != "wrapped: Op: input 2 is bad" {
		t.Errorf("err = %v", err)
	}
	if got := registry.ErrorInput(registry.Errorf(registry.ErrShape, "no input")); got != -1 {
		t.Errorf("ErrorInput of an Errorf error = %d, want -1", got)
	}
	// By name.
	registry.MustRegister(&registry.OpDef{Name: "inputerrtest.Op", Inputs: []registry.Arg{{Name: "a"}, {Name: "b"}}, Outputs: []registry.Arg{{Name: "z"}},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float64: func(*registry.KernelCtx, any, []*tensor.Dense) ([]*tensor.Dense, error) { return nil, nil }}})
	registry.MustNoGradient("inputerrtest.Op", "a test op")
	if got := registry.ErrorInput(registry.NamedInputErrorf(registry.ErrShape, "inputerrtest.Op", "b", "bad b")); got != 1 {
		t.Errorf("NamedInputErrorf(b): input %d, want 1", got)
	}
	if got := registry.ErrorInput(registry.NamedInputErrorf(registry.ErrShape, "inputerrtest.Op", "c", "no c")); got != -1 {
		t.Errorf("NamedInputErrorf(c): input %d, want -1", got)
	}
}
