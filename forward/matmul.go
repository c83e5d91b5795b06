package forward

import (
	"github.com/tapegrad/tapegrad/internal/gemm"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Linear-algebra ops: MatMul and BiasAdd. BiasAdd's gradient kernel,
// BiasAddGrad, is registered in package backward; it shares the attrs and
// their check (BiasAddAttrs.ChannelDim).

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

// BiasAddAttrs are the attributes of BiasAdd and of its gradient kernel,
// BiasAddGrad.
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
		return nil, registry.InputErrorf(registry.ErrShape, 0, "MatMul: In[0] is not a matrix. Instead it has shape %s", shpDebug(as))
	}
	if len(bs) != 2 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "MatMul: In[1] is not a matrix. Instead it has shape %s", shpDebug(bs))
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
		return nil, registry.InputErrorf(registry.ErrShape, 1, "MatMul: Matrix size-incompatible: In[0]: %s, In[1]: %s", shpDebug(as), shpDebug(bs))
	}
	out, err := kc.Output(a.Dtype(), m, n)
	if err != nil {
		return nil, err
	}
	matmulInto(kc.NumThreads(), at.TransposeA, at.TransposeB, m, n, k,
		data[T](a), as[1], data[T](b), bs[1], data[T](out), n)
	return kc.Results(out), nil
}

// matmulInto computes c = op(a)·op(b) for row-major matrices with row
// strides lda, ldb and ldc: op(a) is m×k (a is stored k×m when transA),
// op(b) is k×n (b is stored n×k when transB) and c is m×n. c is
// overwritten, never read (k == 0 gives zeros). It runs on internal/gemm,
// which packs the transposes, splits work by rows and columns of c (never
// along k) and so gives bit-identical results for any thread count.
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
	gemm.Gemm(transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, threads)
}

// ---------------------------------------------------------------------------
// BiasAdd.

// ChannelDim checks the rank of a BiasAdd or BiasAddGrad operand of the
// given shape for the data format and returns its channel dimension, or
// TensorFlow's error, prefixed by op. NCHW needs rank >= 3 (TensorFlow's
// shape function); any higher rank is accepted, with the bias along
// dimension 1 (TensorFlow's CPU kernel stops at rank 5).
func (a BiasAddAttrs) ChannelDim(op string, shape []int) (int, error) {
	format := a.DataFormat
	if len(shape) < 2 {
		return 0, registry.InputErrorf(registry.ErrShape, 0, "%s: Input tensor must be at least 2D: %s", op, shpDebug(shape))
	}
	if format == "NCHW" {
		if len(shape) < 3 {
			return 0, registry.InputErrorf(registry.ErrShape, 0, "%s: Shape must be at least rank 3 but is rank %d for data_format NCHW: %s", op, len(shape), shpDebug(shape))
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
	cd, err := at.ChannelDim("BiasAdd", xs)
	if err != nil {
		return nil, err
	}
	if len(bt.Shape()) != 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "BiasAdd: Biases must be 1D: %s", shpDebug(bt.Shape()))
	}
	C := xs[cd]
	if bt.Shape()[0] != C {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "BiasAdd: Must provide as many biases as the last dimension of the input tensor: %s vs. %s",
			shpDebug(bt.Shape()), shpDebug(xs))
	}
	out, err := like(kc, x)
	if err != nil {
		return nil, err
	}
	src, dst, bias := data[T](x), data[T](out), data[T](bt)
	if len(dst) == 0 {
		return kc.Results(out), nil
	}
	// The tensor is [outer, C, inner]: inner == 1 for NHWC.
	inner := 1
	for _, d := range xs[cd+1:] {
		inner *= d
	}
	rows := len(dst) / inner // (outer, c) pairs
	grain := max(1, shpGrain/inner)
	if threads := kc.NumThreads(); serial(threads, rows, grain) {
		biasAddRows(src, dst, bias, C, inner, 0, rows)
	} else {
		parallel.For(threads, rows, grain, func(lo, hi int) { biasAddRows(src, dst, bias, C, inner, lo, hi) })
	}
	return kc.Results(out), nil
}

// biasAddRows adds the bias to the rows [lo, hi) of src viewed as
// [outer·C, inner] (row r has channel r % C), into dst.
func biasAddRows[T tensorx.Float](src, dst, bias []T, C, inner, lo, hi int) {
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
}
