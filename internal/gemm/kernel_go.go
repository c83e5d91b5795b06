package gemm

// kernelGo is the portable micro-kernel (see kernelFunc). It works on the
// same packed panels as the assembly kernels, in strips of 2 rows × 4
// columns, so that the eight accumulators and six operands fit in the
// fifteen floating-point registers Go's amd64 ABI leaves free.
func kernelGo[T Float](kc int, a, b, c []T, ldc int, alpha, beta T) {
	nr := len(b) / kc
	a = a[:kc*mr]
	b = b[:kc*nr]
	for i0 := 0; i0 < mr; i0 += 2 {
		for j0 := 0; j0 < nr; j0 += 4 {
			var c00, c01, c02, c03 T
			var c10, c11, c12, c13 T
			ai, bj := i0, j0
			for range kc {
				av := a[ai : ai+2 : ai+2]
				bv := b[bj : bj+4 : bj+4]
				a0, a1 := av[0], av[1]
				b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
				ai += mr
				bj += nr
			}
			store4(c[i0*ldc+j0:], alpha, beta, c00, c01, c02, c03)
			store4(c[(i0+1)*ldc+j0:], alpha, beta, c10, c11, c12, c13)
		}
	}
}

// store4 writes alpha*acc + beta*c into four consecutive elements of c,
// without reading c when beta is 0.
func store4[T Float](c []T, alpha, beta T, x0, x1, x2, x3 T) {
	c = c[:4:4]
	if beta == 0 {
		c[0], c[1], c[2], c[3] = alpha*x0, alpha*x1, alpha*x2, alpha*x3
		return
	}
	c[0] = alpha*x0 + beta*c[0]
	c[1] = alpha*x1 + beta*c[1]
	c[2] = alpha*x2 + beta*c[2]
	c[3] = alpha*x3 + beta*c[3]
}
