package backward_test

import (
	"fmt"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Scaffolding the gradient tests of the op families share. It imports
// gradcheck, so it cannot live in internal/testutil (which the internal
// tests of package forward import, and gradcheck imports forward).

// checkSamples runs the first- and second-order gradient checks
// (gradcheck.CheckSample) on every configuration the Samples generators
// of ops give for each generator seed, one subtest per op, seed and
// sample. Each op must have a gradient function and at least minSamples
// configurations per seed, none of them skipping the second order. The
// checks use checkSeed for their random upstream gradients, or the
// generator seed when checkSeed is 0.
func checkSamples(t *testing.T, ops []string, genSeeds []int64, checkSeed int64, minSamples int) {
	t.Helper()
	for _, op := range ops {
		def := registrytest.GradOp(t, op)
		for _, seed := range genSeeds {
			samples, err := gradcheck.OpSamples(def, seed, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(samples) < max(minSamples, 1) {
				t.Fatalf("%s: only %d samples (seed %d)", op, len(samples), seed)
			}
			opts := gradcheck.Options{Seed: checkSeed}
			if checkSeed == 0 {
				opts.Seed = seed
			}
			prefix := op + "/"
			if len(genSeeds) > 1 {
				prefix = fmt.Sprintf("%s/seed%d/", op, seed)
			}
			for _, s := range samples {
				t.Run(prefix+s.Name, func(t *testing.T) {
					if s.NoSecondOrder != "" {
						t.Fatalf("second order skipped: %s", s.NoSecondOrder)
					}
					if err := gradcheck.CheckSample(def, s, opts); err != nil {
						t.Fatal(err)
					}
				})
			}
		}
	}
}

// checkOrders runs the first-order check (gradcheck.Check) and the
// second-order check (gradcheck.CheckSecondOrder) of f at in, failing t
// with what as context. opts holds the options of both checks, or of the
// first and the second.
func checkOrders(t *testing.T, what string, f gradcheck.Func, in []*tensor.Dense, opts ...gradcheck.Options) {
	t.Helper()
	if what == "" {
		what = "gradcheck"
	}
	if err := gradcheck.Check(f, in, opts[0]); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := gradcheck.CheckSecondOrder(f, in, opts[len(opts)-1]); err != nil {
		t.Fatalf("%s (second order): %v", what, err)
	}
}
