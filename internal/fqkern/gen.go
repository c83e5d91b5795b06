package fqkern

// The assembly (avx2_amd64.s, avx512_amd64.s) and the Go declarations of
// its routines (avx2_amd64.go, avx512_amd64.go) are written by asmgen.
//go:generate go run ./asmgen
