// Package gemm is tapegrad's general matrix multiply:
//
//	C = alpha*op(A)*op(B) + beta*C,   op(X) = X or Xᵀ,
//
// for row-major float32 and float64 matrices with arbitrary row strides.
//
// # Algorithm
//
// The algorithm follows BLIS. For each block of NC columns of C and each
// block of KC steps of the inner dimension, a kc×nc panel of op(B) is packed
// into NR-column micro-panels; for each block of MC rows an mc×kc panel of
// op(A) is packed into MR-row micro-panels (sized for the L2 cache); then a
// register-blocked micro-kernel multiplies one A micro-panel by one B
// micro-panel (kept in L1) into an MR×NR tile of C. Tiles at the right and
// bottom edges run the same kernel on a small buffer, so the micro-kernel
// always works on full tiles. When op(B)'s packed column block for the
// whole inner dimension is small (up to 4 MiB, typical of convolutions,
// where n is the channel count), all of it is packed first and each A row
// block is swept once with its C block kept in cache.
//
// On amd64 CPUs with AVX2 and FMA the micro-kernels are Go assembly:
// 6×16 for float32 and 6×8 for float64, twelve YMM accumulators updated
// with VFMADD231PS/PD from broadcast loads of A; packing uses assembly
// too (a 6×8 register transpose for A, 64-byte row copies for B).
// Variants with A at a stride compute the 2- and 4-row tiles at the
// bottom edge straight into C, and read a stored Aᵀ in place (when a Rows
// B has a single row block: a convolution's filter gradient, A = dYᵀ); for
// every element of C they perform the full kernel's operations in the
// same order. The assembly uses VEX encodings only: a legacy SSE
// instruction while the upper YMM halves are dirty costs a state
// transition on some CPUs (it made the masked Aᵀ packing 30–70 times
// slower here).
// Elsewhere, without those features at run time, or under the noasm build
// tag, portable Go with the same blocking is used; the two agree up to
// rounding (the assembly fuses multiply and add).
//
// # Gathered operands
//
// GemmRowsA and GemmRowsB take one operand as Rows: rows gathered from a
// backing slice in segments (an im2col matrix, without building it). The
// float32 and float64 assembly kernels read a Rows A in place through a
// table of segment addresses, its k blocks aligned to segments; a Rows B
// is gathered straight into the packed panels, each micro-panel right
// before its kernels when there is a single row block.
//
// # Threads and determinism
//
// Threads split C into a grid of row and column ranges aligned to the
// micro-tile, never the inner dimension, and the inner dimension is cut into
// blocks that depend only on k. Every element of C therefore sees the same
// operations in the same order whatever the thread count, the loop order
// or the blocking of rows and columns: results are bit-identical for any
// number of threads. Each range gets at least about 2 MFLOP of work, so
// small products run on fewer goroutines than asked for; large row ranges
// are cut into a few pieces that the goroutines take as they become free
// (internal/parallel.Each), so that a late or preempted thread holds up
// one piece, not a fixed share.
//
// # Memory
//
// Packing buffers are cached: Gemm takes a Workspace from an internal free
// list and GemmWS uses one the caller owns, so steady-state calls do not
// allocate. A call split across threads copies its problem into the
// workspace and hands internal/parallel a function built once per
// workspace, so it allocates nothing of its own either; a Rows operand's
// Offsetter is the caller's (a pointer to a struct it keeps). A Workspace
// keeps, per thread and element type, at most about 4 MiB for B and
// 150 KiB for A, plus the segment offsets of a Rows operand's current row
// block.
package gemm
