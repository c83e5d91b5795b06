//go:build !amd64 || noasm || gccgo || safe

package dwconv

// twinsBuild is true where the Go twins of the assembly kernels are
// built: the tests' assembly mode runs them (kernel_noasm.go).
const twinsBuild = true
