// Package golden reads golden-case files (the format of
// testdata/golden/FORMAT.md) and checks each case against the op registry
// on an autodiff tape. cmd/opcheck is its command-line front end.
//
// A case file is decoded case by case: a malformed case (missing op, a data
// length that does not fill the shape, an unknown dtype, ...) is reported
// with its file, index and name and does not stop the others. Running a case
// never panics: a panic anywhere in the op, its gradient or the runner is
// recovered and reported as a failure of that case.
//
// Tolerances: a float element passes when |got-want| <= atol + rtol*|want|;
// NaN matches only NaN, an infinite value only the same infinity; integer
// and bool tensors compare exactly. A case that gives no rtol (or no atol)
// uses the default for the dtype of each compared tensor: DefaultTol.
package golden
