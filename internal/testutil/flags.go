package testutil

import (
	"flag"
	"testing"

	"github.com/tapegrad/tapegrad/registry"
)

func init() {
	if flag.Lookup("long") == nil {
		flag.Bool("long", false, "long tests: full attr grids; gradient sweep over every sample configuration and two seeds (default: at most 3 per op, one seed)")
	}
}

// Long reports whether the tests run with -long (defined here for every
// test package importing testutil).
func Long() bool {
	f := flag.Lookup("long")
	return f != nil && f.Value.String() == "true"
}

// GradOp returns the registered op named name, failing the test unless it
// exists and has a gradient function.
func GradOp(t testing.TB, name string) *registry.OpDef {
	t.Helper()
	d, err := registry.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if d.GradKind() != registry.GradDefined {
		t.Fatalf("%s: gradient state %v, want a gradient function", name, d.GradKind())
	}
	return d
}
