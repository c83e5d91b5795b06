package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressWithoutTerminal: when the output is not a terminal (a CI log,
// `make demo | cat`), the progress is plain lines, without the carriage
// returns of a redrawn bar (issue 18 §4).
func TestProgressWithoutTerminal(t *testing.T) {
	c := smallConfig(t.TempDir(), 1)
	c.progress, c.logEvery = true, time.Nanosecond // a line at every step
	var stdout, stderr bytes.Buffer
	if err := run(c, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stdout.String() + stderr.String()
	if strings.ContainsAny(out, "\r\x1b") {
		t.Fatalf("the output has carriage returns or escape sequences:\n%q", out)
	}
	if !strings.Contains(stdout.String(), "epoch 1/1: step 1/8 loss ") || !strings.HasPrefix(lastLine(stdout.String()), "test accuracy: 0.") {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
}
