package main

import (
	"strconv"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/nn/data"
)

// TestRestoreRejectsBadHistoryCount: a corrupt or crafted checkpoint's
// history.count is an error, not a panic or a huge allocation (issue 15
// item 8).
func TestRestoreRejectsBadHistoryCount(t *testing.T) {
	x := tensor.New(tensor.WithShape(4, 1), tensor.WithBacking([]float32{1, 2, 3, 4}))
	y := tensor.New(tensor.WithShape(4), tensor.WithBacking([]int32{0, 1, 0, 1}))
	l, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	meta := func(epochs, count string) map[string]string {
		return map[string]string{"epochs": epochs, "loader.seed": "1", "loader.epoch": "0", "loader.pos": "0",
			"history.count": count, "history.0": "1 0.5 0.5 1", "history.1": "0.5 0.6 0.6 1"}
	}
	restoreNoPanic := func(m map[string]string) (n int, h []epochStats, err error) {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("restore(epochs %s, history.count %s) panicked: %v", m["epochs"], m["history.count"], r)
			}
		}()
		return restore(m, l)
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
