package forward

import (
	"fmt"
	"math"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/parallel"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Softmax family: Softmax, LogSoftmax, SoftmaxCrossEntropyWithLogits and
// SparseSoftmaxCrossEntropyWithLogits, with TensorFlow's names, argument
// order and CPU-kernel semantics.
//
// Every kernel works row by row over the last axis with the max-subtracted
// formulation of TensorFlow's Eigen kernels: shifted = x - max(x),
// sum = Σ exp(shifted). exp is rounded to the element type (for float32
// the Exp op's exp32, within half an ulp like Eigen's float exp); the row
// sums and the cross-entropy losses are accumulated in float64 and rounded
// once to the element type, which is at least as accurate as Eigen's
// float32 arithmetic (results may differ from TensorFlow's in the last
// bit). Rows are independent, so results do
// not depend on the thread count.

func init() {
	registry.MustRegister(&registry.OpDef{
		Name:    "Softmax",
		Doc:     "softmax over the last axis: exp(x - max) / Σ exp(x - max); logits of rank >= 1",
		Inputs:  args("logits"),
		Outputs: args("softmax"),
		Kernels: floatKernels(softmaxKernel[float32](false), softmaxKernel[float64](false)),
		Samples: softmaxSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name:    "LogSoftmax",
		Doc:     "log-softmax over the last axis: (x - max) - log Σ exp(x - max); logits of rank >= 1",
		Inputs:  args("logits"),
		Outputs: args("logsoftmax"),
		Kernels: floatKernels(softmaxKernel[float32](true), softmaxKernel[float64](true)),
		Samples: logSoftmaxSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "SoftmaxCrossEntropyWithLogits",
		Doc: "per-row cross entropy of softmax(features) against the label distribution, and its gradient " +
			"softmax(features) - labels; features and labels broadcast against each other to [batch, classes]",
		Inputs:  args("features", "labels"),
		Outputs: args("loss", "backprop"),
		Kernels: floatKernels(xentKernel[float32], xentKernel[float64]),
		Samples: xentSamples,
	})
	registry.MustRegister(&registry.OpDef{
		Name: "SparseSoftmaxCrossEntropyWithLogits",
		Doc: "per-row cross entropy of softmax(features [batch, classes]) against int32/int64 class indices " +
			"labels [batch], and its gradient softmax(features) - onehot(labels)",
		Inputs:  args("features", "labels"),
		Outputs: args("loss", "backprop"),
		Kernels: floatKernels(sparseXentKernel[float32], sparseXentKernel[float64]),
		Samples: sparseXentSamples,
	})
}

// smGrainElems is the number of elements per parallel chunk of rows.
const smGrainElems = 1 << 14

// smRowGrain returns how many rows of cols elements make one parallel chunk.
func smRowGrain(cols int) int {
	return max(1, smGrainElems/max(1, cols))
}

// smExpFunc returns exp in the element type: for float32 the Exp op's
// exp32 (float64 exp rounded once, within half an ulp, about as accurate
// as Eigen's float exp; math32.Exp is off by up to ~14 ulps), math.Exp for
// float64.
func smExpFunc[T tensorx.Float]() func(T) T {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(exp32).(func(T) T)
	}
	return any(math.Exp).(func(T) T)
}

// smShapeString formats a shape the way TensorFlow's TensorShape
// DebugString does ("[2,3]", "[]").
func smShapeString(s []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// smRowMax returns the maximum of a non-empty row. A NaN in the row
// propagates to the whole row's result through the shifted values.
func smRowMax[T tensorx.Float](x []T) T {
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// softmaxKernel returns the Softmax (log=false) or LogSoftmax (log=true)
// kernel.
func softmaxKernel[T tensorx.Float](log bool) registry.Kernel {
	name := "Softmax"
	if log {
		name = "LogSoftmax"
	}
	return func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		x := in[0]
		shape := x.Shape()
		if len(shape) < 1 {
			return nil, registry.InputErrorf(registry.ErrShape, 0, "%s: logits must have >= 1 dimension, got %s", name, smShapeString(shape))
		}
		out, err := like(kc, x)
		if err != nil {
			return nil, err
		}
		cols := shape[len(shape)-1]
		n := tensorx.Len(x)
		if n == 0 {
			return kc.Results(out), nil
		}
		rows := n / cols
		src, dst := data[T](x), data[T](out)
		if threads, grain := kc.NumThreads(), smRowGrain(cols); serial(threads, rows, grain) {
			softmaxRows(log, src, dst, cols, 0, rows)
		} else {
			parallel.For(threads, rows, grain, func(lo, hi int) { softmaxRows(log, src, dst, cols, lo, hi) })
		}
		return kc.Results(out), nil
	}
}

// softmaxRows computes the rows [lo, hi) of Softmax (or LogSoftmax) of src
// viewed as [rows, cols] into dst.
func softmaxRows[T tensorx.Float](log bool, src, dst []T, cols, lo, hi int) {
	exp := smExpFunc[T]()
	for r := lo; r < hi; r++ {
		xr, yr := src[r*cols:(r+1)*cols], dst[r*cols:(r+1)*cols]
		m := smRowMax(xr)
		var sum float64
		if log {
			for i, v := range xr {
				s := v - m
				yr[i] = s
				sum += float64(exp(s))
			}
			ls := T(math.Log(sum))
			for i := range yr {
				yr[i] -= ls
			}
			continue
		}
		for i, v := range xr {
			e := exp(v - m)
			yr[i] = e
			sum += float64(e)
		}
		// TensorFlow multiplies by the reciprocal of the sum.
		inv := 1 / T(sum)
		for i := range yr {
			yr[i] *= inv
		}
	}
}

// xentKernel is SoftmaxCrossEntropyWithLogits. Like TensorFlow's kernel it
// broadcasts features and labels against each other (NumPy rules) when
// their shapes differ, and requires the common shape to be 2-D.
func xentKernel[T tensorx.Float](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "SoftmaxCrossEntropyWithLogits"
	feat, lab := in[0], in[1]
	if lab.Dtype() != feat.Dtype() {
		return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: labels has dtype %v, expected %v like features", op, lab.Dtype(), feat.Dtype())
	}
	fs, ls := feat.Shape(), lab.Shape()
	shape := []int(fs)
	if !tensorx.SameShape(fs, ls) {
		var ok bool
		shape, ok = smBroadcastShape(fs, ls)
		if !ok {
			return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: logits and labels must be broadcastable: logits_size=%s labels_size=%s",
				op, smShapeString(fs), smShapeString(ls))
		}
	}
	if len(shape) != 2 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: logits and labels must be either 2-dimensional, or broadcasted to be 2-dimensional, got logits_size=%s labels_size=%s",
			op, smShapeString(fs), smShapeString(ls))
	}
	batch, classes := shape[0], shape[1]
	loss, err := kc.Output(feat.Dtype(), batch)
	if err != nil {
		return nil, err
	}
	back, err := kc.Output(feat.Dtype(), batch, classes)
	if err != nil {
		return nil, err
	}
	// Element (b, c) of an input is at b*s0 + c*s1 (stride 0 on broadcast
	// axes).
	fs0, fs1 := smStrides2(fs, shape)
	ls0, ls1 := smStrides2(ls, shape)
	f, l := data[T](feat), data[T](lab)
	lossD, bp := data[T](loss), data[T](back)
	exp := smExpFunc[T]()
	parallel.For(kc.NumThreads(), batch, smRowGrain(classes), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			if classes == 0 {
				lossD[b] = 0 // a sum over no classes
				continue
			}
			fr, lr := f[b*fs0:], l[b*ls0:]
			br := bp[b*classes : (b+1)*classes]
			m := fr[0]
			for c := 1; c < classes; c++ {
				if v := fr[c*fs1]; v > m {
					m = v
				}
			}
			// One exp per element: loss = Σ l·(log sum - s)
			// = log(sum)·Σ l - Σ l·s, accumulated in float64.
			var sum, lSum, lsSum float64
			for c := range br {
				s := fr[c*fs1] - m
				e := exp(s)
				br[c] = e
				sum += float64(e)
				lc := float64(lr[c*ls1])
				lSum += lc
				lsSum += lc * float64(s)
			}
			lossD[b] = T(math.Log(sum)*lSum - lsSum)
			sumT := T(sum)
			for c := range br {
				br[c] = br[c]/sumT - lr[c*ls1]
			}
		}
	})
	return kc.Results(loss, back), nil
}

// smBroadcastShape returns the NumPy broadcast of two shapes.
func smBroadcastShape(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := 0; i < n; i++ {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, false
		}
	}
	return out, true
}

// smStrides2 returns the element strides of an input of shape s (rank <= 2)
// read as the 2-D shape full, with stride 0 along broadcast axes.
func smStrides2(s, full []int) (int, int) {
	p := [2]int{1, 1}
	copy(p[2-len(s):], s)
	s0, s1 := p[1], 1
	if p[0] == 1 && full[0] != 1 {
		s0 = 0
	}
	if p[1] == 1 && full[1] != 1 {
		s1 = 0
	}
	return s0, s1
}

// sparseXentKernel is SparseSoftmaxCrossEntropyWithLogits: features
// [batch, classes], labels [batch] of int32 or int64 class indices. Like
// TensorFlow's CPU kernel it rejects labels outside [0, classes).
func sparseXentKernel[T tensorx.Float](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	const op = "SparseSoftmaxCrossEntropyWithLogits"
	feat, lab := in[0], in[1]
	if lab.Dtype() != tensor.Int32 && lab.Dtype() != tensor.Int64 {
		return nil, registry.InputErrorf(registry.ErrDtype, 1, "%s: labels must be int32 or int64, got %v", op, lab.Dtype())
	}
	fs, ls := feat.Shape(), lab.Shape()
	if len(fs) != 2 {
		return nil, registry.InputErrorf(registry.ErrShape, 0, "%s: logits must be 2-D, but got shape %s", op, smShapeString(fs))
	}
	if len(ls) != 1 {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: labels must be 1-D, but got shape %s", op, smShapeString(ls))
	}
	if fs[0] != ls[0] {
		return nil, registry.InputErrorf(registry.ErrShape, 1, "%s: logits and labels must have the same first dimension, got logits shape %s and labels shape %s",
			op, smShapeString(fs), smShapeString(ls))
	}
	if fs[1] <= 0 {
		return nil, registry.InputErrorf(registry.ErrShape, 0, "%s: Must have at least one class, but got logits shape %s", op, smShapeString(fs))
	}
	batch, classes := fs[0], fs[1]
	if lab.Dtype() == tensor.Int32 {
		return sparseXentRun[T](kc, feat, data[int32](lab), batch, classes)
	}
	return sparseXentRun[T](kc, feat, data[int64](lab), batch, classes)
}

// sparseXentRun computes the sparse cross entropy for labels of index type I.
func sparseXentRun[T tensorx.Float, I int32 | int64](kc *registry.KernelCtx, feat *tensor.Dense, labels []I, batch, classes int) ([]*tensor.Dense, error) {
	const op = "SparseSoftmaxCrossEntropyWithLogits"
	if batch > 0 {
		if err := smCheckLabels(op, labels, classes); err != nil {
			return nil, err
		}
	}
	loss, err := kc.Output(feat.Dtype(), batch)
	if err != nil {
		return nil, err
	}
	back, err := kc.Output(feat.Dtype(), batch, classes)
	if err != nil {
		return nil, err
	}
	f := data[T](feat)
	lossD, bp := data[T](loss), data[T](back)
	if threads, grain := kc.NumThreads(), smRowGrain(classes); serial(threads, batch, grain) {
		sparseXentRows(f, labels, lossD, bp, classes, 0, batch)
	} else {
		parallel.For(threads, batch, grain, func(lo, hi int) { sparseXentRows(f, labels, lossD, bp, classes, lo, hi) })
	}
	return kc.Results(loss, back), nil
}

// sparseXentRows computes the rows [lo, hi) of the sparse cross entropy of
// the features f [batch, classes]: the loss into lossD, the backprop into
// bp.
func sparseXentRows[T tensorx.Float, I int32 | int64](f []T, labels []I, lossD, bp []T, classes, lo, hi int) {
	exp := smExpFunc[T]()
	for b := lo; b < hi; b++ {
		fr := f[b*classes : (b+1)*classes]
		br := bp[b*classes : (b+1)*classes]
		m := smRowMax(fr)
		var sum float64
		for c, v := range fr {
			e := exp(v - m)
			br[c] = e
			sum += float64(e)
		}
		label := int(labels[b])
		lossD[b] = T(math.Log(sum) - float64(fr[label]-m))
		sumT := T(sum)
		for c := range br {
			br[c] /= sumT
		}
		br[label]--
	}
}

// smCheckLabels reports the first out-of-range label as TensorFlow's CPU
// kernel does: the minimum if it is negative, else the maximum.
func smCheckLabels[I int32 | int64](op string, labels []I, classes int) error {
	if len(labels) == 0 {
		return nil
	}
	lo, hi := labels[0], labels[0]
	for _, v := range labels[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo >= 0 && int64(hi) < int64(classes) {
		return nil
	}
	bad := hi
	if lo < 0 {
		bad = lo
	}
	var vals strings.Builder
	for i, v := range labels {
		if i > 0 {
			vals.WriteByte(' ')
		}
		fmt.Fprint(&vals, v)
	}
	return registry.Errorf(registry.ErrInvalidArgument, "%s: Received a label value of %d which is outside the valid range of [0, %d).  Label values: %s",
		op, bad, classes, vals.String())
}
