package safetensors

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gorgonia.org/tensor"
)

// TestWriteFileSyncError makes the fsync of the temporary file fail (a
// full disk or an I/O error reported only then) and checks that WriteFile
// returns the error naming the path, keeps the old file and removes the
// temporary one.
func TestWriteFileSyncError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	old := map[string]*tensor.Dense{"w": mustNew(t, []int{2}, []float32{1, 2})}
	if err := WriteFile(path, old, map[string]string{"step": "1"}); err != nil {
		t.Fatal(err)
	}
	for _, cause := range []error{syscall.ENOSPC, syscall.EIO} {
		saved := syncFile
		syncFile = func(*os.File) error { return cause }
		err := WriteFile(path, map[string]*tensor.Dense{"w": mustNew(t, []int{3}, []float32{7, 8, 9})}, nil)
		syncFile = saved
		t.Logf("WriteFile: %v", err)
		if err == nil || !errors.Is(err, cause) || !strings.Contains(err.Error(), path) {
			t.Fatalf("error %v: want one wrapping %v that names %s", err, cause, path)
		}
		ts, md, err := ReadFile(path)
		if err != nil || md["step"] != "1" || !sameBits(ts["w"], old["w"]) {
			t.Fatalf("old file changed: %v %v %v", ts, md, err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("directory holds %v, want only ckpt.safetensors", names)
		}
	}
}
