package main

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/safetensors"
)

// sameCheckpoints checks that the checkpoints at paths a and b hold the
// same tensors (parameters, buffers, optimizer state), bit for bit; what
// names the comparison in the messages.
func sameCheckpoints(t *testing.T, what, a, b string) {
	t.Helper()
	ta, _, err := safetensors.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := safetensors.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(ta) != len(tb) || len(ta) == 0 {
		t.Fatalf("%s: checkpoints hold %d and %d tensors", what, len(ta), len(tb))
	}
	names := make([]string, 0, len(ta))
	for name := range ta {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		x := ta[name]
		y, ok := tb[name]
		switch {
		case !ok:
			t.Errorf("%s: tensor %s missing from the second checkpoint", what, name)
		case x.Dtype() != y.Dtype() || (x.Dtype() == tensor.Float32 && !bytes.Equal(rawBytes(x.Float32s()), rawBytes(y.Float32s()))) ||
			(x.Dtype() != tensor.Float32 && fmt.Sprint(x.Data()) != fmt.Sprint(y.Data())):
			t.Errorf("%s: tensor %s differs", what, name)
		}
	}
}
