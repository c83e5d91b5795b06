package main

import (
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
)

// The tests run with the tapes' buffer poisoning on (autodiff.PoisonEnv).
func TestMain(m *testing.M) { testutil.MainPoisoned(m) }
