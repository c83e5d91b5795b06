package main

import (
	"bytes"
	"os"
	"testing"

	"github.com/tapegrad/tapegrad/registry"
)

// TestGeneratedCurrent fails when a package's generated builders differ
// from what the registry gives now: run `go generate ./forward ./backward`.
func TestGeneratedCurrent(t *testing.T) {
	for _, c := range []struct{ pkg, file string }{
		{"github.com/tapegrad/tapegrad/forward", "../../forward/ops_gen.go"},
		{"github.com/tapegrad/tapegrad/backward", "../../backward/ops_gen.go"},
	} {
		want, err := Generate(c.pkg, registry.List())
		if err != nil {
			t.Errorf("%s: %v", c.pkg, err)
			continue
		}
		got, err := os.ReadFile(c.file)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go generate ./forward ./backward`", c.file)
		}
	}
}

// TestOpsDocCurrent fails when the list of registered ops in package
// registry's documentation differs from the registry: run
// `go generate ./registry`.
func TestOpsDocCurrent(t *testing.T) {
	want, err := GenerateDoc(registry.List())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../registry/ops_doc_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("registry/ops_doc_gen.go is stale: run `go generate ./registry`")
	}
}

// TestEveryOpHasABuilder checks that every op registered by the library
// gets a builder in forward/ or backward/ (package nn writes the builders
// of its few ops itself).
func TestEveryOpHasABuilder(t *testing.T) {
	for _, d := range registry.List() {
		switch d.Package() {
		case "github.com/tapegrad/tapegrad/forward", "github.com/tapegrad/tapegrad/backward", "github.com/tapegrad/tapegrad/nn":
		default:
			t.Errorf("op %s is registered by %q, which gets no generated builders", d.Name, d.Package())
		}
	}
}
