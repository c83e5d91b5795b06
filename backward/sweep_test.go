package backward_test

import (
	"fmt"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"

	_ "github.com/tapegrad/tapegrad/autodiff" // registers every op and gradient
)

// With -long (testutil.Long) the sweep covers every configuration of
// every op, for two generator seeds; by default at most quickSamples per
// op, one seed.

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
	if testutil.Long() {
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
