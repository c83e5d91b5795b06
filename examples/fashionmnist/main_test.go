package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/safetensors"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
)

func smallConfig(dir string, epochs int) config {
	return config{dataDir: "data", epochs: epochs, batch: 32, lr: 0.002, threads: 2, seed: 3, maxTrain: 256,
		checkpoint: filepath.Join(dir, "ckpt.safetensors"), plot: filepath.Join(dir, "curves.png")}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestTrainResumeBitIdentical trains 2 epochs straight, and 1 epoch then a
// resumed second epoch: the checkpoints (parameters, batch-norm statistics,
// optimizer state) and the final accuracy must be identical to the bit.
func TestTrainResumeBitIdentical(t *testing.T) {
	for _, qat := range []bool{false, true} {
		ca := smallConfig(t.TempDir(), 2)
		ca.qat = qat
		la := mustRun(t, ca)
		cb := smallConfig(t.TempDir(), 2)
		cb.qat, cb.stopAfter = qat, 1 // interrupted after epoch 1
		mustRun(t, cb)
		cb.stopAfter, cb.resume = 0, true
		lb := mustRun(t, cb)
		if !strings.HasPrefix(la, "test accuracy: 0.") {
			t.Fatalf("last line %q", la)
		}
		if la != lb {
			t.Fatalf("qat=%v: straight run %q, resumed run %q", qat, la, lb)
		}
		sameCheckpoints(t, fmt.Sprintf("qat=%v, resumed", qat), ca.checkpoint, cb.checkpoint)
		_, ma, err := safetensors.ReadFile(ca.checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		_, mb, err := safetensors.ReadFile(cb.checkpoint)
		if err != nil {
			t.Fatal(err)
		}
		if ma["epochs"] != "2" || mb["epochs"] != "2" {
			t.Fatalf("epochs metadata %q %q", ma["epochs"], mb["epochs"])
		}
		if st, err := os.Stat(ca.plot); err != nil || st.Size() == 0 {
			t.Fatalf("no plot written: %v", err)
		}
	}
}

// rawBytes returns the IEEE-754 bits of f, so NaNs and signed zeros
// compare exactly.
func rawBytes(f []float32) []byte {
	out := make([]byte, 0, 4*len(f))
	for _, v := range f {
		u := math.Float32bits(v)
		out = append(out, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
	}
	return out
}

func TestBadFlags(t *testing.T) {
	var out, errs bytes.Buffer
	c := smallConfig(t.TempDir(), 0)
	if err := run(c, &out, &errs); err == nil {
		t.Fatal("0 epochs accepted")
	}
	c = smallConfig(t.TempDir(), 1)
	c.dataDir = t.TempDir()
	if err := run(c, &out, &errs); err == nil {
		t.Fatal("missing data accepted")
	}
	c = smallConfig(t.TempDir(), 1)
	c.resume = true
	if err := run(c, &out, &errs); err == nil || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("resume without a checkpoint: %v", err)
	}
}

// TestEvaluatesOncePerEpoch: the test set is evaluated once per epoch, the
// last epoch's accuracy being the final line's, not once more at the end;
// a resumed run with no epoch left evaluates once.
func TestEvaluatesOncePerEpoch(t *testing.T) {
	n := 0
	defer func(f func(nn.Module, *autodiff.Tape, *data.Loader, bool) (float64, error)) { evaluateFn = f }(evaluateFn)
	evaluateFn = func(m nn.Module, tp *autodiff.Tape, l *data.Loader, mirror bool) (float64, error) {
		n++
		return evaluate(m, tp, l, mirror)
	}
	dir := t.TempDir()
	c := smallConfig(dir, 2)
	var out, errs bytes.Buffer
	if err := run(c, &out, &errs); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("2 epochs: %d evaluations, want 2", n)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last, epoch := lines[len(lines)-1], lines[len(lines)-2]
	if acc := strings.TrimPrefix(last, "test accuracy: "); acc == last || !strings.HasSuffix(epoch, "test acc "+acc) {
		t.Errorf("the final line %q does not repeat the last epoch's accuracy (%q)", last, epoch)
	}
	n = 0
	c.resume = true // the checkpoint has both epochs: nothing left to train
	out.Reset()
	if err := run(c, &out, &errs); err != nil {
		t.Fatal(err)
	}
	if n != 1 || lastLine(out.String()) != last {
		t.Errorf("resumed with no epoch left: %d evaluations, last line %q; want 1 and %q", n, lastLine(out.String()), last)
	}
}
