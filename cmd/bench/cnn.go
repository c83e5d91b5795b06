package main

import (
	"math/rand"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/optim"
)

// W10: one training step of the small CNN of workloads.json on a fixed random
// batch of 64 images 28x28x1 (NHWC) with fixed random labels:
//
//	conv3x3(1→32, no bias, SAME) BN ReLU
//	conv3x3 stride 2 (32→64, no bias, SAME) BN ReLU
//	depthwise3x3(64, no bias, SAME) BN ReLU
//	global average pool · dense 64→10 · softmax cross-entropy (batch mean)
//	SGD step, lr 0.01
//
// Each BN ReLU is one nn.BatchNorm with BatchNormOpts.ReLU
// (_FusedBatchNormEx): the values and gradients of the two layers.
// Batch norm has epsilon 1e-3 and momentum 0.9 (PyTorch's default 0.1 in
// Keras's convention). The stride-2 conv uses TensorFlow's SAME padding,
// which for 28 → 14 pads 0 rows/columns before and 1 after, where PyTorch's
// twin pads 1 on each side: the same output size and the same flops, only
// the window alignment differs. A step is Reset of one reused tape, forward,
// loss, Backward (gradients into the parameters) and the optimizer's Step,
// which updates the parameters and zeroes their gradients, as PyTorch's
// zero_grad + forward + backward + step.
func init() {
	register(workload{name: "W10", desc: "small CNN training step, batch 64 28x28x1, SGD", build: buildW10})
}

// W10's hyperparameters (workloads.json: lr, bn).
const (
	w10LR         = 0.01
	w10BNEpsilon  = 1e-3
	w10BNMomentum = 0.9 // Keras's convention: 1 − PyTorch's momentum 0.1
)

// w10 holds the model, optimizer, tape and batch of W10.
type w10 struct {
	model  *nn.Sequential
	opt    *optim.SGD
	tape   *autodiff.Tape
	x, lab *autodiff.Param
	loss   float64 // the last step's loss
}

// w10Flops counts the convolutions' multiply-adds as bench_torch.py does:
// forward and filter gradient of every conv, plus the input gradient of the
// second conv and of the depthwise conv (the first conv's input needs none).
func w10Flops() float64 {
	c1 := 2.0 * 64 * 28 * 28 * 32 * 1 * 9
	c2 := 2.0 * 64 * 14 * 14 * 64 * 32 * 9
	dw := 2.0 * 64 * 14 * 14 * 64 * 9
	return 2*c1 + 3*c2 + 3*dw
}

func newW10(threads int) (*w10, error) {
	const batch, size, classes = 64, 28, 10
	r := rand.New(rand.NewSource(10))
	momentum := w10BNMomentum
	// BN ReLU: one layer, _FusedBatchNormEx (the values and gradients of
	// BatchNorm then ReLU, with one pass over the output fewer), as
	// TensorFlow's graph optimizer fuses the pair.
	bnReLU := func(ch int) nn.Module {
		return nn.NewBatchNorm(ch, nn.BatchNormOpts{Momentum: &momentum, Epsilon: w10BNEpsilon, ReLU: true})
	}
	model := nn.NewSequential(
		nn.Named("conv1", nn.NewConv2D(1, 32, 3, nn.ConvOpts{Padding: "SAME", NoBias: true, Rand: r})),
		nn.Named("bn1", bnReLU(32)),
		nn.Named("conv2", nn.NewConv2D(32, 64, 3, nn.ConvOpts{Padding: "SAME", Strides: []int{2}, NoBias: true, Rand: r})),
		nn.Named("bn2", bnReLU(64)),
		nn.Named("dw3", nn.NewDepthwiseConv2D(64, 3, nn.ConvOpts{Padding: "SAME", NoBias: true, Rand: r})),
		nn.Named("bn3", bnReLU(64)),
		nn.GlobalAvgPool("NHWC"),
		nn.Named("fc", nn.NewDense(64, classes, nn.DenseOpts{Rand: r})),
	)
	if err := model.Err(); err != nil {
		return nil, err
	}
	opt, err := optim.NewSGD(model.Params(), optim.SGDSettings{LR: w10LR})
	if err != nil {
		return nil, err
	}
	x, err := randParam(r, "x", batch, size, size, 1)
	if err != nil {
		return nil, err
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(r.Intn(classes))
	}
	labT, err := tensorx.New([]int{batch}, labels)
	if err != nil {
		return nil, err
	}
	m := &w10{
		model: model, opt: opt,
		tape: autodiff.NewTape(autodiff.Threads(threads), autodiff.Training(true), autodiff.Seed(10)),
		x:    x, lab: &autodiff.Param{Name: "labels", Data: labT},
	}
	// One step checks the model end to end.
	if err := m.step(); err != nil {
		return nil, err
	}
	return m, nil
}

// step runs one training step. The batch is bound as non-trainable
// parameters, which share their data with the tape (no copy per step), as
// PyTorch's benchmark reuses its input tensor.
func (m *w10) step() error {
	t := m.tape
	t.Reset()
	logits := m.model.Forward(t, t.Param(m.x))
	loss := nn.SparseSoftmaxCrossEntropy(logits, t.Param(m.lab))
	if err := t.Backward(loss); err != nil {
		return err
	}
	l, err := loss.Item()
	if err != nil {
		return err
	}
	m.loss = l
	return m.opt.Step()
}

func buildW10(threads int) ([]mode, error) {
	m, err := newW10(threads)
	if err != nil {
		return nil, err
	}
	return []mode{{name: "step", flops: w10Flops(), run: m.step}}, nil
}
