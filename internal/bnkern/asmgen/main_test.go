package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesUpToDate checks that the assembly and declarations in
// internal/bnkern are what this generator writes (run go generate
// ./internal/bnkern/... after changing it).
func TestGeneratedFilesUpToDate(t *testing.T) {
	for _, f := range files {
		asm, stubs, err := generate(f.zmm)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for name, want := range map[string][]byte{f.name + "_amd64.s": asm, f.name + "_amd64.go": stubs} {
			got, err := os.ReadFile(filepath.Join("..", name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("internal/bnkern/%s is not what asmgen writes: run go generate ./internal/bnkern/...", name)
			}
		}
	}
}
