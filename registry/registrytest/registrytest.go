// Package registrytest runs registered ops in tests: kernel contexts with
// internal/testutil's NaN-poisoning allocator, running an op by name, and
// looking up an op that must have a gradient function. It is imported only
// from _test.go files (of packages forward, backward and above); the
// registry-free scaffolding (tensors, comparisons, error checks, the -long
// flag) is in internal/testutil, which sits below package registry.
package registrytest

import (
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
)

// KC returns a kernel context with a PoisonAlloc and the given thread
// budget, without a random source.
func KC(threads int) *registry.KernelCtx {
	return &registry.KernelCtx{Alloc: testutil.PoisonAlloc{}, Threads: threads}
}

// SeededKC is KC with a random source seeded with seed, for the ops that
// draw random numbers.
func SeededKC(threads int, seed int64) *registry.KernelCtx {
	kc := KC(threads)
	kc.Rand = rand.New(rand.NewSource(seed))
	return kc
}

// RunKC runs the registered op named op on kc (attrs are normalised by
// registry.Run). A missing op fails the test.
func RunKC(t testing.TB, kc *registry.KernelCtx, op string, attrs any, in ...*tensor.Dense) ([]*tensor.Dense, error) {
	t.Helper()
	def, err := registry.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	return registry.Run(def, kc, attrs, in)
}

// Run runs op on KC(threads).
func Run(t testing.TB, op string, attrs any, threads int, in ...*tensor.Dense) ([]*tensor.Dense, error) {
	t.Helper()
	return RunKC(t, KC(threads), op, attrs, in...)
}

// MustRunKC is RunKC failing the test on error.
func MustRunKC(t testing.TB, kc *registry.KernelCtx, op string, attrs any, in ...*tensor.Dense) []*tensor.Dense {
	t.Helper()
	out, err := RunKC(t, kc, op, attrs, in...)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return out
}

// MustRun is Run failing the test on error.
func MustRun(t testing.TB, op string, attrs any, threads int, in ...*tensor.Dense) []*tensor.Dense {
	t.Helper()
	return MustRunKC(t, KC(threads), op, attrs, in...)
}

// GradOp returns the registered op named name, failing the test unless it
// exists and has a gradient function.
func GradOp(t testing.TB, name string) *registry.OpDef {
	t.Helper()
	d, err := registry.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if d.GradKind() != registry.GradDefined {
		t.Fatalf("%s: gradient state %v, want a gradient function", name, d.GradKind())
	}
	return d
}
