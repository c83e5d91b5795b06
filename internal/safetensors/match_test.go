package safetensors

import (
	"errors"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func TestMatch(t *testing.T) {
	f := func(shape ...int) *tensor.Dense { return mustNew(t, shape, make([]float32, numel(shape))) }
	want := map[string]*tensor.Dense{"a": f(2, 3), "b": f(4), "c": f()}
	if err := Match(map[string]*tensor.Dense{"a": f(2, 3), "b": f(4), "c": f()}, want); err != nil {
		t.Fatal(err)
	}
	got := map[string]*tensor.Dense{
		"a": f(3, 2),
		"c": mustNew(t, []int{}, []float64{1}),
		"z": f(1),
	}
	err := Match(got, want)
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("got %v", err)
	}
	for _, s := range []string{`missing ["b"]`, `unexpected ["z"]`, `"a" is float32 (3, 2) in the file, want float32 (2, 3)`, `"c" is float64 () in the file, want float32 ()`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not contain %q", err, s)
		}
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
