package main

import (
	"os"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
)

// TestMain switches on the tapes' buffer poisoning (a debug option, off by
// default) for these tests: a kernel that reads an output buffer it has
// not written sees NaN, so the tests catch it.
func TestMain(m *testing.M) {
	os.Setenv(autodiff.PoisonEnv, "1")
	os.Exit(m.Run())
}
