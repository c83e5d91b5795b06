package dwconv

// The assembly (avx2_amd64.s, avx512_amd64.s), the Go declarations of
// its kernels (avx2_amd64.go, avx512_amd64.go) and the kernels' pixel
// blocks (blocks.go) are written by asmgen.
//go:generate go run ./asmgen
