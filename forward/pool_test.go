package forward

import (
	"fmt"
	"math/rand"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Tests of MaxPool and AvgPool at the op level: geometry (TensorFlow's
// output sizes and SAME padding), values against a naive float64 loop in
// both layouts, and every error. The loops themselves are tested against
// naive references in internal/poolkern.

// plNaive pools an NHWC input by the definition: window rows
// [oh·sh − pt, +kh) ∩ [0, h), columns likewise; max or mean of the
// window's input elements.
func plNaive(x []float64, n, h, w, c, kh, kw, sh, sw, oh, ow, pt, pl int, avg bool) []float64 {
	out := make([]float64, n*oh*ow*c)
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for k := 0; k < c; k++ {
					m, s, cnt := 0.0, 0.0, 0
					for di := 0; di < kh; di++ {
						for dj := 0; dj < kw; dj++ {
							r, q := i*sh-pt+di, j*sw-pl+dj
							if r < 0 || r >= h || q < 0 || q >= w {
								continue
							}
							v := x[((b*h+r)*w+q)*c+k]
							if cnt == 0 || v > m {
								m = v
							}
							s += v
							cnt++
						}
					}
					if avg {
						m = s / float64(cnt)
					}
					out[((b*oh+i)*ow+j)*c+k] = m
				}
			}
		}
	}
	return out
}

// plSame returns TensorFlow's SAME output size and padding before.
func plSame(in, k, s int) (out, before int) {
	out = (in + s - 1) / s
	return out, max(0, (out-1)*s+k-in) / 2
}

func TestPoolOpsNaive(t *testing.T) {
	r := rand.New(rand.NewSource(41))
	for it := 0; it < 200; it++ {
		n, h, w, c := 1+r.Intn(2), 1+r.Intn(7), 1+r.Intn(7), 1+r.Intn(3)
		kh, kw, sh, sw := 1+r.Intn(4), 1+r.Intn(4), 1+r.Intn(3), 1+r.Intn(3)
		padding := []string{"SAME", "VALID"}[r.Intn(2)]
		var oh, ow, pt, pl int
		if padding == "SAME" {
			oh, pt = plSame(h, kh, sh)
			ow, pl = plSame(w, kw, sw)
		} else {
			oh, ow = (h-kh+sh)/sh, (w-kw+sw)/sw
		}
		x := testutil.RandVals(r, n*h*w*c, 1, 0)
		for _, op := range []string{"MaxPool", "AvgPool"} {
			if oh < 0 || ow < 0 {
				_, err := registrytest.Run(t, op, PoolAttrs{Ksize: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1}, Padding: padding}, 1,
					testutil.Dense(t, tensor.Float64, []int{n, h, w, c}, x))
				testutil.WantErr(t, err, registry.ErrInvalidArgument, op, "Computed output size would be negative")
				continue
			}
			want := plNaive(x, n, h, w, c, kh, kw, sh, sw, oh, ow, pt, pl, op == "AvgPool")
			for _, nchw := range []bool{false, true} {
				for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
					a := PoolAttrs{Ksize: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1}, Padding: padding}
					xs, xv := []int{n, h, w, c}, x
					if nchw {
						a = PoolAttrs{Ksize: []int{1, 1, kh, kw}, Strides: []int{1, 1, sh, sw}, Padding: padding, DataFormat: "NCHW"}
						xv, xs = testutil.NHWCToNCHW(x, xs)
					}
					out := registrytest.MustRun(t, op, a, 1+it%3, testutil.Dense(t, dt, xs, xv))[0]
					got := testutil.Float64s(t, out)
					ws := []int{n, oh, ow, c}
					wv := want
					if nchw {
						wv, ws = testutil.NHWCToNCHW(want, ws)
					}
					testutil.ShapeIs(t, op, out, ws...)
					tol := testutil.Tol{Rel: 1e-14, RelFloor: 1}
					if dt == tensor.Float32 {
						tol = testutil.Tol{Rel: 1e-6, RelFloor: 1}
						if op == "MaxPool" {
							wv = testutil.Round(dt, wv)
							tol = testutil.Tol{}
						}
					}
					testutil.Close(t, fmt.Sprintf("%s %v nchw=%v %v", op, dt, nchw, a), got, wv, tol)
				}
			}
		}
	}
}

func TestPoolErrors(t *testing.T) {
	x := testutil.Dense(t, tensor.Float64, []int{1, 4, 4, 2}, testutil.Arange(32))
	for _, c := range []struct {
		a    PoolAttrs
		x    *tensor.Dense
		kind error
		msg  string
	}{
		{PoolAttrs{Ksize: []int{2, 2}, Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, x, registry.ErrInvalidArgument, "Sliding window ksize field must specify 4 dimensions"},
		{PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1}, Padding: "VALID"}, x, registry.ErrInvalidArgument, "Sliding window stride field must specify 4 dimensions"},
		{PoolAttrs{Ksize: []int{2, 2, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, x, registry.ErrUnimplemented, "Pooling is not yet supported on the batch dimension."},
		{PoolAttrs{Ksize: []int{1, 1, 1, 2}, Strides: []int{1, 1, 1, 2}, Padding: "VALID"}, x, registry.ErrUnimplemented, "depth"},
		{PoolAttrs{Ksize: []int{1, 0, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, x, registry.ErrInvalidArgument, "ksize for dimension 1 was 0"},
		{PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1, -1, 1}, Padding: "VALID"}, x, registry.ErrInvalidArgument, "stride for dimension 2 was -1"},
		{PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "EXPLICIT", ExplicitPaddings: []int{0, 0, 1, 1, 1, 1, 0, 0}}, x, registry.ErrUnimplemented, "EXPLICIT"},
		{PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "SAME", ExplicitPaddings: []int{0, 0}}, x, registry.ErrInvalidArgument, "explicit_paddings attribute must be empty"},
		{PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, testutil.Dense(t, tensor.Float64, []int{4, 4}, testutil.Arange(16)), registry.ErrInvalidArgument, "tensor_in must be 4-dimensional"},
		{PoolAttrs{Ksize: []int{1, 5, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, testutil.Dense(t, tensor.Float64, []int{1, 1, 4, 1}, testutil.Arange(4)), registry.ErrInvalidArgument, "Computed output size would be negative"},
		{PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "FULL"}, x, registry.ErrInvalidArgument, "padding"},
	} {
		for _, op := range []string{"MaxPool", "AvgPool"} {
			_, err := registrytest.Run(t, op, c.a, 1, c.x)
			testutil.WantErr(t, err, c.kind, op, c.msg)
		}
	}
	_, err := registrytest.Run(t, "MaxPool", PoolAttrs{Ksize: []int{1, 2, 2, 1}, Strides: []int{1, 1, 1, 1}, Padding: "VALID"}, 1,
		testutil.New(t, []int{1, 2, 2, 1}, []int32{1, 2, 3, 4}))
	testutil.WantErr(t, err, registry.ErrDtype, "MaxPool")
}
