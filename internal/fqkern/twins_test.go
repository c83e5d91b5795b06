//go:build !amd64 || noasm || gccgo || safe

package fqkern

// twinsOnly is true where the routines are their Go twins, which run on
// every CPU.
const twinsOnly = true
