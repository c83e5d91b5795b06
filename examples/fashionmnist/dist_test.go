//go:build !mpi

package main

import (
	"bytes"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/safetensors"
)

// TestDistSingleRank: -dist on one rank (the default build's
// single-process communicator) trains exactly as without it: the DDP's
// copies of the gradients through the buckets change no bit.
func TestDistSingleRank(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	var outA, outB, errs bytes.Buffer
	ca := smallConfig(a, 1)
	if err := run(ca, &outA, &errs); err != nil {
		t.Fatal(err)
	}
	cb := smallConfig(b, 1)
	cb.dist = distConfig{enabled: true, bucketKB: 64, threadsSet: true}
	if err := run(cb, &outB, &errs); err != nil {
		t.Fatal(err)
	}
	if la, lb := lastLine(outA.String()), lastLine(outB.String()); la != lb {
		t.Fatalf("without -dist %q, with -dist %q", la, lb)
	}
	ta, _, err := safetensors.ReadFile(ca.checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := safetensors.ReadFile(cb.checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	if len(ta) != len(tb) || len(ta) == 0 {
		t.Fatalf("checkpoints hold %d and %d tensors", len(ta), len(tb))
	}
	for name, x := range ta {
		y, ok := tb[name]
		if !ok || x.Dtype() != y.Dtype() || (x.Dtype() == tensor.Float32 && !bytes.Equal(rawBytes(x.Float32s()), rawBytes(y.Float32s()))) {
			t.Errorf("tensor %s differs with -dist", name)
		}
	}
	cb.dist.bucketKB = 0
	if err := run(cb, &outB, &errs); err == nil {
		t.Error("-bucket-kb 0 accepted")
	}
}
