// Package testutil holds the scaffolding the tests of tapegrad share:
// NaN-poisoning, pooling and recycling allocators, building tensors and
// random values, float comparisons with tolerances, bit-for-bit
// comparisons, error checks, the kernel packages' Go/assembly modes, and
// the -long flag. Like every internal package it imports only internal
// packages, so the kernel packages' tests can use it; running a
// registered op by name is in registry/registrytest.
//
// It is imported only from _test.go files. It must not import package
// forward, not even indirectly, because the internal tests of forward
// (package forward) import it; since autodiff and autodiff/gradcheck import
// forward, it imports neither. Gradient-check scaffolding over op samples
// therefore lives with the tests that use it (backward/common_test.go).
package testutil
