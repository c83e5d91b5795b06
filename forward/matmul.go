package forward

import (
	"sync"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Linear-algebra ops: MatMul, BiasAdd and BiasAddGrad (the gradient kernel
// of BiasAdd, kept here because it shares the reduction code of Sum).

// MatMulAttrs are the attributes of MatMul.
type MatMulAttrs struct {
	// TransposeA multiplies by the transpose of a.
	TransposeA bool `tf:"transpose_a"`
	// TransposeB multiplies by the transpose of b.
	TransposeB bool `tf:"transpose_b"`
	// GradA and GradB are TensorFlow's hints that the MatMul computes a
	// gradient (used there to pick reduced-precision modes); they are
	// accepted for compatibility and have no effect.
	GradA bool `tf:"grad_a"`
	// GradB: see GradA.
	GradB bool `tf:"grad_b"`
}

// BiasAddAttrs are the attributes of BiasAdd and BiasAddGrad.
type BiasAddAttrs struct {
	// DataFormat is "NHWC" (default: the bias runs along the last
	// dimension) or "NCHW" (along dimension 1).
	DataFormat string `tf:"data_format" default:"NHWC" allowed:"NHWC,NCHW"`
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name:    "MatMul",
		Doc:     "matrix product op(a)·op(b) of rank-2 a and b, op transposing when transpose_a/transpose_b is set",
		Inputs:  args("a", "b"),
		Outputs: args("product"),
		Attrs:   MatMulAttrs{},
		Kernels: floatKernels(matMulKernel[float32], matMulKernel[float64]),
		Samples: matMulSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "BiasAdd",
		Doc: "value + bias, the rank-1 bias added along the channel dimension of value " +
			"(last for NHWC, dimension 1 for NCHW)",
		Inputs:  args("value", "bias"),
		Outputs: args("output"),
		Attrs:   BiasAddAttrs{},
		Kernels: floatKernels(biasAddKernel[float32], biasAddKernel[float64]),
		Samples: biasAddSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name:    "BiasAddGrad",
		Doc:     "the gradient of BiasAdd's bias: out_backprop summed over every dimension but the channel one",
		Inputs:  args("out_backprop"),
		Outputs: args("output"),
		Attrs:   BiasAddAttrs{},
		Kernels: floatKernels(biasAddGradKernel[float32], biasAddGradKernel[float64]),
		Samples: biasAddGradSamples,
	})
}

// ---------------------------------------------------------------------------
// MatMul.

func matMulKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	at := attrs.(MatMulAttrs)
	a, b := in[0], in[1]
	if b.Dtype() != a.Dtype() {
		return nil, shpDtypeError("MatMul", 1, shpTFDtype(a.Dtype()), b.Dtype())
	}
	as, bs := a.Shape(), b.Shape()
	if len(as) != 2 {
		return nil, registry.Errorf(registry.ErrShape, "MatMul: In[0] is not a matrix. Instead it has shape %s", shpDebug(as))
	}
	if len(bs) != 2 {
		return nil, registry.Errorf(registry.ErrShape, "MatMul: In[1] is not a matrix. Instead it has shape %s", shpDebug(bs))
	}
	m, k := as[0], as[1]
	if at.TransposeA {
		m, k = k, m
	}
	k2, n := bs[0], bs[1]
	if at.TransposeB {
		k2, n = n, k2
	}
	if k != k2 {
		return nil, registry.Errorf(registry.ErrShape, "MatMul: Matrix size-incompatible: In[0]: %s, In[1]: %s", shpDebug(as), shpDebug(bs))
	}
	out, err := kc.Output(a.Dtype(), m, n)
	if err != nil {
		return nil, err
	}
	matmulInto(kc.NumThreads(), at.TransposeA, at.TransposeB, m, n, k,
		data[T](a), as[1], data[T](b), bs[1], data[T](out), n)
	return []*tensor.Dense{out}, nil
}

// Blocking of the portable GEMM (BLIS-style). The micro-kernel computes an
// mmMR×mmNR tile of C from packed panels; an A block of mmMC×mmKC
// elements stays in L2, a B micro-panel of mmKC×mmNR in L1.
const (
	mmMR = 2
	mmNR = 4
	mmKC = 256
	mmMC = 128
	mmNC = 1024
	// mmSerialFlops: below this many multiply-adds one thread does it all.
	mmSerialFlops = 1 << 17
)

// matmulInto computes c = op(a)·op(b) for row-major matrices with row
// strides lda, ldb and ldc: op(a) is m×k (a is stored k×m when transA),
// op(b) is k×n (b is stored n×k when transB) and c is m×n. c is
// overwritten, never read (k == 0 gives zeros). Transposes are handled by
// the packing, never materialised.
//
// Work is split across up to threads goroutines by rows and columns of c,
// never along k, and the k loop is cut into blocks that depend only on k:
// every element of c is accumulated in the same order for any thread
// count, so results are bit-identical.
//
// This is the single entry point of MatMul's kernel; it is meant to be
// replaced by internal/gemm (C = 1·op(A)·op(B) + 0·C).
func matmulInto[T tensorx.Float](threads int, transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	if m*n*k < mmSerialFlops {
		threads = 1
	}
	ws := mmGetWorkspace[T]()
	defer mmPutWorkspace(ws)
	kcMax := min(k, mmKC)
	mcMax := min(mmRoundUp(m, mmMR), mmMC)
	ncMax := min(mmRoundUp(n, mmNR), mmNC)
	bufA := ws.grow(mcMax*kcMax + ncMax*kcMax)
	packedA, packedB := bufA[:mcMax*kcMax], bufA[mcMax*kcMax:]
	for jc := 0; jc < n; jc += mmNC {
		nc := min(mmNC, n-jc)
		npanels := (nc + mmNR - 1) / mmNR
		for pc := 0; pc < k; pc += mmKC {
			kc := min(mmKC, k-pc)
			first := pc == 0
			parallel.For(threads, npanels, max(1, 4096/kc), func(lo, hi int) {
				for jp := lo; jp < hi; jp++ {
					mmPackB(transB, b, ldb, pc, kc, jc+jp*mmNR, min(mmNR, nc-jp*mmNR), packedB[jp*mmNR*kc:(jp+1)*mmNR*kc])
				}
			})
			for ic := 0; ic < m; ic += mmMC {
				mc := min(mmMC, m-ic)
				mpanels := (mc + mmMR - 1) / mmMR
				parallel.For(threads, mpanels, max(1, 4096/kc), func(lo, hi int) {
					for ip := lo; ip < hi; ip++ {
						mmPackA(transA, a, lda, ic+ip*mmMR, min(mmMR, mc-ip*mmMR), pc, kc, packedA[ip*mmMR*kc:(ip+1)*mmMR*kc])
					}
				})
				// Macro-kernel: tiles (jp, ip), split along whichever of
				// the two has more panels.
				cblk := c[ic*ldc+jc:]
				tile := func(jp, ip int) {
					mmTile(kc, packedA[ip*mmMR*kc:(ip+1)*mmMR*kc], packedB[jp*mmNR*kc:(jp+1)*mmNR*kc],
						cblk[ip*mmMR*ldc+jp*mmNR:], ldc, min(mmMR, mc-ip*mmMR), min(mmNR, nc-jp*mmNR), first)
				}
				tileGrain := max(1, (1<<14)/(kc*mmMR*mmNR))
				if npanels >= mpanels {
					parallel.For(threads, npanels, max(1, tileGrain/mpanels), func(lo, hi int) {
						for jp := lo; jp < hi; jp++ {
							for ip := 0; ip < mpanels; ip++ {
								tile(jp, ip)
							}
						}
					})
				} else {
					parallel.For(threads, mpanels, max(1, tileGrain/npanels), func(lo, hi int) {
						for jp := 0; jp < npanels; jp++ {
							for ip := lo; ip < hi; ip++ {
								tile(jp, ip)
							}
						}
					})
				}
			}
		}
	}
}

func mmRoundUp(x, m int) int { return (x + m - 1) / m * m }

// mmPackA packs rows i0..i0+rows of op(a), columns p0..p0+kc, into dst as
// dst[p*mmMR+r], padding missing rows with zeros.
func mmPackA[T tensorx.Float](transA bool, a []T, lda, i0, rows, p0, kc int, dst []T) {
	dst = dst[:kc*mmMR]
	if rows < mmMR {
		clear(dst)
	}
	if transA { // op(a)[i][p] = a[p][i]
		for p := 0; p < kc; p++ {
			src := a[(p0+p)*lda+i0 : (p0+p)*lda+i0+rows]
			d := dst[p*mmMR : p*mmMR+rows]
			copy(d, src)
		}
		return
	}
	for r := 0; r < rows; r++ {
		src := a[(i0+r)*lda+p0 : (i0+r)*lda+p0+kc]
		for p, v := range src {
			dst[p*mmMR+r] = v
		}
	}
}

// mmPackB packs columns j0..j0+cols of op(b), rows p0..p0+kc, into dst as
// dst[p*mmNR+c], padding missing columns with zeros.
func mmPackB[T tensorx.Float](transB bool, b []T, ldb, p0, kc, j0, cols int, dst []T) {
	dst = dst[:kc*mmNR]
	if cols < mmNR {
		clear(dst)
	}
	if transB { // op(b)[p][j] = b[j][p]
		for cc := 0; cc < cols; cc++ {
			src := b[(j0+cc)*ldb+p0 : (j0+cc)*ldb+p0+kc]
			for p, v := range src {
				dst[p*mmNR+cc] = v
			}
		}
		return
	}
	if cols == mmNR {
		for p := 0; p < kc; p++ {
			src := b[(p0+p)*ldb+j0 : (p0+p)*ldb+j0+mmNR : (p0+p)*ldb+j0+mmNR]
			d := dst[p*mmNR : p*mmNR+mmNR : p*mmNR+mmNR]
			d[0], d[1], d[2], d[3] = src[0], src[1], src[2], src[3]
		}
		return
	}
	for p := 0; p < kc; p++ {
		copy(dst[p*mmNR:p*mmNR+cols], b[(p0+p)*ldb+j0:(p0+p)*ldb+j0+cols])
	}
}

// mmTile computes one rows×cols tile (at most mmMR×mmNR) of c from packed
// panels: c = a·b if first, else c += a·b.
func mmTile[T tensorx.Float](kc int, a, b, c []T, ldc, rows, cols int, first bool) {
	var c00, c01, c02, c03, c10, c11, c12, c13 T
	a = a[:kc*mmMR]
	b = b[:kc*mmNR]
	p := 0
	for ; p+2 <= kc; p += 2 {
		aa := a[p*mmMR : p*mmMR+4 : p*mmMR+4]
		bb := b[p*mmNR : p*mmNR+8 : p*mmNR+8]
		a0, a1 := aa[0], aa[1]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a0, a1 = aa[2], aa[3]
		b0, b1, b2, b3 = bb[4], bb[5], bb[6], bb[7]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
	}
	if p < kc {
		aa := a[p*mmMR : p*mmMR+2 : p*mmMR+2]
		bb := b[p*mmNR : p*mmNR+4 : p*mmNR+4]
		a0, a1 := aa[0], aa[1]
		b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
	}
	if rows == mmMR && cols == mmNR {
		r0 := c[0:4:4]
		r1 := c[ldc : ldc+4 : ldc+4]
		if first {
			r0[0], r0[1], r0[2], r0[3] = c00, c01, c02, c03
			r1[0], r1[1], r1[2], r1[3] = c10, c11, c12, c13
		} else {
			r0[0] += c00
			r0[1] += c01
			r0[2] += c02
			r0[3] += c03
			r1[0] += c10
			r1[1] += c11
			r1[2] += c12
			r1[3] += c13
		}
		return
	}
	t := [mmMR][mmNR]T{{c00, c01, c02, c03}, {c10, c11, c12, c13}}
	for i := 0; i < rows; i++ {
		r := c[i*ldc : i*ldc+cols]
		for j := range r {
			if first {
				r[j] = t[i][j]
			} else {
				r[j] += t[i][j]
			}
		}
	}
}

// mmWorkspace holds packing buffers, recycled through a pool per element
// type so steady-state calls do not allocate.
type mmWorkspace[T tensorx.Float] struct{ buf []T }

func (w *mmWorkspace[T]) grow(n int) []T {
	if cap(w.buf) < n {
		w.buf = make([]T, n)
	}
	return w.buf[:n]
}

var (
	mmPool32 = sync.Pool{New: func() any { return new(mmWorkspace[float32]) }}
	mmPool64 = sync.Pool{New: func() any { return new(mmWorkspace[float64]) }}
)

func mmGetWorkspace[T tensorx.Float]() *mmWorkspace[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return mmPool32.Get().(*mmWorkspace[T])
	}
	return mmPool64.Get().(*mmWorkspace[T])
}

func mmPutWorkspace[T tensorx.Float](w *mmWorkspace[T]) {
	var z T
	if _, ok := any(z).(float32); ok {
		mmPool32.Put(w)
		return
	}
	mmPool64.Put(w)
}

// ---------------------------------------------------------------------------
// BiasAdd and BiasAddGrad.

// biasChannelDim checks the rank of a BiasAdd/BiasAddGrad operand for the
// data format and returns its channel dimension. NCHW needs rank >= 3
// (TensorFlow's shape function); any higher rank is accepted, with the
// bias along dimension 1 (TensorFlow's CPU kernel stops at rank 5).
func biasChannelDim(op, format string, shape []int) (int, error) {
	if len(shape) < 2 {
		return 0, registry.Errorf(registry.ErrShape, "%s: Input tensor must be at least 2D: %s", op, shpDebug(shape))
	}
	if format == "NCHW" {
		if len(shape) < 3 {
			return 0, registry.Errorf(registry.ErrShape, "%s: Shape must be at least rank 3 but is rank %d for data_format NCHW: %s", op, len(shape), shpDebug(shape))
		}
		return 1, nil
	}
	return len(shape) - 1, nil
}

func biasAddKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	at := attrs.(BiasAddAttrs)
	x, bt := in[0], in[1]
	if bt.Dtype() != x.Dtype() {
		return nil, shpDtypeError("BiasAdd", 1, shpTFDtype(x.Dtype()), bt.Dtype())
	}
	xs := x.Shape()
	cd, err := biasChannelDim("BiasAdd", at.DataFormat, xs)
	if err != nil {
		return nil, err
	}
	if len(bt.Shape()) != 1 {
		return nil, registry.Errorf(registry.ErrShape, "BiasAdd: Biases must be 1D: %s", shpDebug(bt.Shape()))
	}
	C := xs[cd]
	if bt.Shape()[0] != C {
		return nil, registry.Errorf(registry.ErrShape, "BiasAdd: Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
			shpDebug(bt.Shape()), shpDebug(xs))
	}
	out, err := like(kc, x)
	if err != nil {
		return nil, err
	}
	src, dst, bias := data[T](x), data[T](out), data[T](bt)
	if len(dst) == 0 {
		return []*tensor.Dense{out}, nil
	}
	// The tensor is [outer, C, inner]: inner == 1 for NHWC.
	inner := 1
	for _, d := range xs[cd+1:] {
		inner *= d
	}
	rows := len(dst) / inner // (outer, c) pairs
	grain := max(1, shpGrain/inner)
	parallel.For(kc.NumThreads(), rows, grain, func(lo, hi int) {
		if inner == 1 {
			// Rows of C channels, possibly starting mid-row.
			for i := lo; i < hi; {
				c := i % C
				n := min(C-c, hi-i)
				s, d, bb := src[i:i+n], dst[i:i+n], bias[c:c+n]
				for q := range d {
					d[q] = s[q] + bb[q]
				}
				i += n
			}
			return
		}
		for r := lo; r < hi; r++ {
			bv := bias[r%C]
			s, d := src[r*inner:(r+1)*inner], dst[r*inner:(r+1)*inner]
			for q := range d {
				d[q] = s[q] + bv
			}
		}
	})
	return []*tensor.Dense{out}, nil
}

func biasAddGradKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	at := attrs.(BiasAddAttrs)
	g := in[0]
	gs := g.Shape()
	cd, err := biasChannelDim("BiasAddGrad", at.DataFormat, gs)
	if err != nil {
		return nil, err
	}
	out, err := kc.Output(g.Dtype(), gs[cd])
	if err != nil {
		return nil, err
	}
	var bitmap [tensorx.MaxRank]bool
	for i := range gs {
		bitmap[i] = i != cd
	}
	// Sums accumulate in float64, also for float32.
	if err := redInto[T, float64](kc, data[T](g), newRedPlan(gs, bitmap), data[T](out), false); err != nil {
		return nil, err
	}
	return []*tensor.Dense{out}, nil
}
