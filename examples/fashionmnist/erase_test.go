package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestEraseFlag: -erase reaches the loader (it changes the training loss,
// and a resumed run with erasing ends bit-identical to a straight one),
// and a value outside [0, 1] is refused with nn/data's message.
func TestEraseFlag(t *testing.T) {
	firstLoss := regexp.MustCompile(`epoch 1/2: loss ([0-9.]+)`)
	lossOf := func(erase float64) (string, string) {
		c := smallConfig(t.TempDir(), 2)
		c.flip, c.erase = true, erase
		var out, errs bytes.Buffer
		if err := run(c, &out, &errs); err != nil {
			t.Fatal(err)
		}
		m := firstLoss.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no epoch 1 line in %q", out.String())
		}
		return m[1], lastLine(out.String())
	}
	plain, _ := lossOf(0)
	erased, straight := lossOf(0.5)
	if plain == erased {
		t.Errorf("-erase 0.5 trained like -erase 0 (epoch 1 loss %s)", plain)
	}

	c := smallConfig(t.TempDir(), 2)
	c.flip, c.erase, c.stopAfter = true, 0.5, 1
	mustRun(t, c)
	c.stopAfter, c.resume = 0, true
	if resumed := mustRun(t, c); resumed != straight {
		t.Errorf("resumed run with -erase ends %q, the straight one %q", resumed, straight)
	}

	c = smallConfig(t.TempDir(), 1)
	c.erase = 1.5
	var out, errs bytes.Buffer
	if err := run(c, &out, &errs); err == nil || !strings.Contains(err.Error(), "Augment.Erase 1.5 must be a probability in [0, 1]") {
		t.Errorf("-erase 1.5: error %v", err)
	}
}
