// Package testutil holds the scaffolding the op tests of tapegrad share:
// a NaN-poisoning allocator and kernel contexts, running a registered op,
// building tensors and random values, float comparisons with tolerances,
// bit-for-bit comparisons, error checks, and the -long flag.
//
// It is imported only from _test.go files. It must not import package
// forward, not even indirectly, because the internal tests of forward
// (package forward) import it; since autodiff and autodiff/gradcheck import
// forward, it imports neither. Gradient-check scaffolding over op samples
// therefore lives with the tests that use it (backward/common_test.go).
package testutil
