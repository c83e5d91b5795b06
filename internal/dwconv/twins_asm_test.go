//go:build amd64 && !noasm && !gccgo && !safe

package dwconv

// twinsBuild is false where the assembly kernels are built: the assembly
// mode runs them if the CPU has them.
const twinsBuild = false
