// Package gemm is tapegrad's general matrix multiply:
//
//	C = alpha*op(A)*op(B) + beta*C,   op(X) = X or Xᵀ,
//
// for row-major float32 and float64 matrices with arbitrary row strides.
//
// The algorithm follows BLIS. For each block of NC columns of C and each
// block of KC steps of the inner dimension, a kc×nc panel of op(B) is packed
// into NR-column micro-panels; for each block of MC rows an mc×kc panel of
// op(A) is packed into MR-row micro-panels (sized for the L2 cache); then a
// register-blocked micro-kernel multiplies one A micro-panel by one B
// micro-panel (kept in L1) into an MR×NR tile of C. Tiles at the right and
// bottom edges go through a small buffer, so the micro-kernel always works
// on full tiles.
//
// On amd64 CPUs with AVX2 and FMA the micro-kernels are Go assembly:
// 6×16 for float32 and 6×8 for float64, twelve YMM accumulators updated
// with VFMADD231PS/PD from broadcast loads of A. Elsewhere, without those
// features at run time, or under the noasm build tag, a portable Go
// micro-kernel with the same blocking is used; the two agree up to
// rounding (the assembly fuses multiply and add).
//
// Threads split C into a grid of row and column ranges aligned to the
// micro-tile, never the inner dimension, and the inner dimension is cut into
// blocks that depend only on k. Every element of C therefore sees the same
// operations in the same order whatever the thread count, and results are
// bit-identical for any number of threads.
//
// Packing buffers are cached: Gemm takes a Workspace from an internal free
// list and GemmWS uses one the caller owns, so steady-state calls do not
// allocate.
package gemm
