//go:build !mpi

package main

import (
	"bytes"
	"testing"
)

// TestDistSingleRank: -dist on one rank (the default build's
// single-process communicator) trains exactly as without it: the DDP's
// copies of the gradients through the buckets change no bit.
func TestDistSingleRank(t *testing.T) {
	ca := smallConfig(t.TempDir(), 1)
	la := mustRun(t, ca)
	cb := smallConfig(t.TempDir(), 1)
	cb.dist = distConfig{enabled: true, bucketKB: 64, threadsSet: true}
	if lb := mustRun(t, cb); la != lb {
		t.Fatalf("without -dist %q, with -dist %q", la, lb)
	}
	sameCheckpoints(t, "with -dist", ca.checkpoint, cb.checkpoint)
	cb.dist.bucketKB = 0
	var out, errs bytes.Buffer
	if err := run(cb, &out, &errs); err == nil {
		t.Error("-bucket-kb 0 accepted")
	}
}
