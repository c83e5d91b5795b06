//go:build mpi

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mpiExample builds the example with MPI once per test binary run.
func mpiExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fashionmnist-mpi")
	out, err := exec.Command("go", "build", "-tags", "mpi", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -tags mpi: %v\n%s", err, out)
	}
	return bin
}

// mpirunExample runs the example on 2 ranks and returns its output and
// exit error.
func mpirunExample(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all := append([]string{"--allow-run-as-root", "--oversubscribe", "-np", "2", bin, "-dist", "-data", "data", "-threads", "1",
		"-max-train", "256", "-seed", "3", "-progress=false"}, args...)
	cmd := exec.CommandContext(ctx, "mpirun", all...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun still running after 5 minutes:\n%s", buf.String())
	}
	return buf.String(), err
}

// TestMPITrainResume trains on 2 ranks: rank 0 alone prints (one "test
// accuracy" line, last) and writes the checkpoint; a run interrupted after
// one epoch and resumed on 2 ranks ends bit-identical to a straight run;
// a global batch the ranks cannot share evenly is an error that ends
// every rank.
func TestMPITrainResume(t *testing.T) {
	bin := mpiExample(t)
	a, b := t.TempDir(), t.TempDir()
	ckA, ckB := filepath.Join(a, "ck.safetensors"), filepath.Join(b, "ck.safetensors")
	outA, err := mpirunExample(t, bin, "-epochs", "2", "-batch", "32", "-checkpoint", ckA, "-plot", filepath.Join(a, "p.png"))
	if err != nil {
		t.Fatalf("%v:\n%s", err, outA)
	}
	if !strings.HasPrefix(lastLine(outA), "test accuracy: 0.") || strings.Count(outA, "test accuracy") != 1 || strings.Count(outA, "epoch 2/2") != 1 {
		t.Fatalf("want one rank's output ending in the test accuracy:\n%s", outA)
	}
	if !strings.Contains(outA, "2 ranks × 16 (MPI)") || !strings.Contains(outA, "dist: 2 ranks") {
		t.Errorf("no note on the ranks:\n%s", outA)
	}
	if _, err := os.Stat(filepath.Join(a, "p.png")); err != nil {
		t.Errorf("no plot: %v", err)
	}
	if out, err := mpirunExample(t, bin, "-epochs", "2", "-batch", "32", "-checkpoint", ckB, "-plot", "", "-stop-after", "1"); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	outB, err := mpirunExample(t, bin, "-epochs", "2", "-batch", "32", "-checkpoint", ckB, "-plot", "", "-resume")
	if err != nil {
		t.Fatalf("%v:\n%s", err, outB)
	}
	if la, lb := lastLine(outA), lastLine(outB); la != lb {
		t.Errorf("straight run %q, resumed run %q", la, lb)
	}
	sameCheckpoints(t, "resumed on 2 ranks", ckA, ckB)
	out, err := mpirunExample(t, bin, "-epochs", "1", "-batch", "33", "-checkpoint", "", "-plot", "")
	if err == nil || !strings.Contains(out, "not a multiple of the 2 ranks") {
		t.Errorf("-batch 33 on 2 ranks: %v\n%s", err, out)
	}
}
