package forward

import (
	"fmt"
	"testing"

	"github.com/tapegrad/tapegrad/internal/testutil"
	"github.com/tapegrad/tapegrad/registry/registrytest"
)

// Reference checks the convolution families' tests share: a family's
// naive float64 reference (convRef) run against its three ops by
// registrytest.CheckConvRef.

// convRef is a naive float64 reference of a convolution family's three
// ops on one geometry (dwNaive; testutil.NaiveConv for Conv2D).
type convRef interface {
	xShape() []int
	yShape() []int
	fShape() []int
	forward(x, f []float64) []float64
	backpropInput(f, dy []float64) []float64
	backpropFilter(x, dy []float64) []float64
}

// exportedRef presents a convRef as a testutil.ConvRef.
type exportedRef struct{ r convRef }

func (e exportedRef) XShape() []int                            { return e.r.xShape() }
func (e exportedRef) YShape() []int                            { return e.r.yShape() }
func (e exportedRef) FShape() []int                            { return e.r.fShape() }
func (e exportedRef) Forward(x, f []float64) []float64         { return e.r.forward(x, f) }
func (e exportedRef) BackpropInput(f, dy []float64) []float64  { return e.r.backpropInput(f, dy) }
func (e exportedRef) BackpropFilter(x, dy []float64) []float64 { return e.r.backpropFilter(x, dy) }

// convCheckRef runs the three ops of a convolution family (ops: the
// forward, the input and the filter backprop) with attrs on random
// inputs of g's geometry against the reference g
// (registrytest.CheckConvRef).
func convCheckRef(t *testing.T, c fmt.Stringer, ops [3]string, g convRef, ok bool, attrs any, seed int64) {
	t.Helper()
	registrytest.CheckConvRef(t, c, ops, exportedRef{g}, ok, attrs, seed)
}

// naiveAxis returns the output length and the padding before/after of one
// axis (testutil.NaiveAxis).
func naiveAxis(in, k, s, d int, padding string, p0, p1 int) (out, before, after int, ok bool) {
	return testutil.NaiveAxis(in, k, s, d, padding, p0, p1)
}

// convNHWCToNCHW transposes values of NHWC shape s.
func convNHWCToNCHW(v []float64, s []int) ([]float64, []int) { return testutil.NHWCToNCHW(v, s) }
