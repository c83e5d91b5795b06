package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesUpToDate checks that the assembly, declarations and
// block constants in internal/dwconv are what this generator writes (run
// go generate ./internal/dwconv/... after changing it).
func TestGeneratedFilesUpToDate(t *testing.T) {
	files, err := generateAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join("..", f.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.data) {
			t.Errorf("internal/dwconv/%s is not what asmgen writes: run go generate ./internal/dwconv/...", f.name)
		}
	}
}
