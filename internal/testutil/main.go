package testutil

import (
	"flag"
	"os"
	"testing"
)

// PoisonEnv is autodiff.PoisonEnv (repeated here: autodiff's own tests
// import this package).
const PoisonEnv = "TAPEGRAD_POISON"

// MainPoisoned is a TestMain for the packages whose tests run tapes: it
// switches the tapes' buffer poisoning on (autodiff.PoisonEnv) before any
// test runs, so a kernel that reads an output it has not written fails its
// tests, then runs them. Poisoning stays off when benchmarks run
// (-test.bench), whose timings it would distort, and when the variable is
// already set (TAPEGRAD_POISON=0 go test ... runs the tests without it).
func MainPoisoned(m *testing.M) {
	flag.Parse()
	if _, set := os.LookupEnv(PoisonEnv); !set {
		if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
			os.Setenv(PoisonEnv, "1")
		}
	}
	os.Exit(m.Run())
}
