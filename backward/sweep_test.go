package backward_test

import (
	"flag"
	"fmt"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/registry"

	_ "github.com/tapegrad/tapegrad/autodiff" // registers every op and gradient
)

// The -long flag enables the long gradient sweep: every configuration of
// every op, for two generator seeds. It is defined here unless another
// test file of the package defined it first (do the same there: look it
// up before defining it); sweepLong reads it.
func init() {
	if flag.Lookup("long") == nil {
		flag.Bool("long", false, "long tests: gradient sweep over every sample configuration and two seeds (default: at most 3 per op, one seed)")
	}
}

// sweepLong reports whether -long was given.
func sweepLong() bool {
	f := flag.Lookup("long")
	return f != nil && f.Value.String() == "true"
}

// quickSamples bounds the configurations per op of the default sweep.
const quickSamples = 3

// TestRegistryComplete checks that every registered op declares a
// gradient state (a gradient, not differentiable, or no gradient with a
// reason).
func TestRegistryComplete(t *testing.T) {
	if err := registry.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestGradcheckSweep runs the first- and second-order gradient checks of
// every registered op over the configurations of its Samples generator,
// as cmd/gradcheck does: one subtest per op and sample. A differentiable
// op without samples fails.
func TestGradcheckSweep(t *testing.T) {
	max, seeds := quickSamples, []int64{1}
	if sweepLong() {
		max, seeds = 0, []int64{1, 2}
	}
	for _, def := range registry.List() {
		t.Run(def.Name, func(t *testing.T) {
			switch def.GradKind() {
			case registry.GradUnset:
				t.Fatalf("%s has no gradient state", def.Name)
			case registry.GradZero, registry.GradNone:
				t.Logf("%s is not differentiable: nothing to check", def.Name)
				return
			}
			if def.Samples == nil {
				t.Fatalf("%s is differentiable but has no Samples generator", def.Name)
			}
			for _, seed := range seeds {
				samples, err := gradcheck.OpSamples(def, seed, max)
				if err != nil {
					t.Fatal(err)
				}
				if len(samples) == 0 {
					t.Fatalf("%s: the Samples generator returned no configuration", def.Name)
				}
				for _, s := range samples {
					name := s.Name
					if len(seeds) > 1 {
						name = fmt.Sprintf("seed%d/%s", seed, s.Name)
					}
					t.Run(name, func(t *testing.T) {
						if err := gradcheck.CheckSample(def, s, gradcheck.Options{Seed: seed}); err != nil {
							t.Error(err)
						}
					})
				}
			}
		})
	}
}
