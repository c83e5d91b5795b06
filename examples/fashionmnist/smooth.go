package main

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// smoothLoss is the training loss with label smoothing ε: the mean over
// the batch of the softmax cross-entropy with the soft labels
// (1−ε)·onehot(y) + ε/classes (Keras's CategoricalCrossentropy
// label_smoothing, PyTorch's CrossEntropyLoss label_smoothing). With ε = 0
// it is nn.SparseSoftmaxCrossEntropy. The soft labels live in a buffer
// reused from batch to batch.
type smoothLoss struct {
	eps     float64
	classes int
	buf     *tensor.Dense
}

func newSmoothLoss(eps float64, classes int) (*smoothLoss, error) {
	if !(eps >= 0 && eps < 1) {
		return nil, fmt.Errorf("label smoothing %v must be in [0, 1)", eps)
	}
	return &smoothLoss{eps: eps, classes: classes}, nil
}

// loss returns the scalar loss of logits [batch, classes] against the
// int32 labels y [batch].
func (s *smoothLoss) loss(t *autodiff.Tape, logits autodiff.Value, y *tensor.Dense) (autodiff.Value, error) {
	if s.eps == 0 {
		return nn.SparseSoftmaxCrossEntropy(logits, t.Constant(y)), nil
	}
	ys := y.Int32s()
	n := len(ys)
	if s.buf == nil || s.buf.Shape()[0] != n {
		s.buf = tensor.New(tensor.WithShape(n, s.classes), tensor.Of(tensor.Float32))
	}
	soft := s.buf.Float32s()
	off, on := float32(s.eps/float64(s.classes)), float32(1-s.eps+s.eps/float64(s.classes))
	for i, c := range ys {
		if c < 0 || int(c) >= s.classes {
			return autodiff.Value{}, fmt.Errorf("label %d of example %d is not a class in [0, %d)", c, i, s.classes)
		}
		row := soft[i*s.classes : (i+1)*s.classes]
		for j := range row {
			row[j] = off
		}
		row[c] = on
	}
	l, _ := autodiff.SoftmaxCrossEntropy(logits, t.Constant(s.buf))
	return autodiff.Mean(l, []int{0}, false), nil
}
