//go:build amd64 && !noasm

package gemm

// goTwins is false: the assembly routines are the real ones.
const goTwins = false
