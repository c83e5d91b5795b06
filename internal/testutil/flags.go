package testutil

import (
	"flag"
)

func init() {
	if flag.Lookup("long") == nil {
		flag.Bool("long", false, "long tests: full attr grids; gradient sweep over every sample configuration and two seeds (default: at most 3 per op, one seed)")
	}
}

// Long reports whether the tests run with -long (defined here for every
// test package importing testutil).
func Long() bool {
	f := flag.Lookup("long")
	return f != nil && f.Value.String() == "true"
}
