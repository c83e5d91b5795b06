package forward

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// mmNaive computes op(a)·op(b) in float64 with row strides.
func mmNaive(transA, transB bool, m, n, k int, a []float64, lda int, b []float64, ldb int) []float64 {
	c := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				var av, bv float64
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += av * bv
			}
			c[i*n+j] = s
		}
	}
	return c
}

// mmCheckInto runs matmulInto for float64 and float32 with padded row
// strides and compares with the naive product.
func mmCheckInto(t *testing.T, r *rand.Rand, threads int, transA, transB bool, m, n, k int) {
	t.Helper()
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+r.Intn(3), bc+r.Intn(3), n+r.Intn(3)
	a := testutil.Normal(r, max(0, (ar-1)*lda+ac))
	b := testutil.Normal(r, max(0, (br-1)*ldb+bc))
	if ar == 0 {
		a = nil
	}
	if br == 0 {
		b = nil
	}
	want := mmNaive(transA, transB, m, n, k, a, lda, b, ldb)
	name := fmt.Sprintf("m=%d n=%d k=%d ta=%v tb=%v threads=%d", m, n, k, transA, transB, threads)
	c := make([]float64, max(0, (m-1)*ldc+n))
	for i := range c {
		c[i] = 1e300 // must be overwritten, not accumulated into
	}
	matmulInto(threads, transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	a32, b32 := make([]float32, len(a)), make([]float32, len(b))
	for i, v := range a {
		a32[i] = float32(v)
	}
	for i, v := range b {
		b32[i] = float32(v)
	}
	c32 := make([]float32, len(c))
	for i := range c32 {
		c32[i] = 1e30
	}
	matmulInto(threads, transA, transB, m, n, k, a32, lda, b32, ldb, c32, ldc)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			w := want[i*n+j]
			if g := c[i*ldc+j]; g-w > 1e-12*float64(k+1) || w-g > 1e-12*float64(k+1) {
				t.Fatalf("%s: c[%d,%d] = %v, want %v", name, i, j, g, w)
			}
			if g := float64(c32[i*ldc+j]); g-w > 1e-5*float64(k+1) || w-g > 1e-5*float64(k+1) {
				t.Fatalf("%s float32: c[%d,%d] = %v, want %v", name, i, j, g, w)
			}
		}
	}
	// Padding between rows of c is left alone.
	for i := 0; i < m-1; i++ {
		for j := n; j < ldc; j++ {
			if c[i*ldc+j] != 1e300 {
				t.Fatalf("%s: wrote into the row padding of c", name)
			}
		}
	}
}

// TestMatmulIntoOddSizes compares the blocked kernel with the naive product
// over odd sizes that are not multiples of the micro-tile or the blocks.
func TestMatmulIntoOddSizes(t *testing.T) {
	r := rand.New(rand.NewSource(21))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 31, 33, 64, 65, 70}
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			for _, m := range sizes {
				for _, n := range sizes {
					k := sizes[r.Intn(len(sizes))]
					mmCheckInto(t, r, 1+r.Intn(2), ta, tb, m, n, k)
				}
			}
		}
	}
}

// TestMatmulIntoBlocks crosses the KC, MC and NC block boundaries and the
// degenerate sizes.
func TestMatmulIntoBlocks(t *testing.T) {
	// Block sizes around internal/gemm's (kc 256, mc ~144, nc ~2048/4096).
	const mmKC, mmMC, mmNC = 256, 144, 2048
	r := rand.New(rand.NewSource(22))
	cases := [][3]int{
		{3, 5, 0}, {0, 4, 3}, {4, 0, 3},
		{2, 3, mmKC}, {3, 5, mmKC + 1}, {5, 7, 2*mmKC + 3},
		{mmMC + 3, 6, 9}, {2*mmMC + 1, 5, mmKC + 7},
		{3, mmNC + 5, 4}, {mmMC + 1, mmNC + 3, mmKC + 1},
	}
	for _, c := range cases {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				mmCheckInto(t, r, 2, ta, tb, c[0], c[1], c[2])
			}
		}
	}
}

// TestMatmulIntoThreads: results are bit-identical for any thread count.
func TestMatmulIntoThreads(t *testing.T) {
	r := rand.New(rand.NewSource(23))
	for _, c := range [][3]int{{150, 131, 300}, {7, 900, 260}, {400, 9, 120}} {
		m, n, k := c[0], c[1], c[2]
		a, b := testutil.Normal(r, m*k), testutil.Normal(r, k*n)
		var ref []float64
		for _, threads := range []int{1, 2, 3, 5} {
			out := make([]float64, m*n)
			matmulInto(threads, false, true, m, n, k, a, k, b, k, out, n)
			if ref == nil {
				ref = out
				want := mmNaive(false, true, m, n, k, a, k, b, k)
				shpClose(t, fmt.Sprint(c), out, want, 1e-10)
				continue
			}
			for i := range out {
				if out[i] != ref[i] {
					t.Fatalf("%v: %d threads differ from 1 at %d", c, threads, i)
				}
			}
		}
	}
}

func TestMatMulOp(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	for _, ta := range []bool{false, true} {
		for _, tb := range []bool{false, true} {
			m, n, k := 5, 3, 4
			as, bs := []int{m, k}, []int{k, n}
			if ta {
				as = []int{k, m}
			}
			if tb {
				bs = []int{n, k}
			}
			a, b := SampleNormal(r, as...), SampleNormal(r, bs...)
			want := mmNaive(ta, tb, m, n, k, a.Float64s(), as[1], b.Float64s(), bs[1])
			at := MatMulAttrs{TransposeA: ta, TransposeB: tb}
			out := registrytest.MustRun(t, "MatMul", at, 1, a, b)[0]
			testutil.ShapeIs(t, "MatMul", out, []int{m, n}...)
			shpClose(t, "MatMul", out.Float64s(), want, 1e-12)
			out = registrytest.MustRun(t, "MatMul", at, 1, testutil.To32(t, a), testutil.To32(t, b))[0]
			shpClose(t, "MatMul float32", testutil.Float64s(t, out), want, 1e-5)
		}
	}
	// Empty inner dimension: zeros.
	out := registrytest.MustRun(t, "MatMul", nil, 1, shpMust(tensorx.New([]int{2, 0}, []float64{})), shpMust(tensorx.New([]int{0, 3}, []float64{})))[0]
	testutil.ShapeIs(t, "MatMul k=0", out, []int{2, 3}...)
	shpClose(t, "MatMul k=0", out.Float64s(), make([]float64, 6), 0)
	// TensorFlow's attrs parse, including the grad_a/grad_b hints.
	d, _ := registry.Lookup("MatMul")
	a, err := d.ParseAttrs(map[string]any{"transpose_a": true, "grad_b": true, "T": "float"})
	if err != nil || !a.(MatMulAttrs).TransposeA {
		t.Fatalf("ParseAttrs = %v, %v", a, err)
	}
}

func TestMatMulErrors(t *testing.T) {
	r := rand.New(rand.NewSource(25))
	cases := []struct {
		a, b  *tensor.Dense
		attrs MatMulAttrs
		kind  error
		frag  string
	}{
		{SampleNormal(r, 2, 3), SampleNormal(r, 4, 5), MatMulAttrs{}, registry.ErrShape, "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 2, 3), MatMulAttrs{}, registry.ErrShape, "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 2, 3), MatMulAttrs{TransposeA: true, TransposeB: true}, registry.ErrShape, "Matrix size-incompatible: In[0]: [2,3], In[1]: [2,3]"},
		{SampleNormal(r, 2, 3, 1), SampleNormal(r, 3, 2), MatMulAttrs{}, registry.ErrShape, "In[0] is not a matrix. Instead it has shape [2,3,1]"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 3), MatMulAttrs{}, registry.ErrShape, "In[1] is not a matrix. Instead it has shape [3]"},
		{SampleNormal(r, 2, 3), testutil.To32(t, SampleNormal(r, 3, 2)), MatMulAttrs{}, registry.ErrDtype, "input #1(zero-based) was expected to be a double tensor but is a float tensor"},
	}
	for _, c := range cases {
		_, err := registrytest.Run(t, "MatMul", c.attrs, 1, c.a, c.b)
		testutil.WantErr(t, err, c.kind, "MatMul", c.frag)
	}
	// With transposes the compatible case passes.
	if _, err := registrytest.Run(t, "MatMul", MatMulAttrs{TransposeA: true}, 1, SampleNormal(r, 2, 3), SampleNormal(r, 2, 4)); err != nil {
		t.Fatal(err)
	}
}

// biasNaive adds bias along dimension cd.
func biasNaive(x []float64, shape []int, bias []float64, cd int) []float64 {
	inner := 1
	for _, d := range shape[cd+1:] {
		inner *= d
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v + bias[i/inner%shape[cd]]
	}
	return out
}

func TestBiasAdd(t *testing.T) {
	r := rand.New(rand.NewSource(26))
	shapes := [][]int{{2, 3}, {1, 5}, {3, 1}, {2, 3, 4}, {2, 2, 3, 4}, {1, 3, 2, 2, 2}, {2, 0, 3}, {0, 3}, {3, 4, 5, 6, 2, 3}, {64, 300}, {8, 33, 17, 9}}
	for _, s := range shapes {
		for _, format := range []string{"NHWC", "NCHW", ""} {
			if format == "NCHW" && len(s) < 3 {
				continue
			}
			cd := len(s) - 1
			if format == "NCHW" {
				cd = 1
			}
			x, b := SampleNormal(r, s...), SampleNormal(r, s[cd])
			want := biasNaive(x.Float64s(), s, b.Float64s(), cd)
			at := BiasAddAttrs{DataFormat: format}
			name := fmt.Sprintf("BiasAdd %v %q", s, format)
			for _, threads := range []int{1, 3} {
				out := registrytest.MustRun(t, "BiasAdd", at, threads, x, b)[0]
				testutil.ShapeIs(t, name, out, s...)
				shpClose(t, name, out.Float64s(), want, 0)
				out = registrytest.MustRun(t, "BiasAdd", at, threads, testutil.To32(t, x), testutil.To32(t, b))[0]
				shpClose(t, name+" float32", testutil.Float64s(t, out), want, 1e-6)
			}
		}
	}
}

func TestBiasAddErrors(t *testing.T) {
	r := rand.New(rand.NewSource(27))
	nchw := BiasAddAttrs{DataFormat: "NCHW"}
	cases := []struct {
		x, b  *tensor.Dense
		attrs BiasAddAttrs
		kind  error
		frag  string
	}{
		{SampleNormal(r, 3), SampleNormal(r, 3), BiasAddAttrs{}, registry.ErrShape, "Input tensor must be at least 2D: [3]"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 3), nchw, registry.ErrShape, "at least rank 3"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 1, 3), BiasAddAttrs{}, registry.ErrShape, "Biases must be 1D: [1,3]"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 2), BiasAddAttrs{}, registry.ErrShape, "Must provide as many biases as the last dimension of the input tensor: [2] vs. [2,3]"},
		{SampleNormal(r, 2, 3, 4), SampleNormal(r, 4), nchw, registry.ErrShape, "Must provide as many biases as the last dimension of the input tensor: [4] vs. [2,3,4]"},
		{SampleNormal(r, 2, 3), testutil.To32(t, SampleNormal(r, 3)), BiasAddAttrs{}, registry.ErrDtype, "expected to be a double tensor but is a float tensor"},
		{SampleNormal(r, 2, 3), SampleNormal(r, 3), BiasAddAttrs{DataFormat: "NCDHW"}, registry.ErrInvalidArgument, "data_format"},
	}
	for _, c := range cases {
		_, err := registrytest.Run(t, "BiasAdd", c.attrs, 1, c.x, c.b)
		testutil.WantErr(t, err, c.kind, "BiasAdd", c.frag)
	}
}

func benchMatmulInto[T tensorx.Float](b *testing.B, n, threads int) {
	r := rand.New(rand.NewSource(1))
	a, bb, c := make([]T, n*n), make([]T, n*n), make([]T, n*n)
	for i := range a {
		a[i], bb[i] = T(r.NormFloat64()), T(r.NormFloat64())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		matmulInto(threads, false, false, n, n, n, a, n, bb, n, c, n)
	}
	b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkMatmulInto(b *testing.B) {
	for _, n := range []int{64, 256, 512} {
		b.Run(fmt.Sprintf("f32-%d", n), func(b *testing.B) { benchMatmulInto[float32](b, n, 1) })
		b.Run(fmt.Sprintf("f64-%d", n), func(b *testing.B) { benchMatmulInto[float64](b, n, 1) })
	}
	b.Run("f32-512-2threads", func(b *testing.B) { benchMatmulInto[float32](b, 512, 2) })
}
