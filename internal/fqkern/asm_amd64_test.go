//go:build amd64 && !noasm && !gccgo && !safe

package fqkern

// twinsOnly is false where the routines are assembly: they run only on
// CPUs with AVX2.
const twinsOnly = false
