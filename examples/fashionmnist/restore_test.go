package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/internal/safetensors"
)

// TestRestoreRejectsBadHistoryCount: a corrupt or crafted checkpoint's
// history.count is an error, not a panic or a huge allocation (issue 15
// item 8).
func TestRestoreRejectsBadHistoryCount(t *testing.T) {
	meta := func(epochs, count string) map[string]string {
		return map[string]string{"epochs": epochs,
			"history.count": count, "history.0": "1 0.5 0.5 1", "history.1": "0.5 0.6 0.6 1"}
	}
	restoreNoPanic := func(m map[string]string) (n int, h []epochStats, err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("restore(epochs %s, history.count %s) panicked: %v", m["epochs"], m["history.count"], r)
			}
		}()
		return restore(m)
	}
	for _, c := range []struct{ epochs, count string }{
		{"2", "-1"},
		{"2", strconv.Itoa(1 << 62)},
		{"2", "3"},
		{"-1", "0"},
		{strconv.Itoa(1 << 40), strconv.Itoa(1 << 40)},
	} {
		_, _, err := restoreNoPanic(meta(c.epochs, c.count))
		if err == nil || !strings.Contains(err.Error(), "checkpoint metadata") {
			t.Fatalf("restore(epochs %s, history.count %s): err = %v, want a checkpoint metadata error", c.epochs, c.count, err)
		}
	}
	n, h, err := restoreNoPanic(meta("2", "2"))
	if err != nil || n != 2 || len(h) != 2 || h[1].Loss != 0.5 {
		t.Fatalf("valid metadata: %d %v %v", n, h, err)
	}
}

// loaderStatePrefix is where nn.SaveCheckpoint keeps the loader's state.
const loaderStatePrefix = "tapegrad.state/loader/"

// rewriteMeta rewrites the metadata of the checkpoint at path with edit.
func rewriteMeta(t *testing.T, path string, edit func(map[string]string)) {
	t.Helper()
	tensors, md, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edit(md)
	if err := safetensors.WriteFile(path, tensors, md); err != nil {
		t.Fatal(err)
	}
}

// toLegacy turns a checkpoint into the format of the earlier versions of
// this program: the loader's position in the run's own metadata
// ("loader.seed", "loader.epoch", "loader.pos"), no loader state.
func toLegacy(md map[string]string) {
	for k, v := range md {
		if rest, ok := strings.CutPrefix(k, loaderStatePrefix); ok {
			if rest == "seed" || rest == "epoch" || rest == "pos" {
				md["loader."+rest] = v
			}
			delete(md, k)
		}
	}
}

// TestResumeCheckpointFormats: the checkpoint holds the loader's position
// as the loader's state (one nn.SaveCheckpoint call), not as the run's own
// "loader.*" metadata; a checkpoint of the earlier format (those keys, no
// loader state) still resumes, bit-identical with a straight run; one with
// neither, or with a malformed position, is an error naming the problem.
func TestResumeCheckpointFormats(t *testing.T) {
	ca := smallConfig(t.TempDir(), 2)
	la := mustRun(t, ca)
	_, md, err := safetensors.ReadFile(ca.checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"seed", "epoch", "pos", "examples", "batch_size"} {
		if _, ok := md[loaderStatePrefix+k]; !ok {
			t.Errorf("the checkpoint holds no loader state %q", k)
		}
	}
	for _, k := range legacyLoaderKeys {
		if _, ok := md[k]; ok {
			t.Errorf("the checkpoint holds the earlier format's %q", k)
		}
	}

	cb := smallConfig(t.TempDir(), 2)
	cb.stopAfter = 1
	mustRun(t, cb)
	saved, savedMeta, err := safetensors.ReadFile(cb.checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	restoreSaved := func() {
		t.Helper()
		if err := safetensors.WriteFile(cb.checkpoint, saved, savedMeta); err != nil {
			t.Fatal(err)
		}
	}
	cb.stopAfter, cb.resume = 0, true
	for _, c := range []struct {
		name string
		edit func(map[string]string)
		want string
	}{
		{"no loader position", func(md map[string]string) {
			toLegacy(md)
			for _, k := range legacyLoaderKeys {
				delete(md, k)
			}
		}, `holds no state "loader"`},
		{"malformed earlier-format position", func(md map[string]string) {
			toLegacy(md)
			md["loader.pos"] = "x"
		}, "loader.pos"},
		{"earlier-format position off the batch grid", func(md map[string]string) {
			toLegacy(md)
			md["loader.pos"] = "5"
		}, "invalid position"},
	} {
		restoreSaved()
		rewriteMeta(t, cb.checkpoint, c.edit)
		var out, errs bytes.Buffer
		err := run(cb, &out, &errs)
		if err == nil || !strings.Contains(err.Error(), "resume") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a resume error saying %q", c.name, err, c.want)
		}
	}

	restoreSaved()
	rewriteMeta(t, cb.checkpoint, toLegacy)
	if lb := mustRun(t, cb); la != lb || !strings.HasPrefix(la, "test accuracy: 0.") {
		t.Fatalf("straight run %q, resumed from the earlier format %q", la, lb)
	}
	sameCheckpoints(t, "resumed from the earlier format", ca.checkpoint, cb.checkpoint)
}
