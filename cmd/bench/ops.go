package main

import (
	"fmt"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// randParam returns a non-trainable parameter of random float32 data.
// Binding parameters shares their data with the tape (no per-repetition
// copy), as PyTorch's benchmark reuses its input tensors.
func randParam(r *rand.Rand, name string, shape ...int) (*autodiff.Param, error) {
	n, err := tensorx.Numel(shape)
	if err != nil {
		return nil, err
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	d, err := tensorx.New(shape, s)
	if err != nil {
		return nil, err
	}
	p := &autodiff.Param{Name: name, Data: d, Trainable: false}
	return p, nil
}

// parseAttrs builds an op's attrs from TensorFlow names, as the golden
// files do, so the benchmark does not depend on the attr struct types.
func parseAttrs(op string, m map[string]any) (any, error) {
	d, err := registry.Lookup(op)
	if err != nil {
		return nil, err
	}
	return d.ParseAttrs(m)
}

func ints(v ...int) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// opModes builds the standard modes of a single-op workload: fwd (forward
// on a reused tape, nothing recorded) and fwdbwd (forward recorded, then the
// gradient of a fixed random upstream w.r.t. every float input).
func opModes(threads int, op string, attrs any, shapes [][]int, outShape []int, flops, bytesFwd, bytesFwdBwd float64) ([]mode, error) {
	r := rand.New(rand.NewSource(1))
	var ps []*autodiff.Param
	for i, s := range shapes {
		p, err := randParam(r, fmt.Sprintf("in%d", i), s...)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	up, err := randParam(r, "upstream", outShape...)
	if err != nil {
		return nil, err
	}
	return paramModes(threads, op, attrs, ps, len(ps), up, flops, bytesFwd, bytesFwdBwd)
}

// paramModes builds the fwd and fwdbwd modes of op applied to the bound
// parameters ps (its inputs, in order). fwdbwd takes the gradient of the
// op's first output, weighted by the fixed upstream up, w.r.t. the first
// nSrc inputs (made trainable); the other inputs stay constants. The
// forward is run once to check the shapes.
func paramModes(threads int, op string, attrs any, ps []*autodiff.Param, nSrc int, up *autodiff.Param, flops, bytesFwd, bytesFwdBwd float64) ([]mode, error) {
	for _, p := range ps[:nSrc] {
		p.Trainable = true
	}
	fwdTape := autodiff.NewTape(autodiff.Threads(threads), autodiff.NoGrad())
	in := make([]autodiff.Value, len(ps))
	fwd := func() error {
		fwdTape.Reset()
		for i, p := range ps {
			in[i] = fwdTape.Param(p)
		}
		fwdTape.Apply(op, attrs, in...)
		return fwdTape.Err()
	}
	bwdTape := autodiff.NewTape(autodiff.Threads(threads))
	bin := make([]autodiff.Value, len(ps))
	upv := make([]autodiff.Value, 1)
	fwdbwd := func() error {
		bwdTape.Reset()
		for i, p := range ps {
			bin[i] = bwdTape.Param(p)
		}
		out := bwdTape.Apply(op, attrs, bin...)
		upv[0] = bwdTape.Param(up)
		_, err := bwdTape.Grad(out[:1], bin[:nSrc], upv, autodiff.GradOpts{})
		return err
	}
	if err := fwd(); err != nil {
		return nil, err
	}
	data := make([]*tensor.Dense, len(ps))
	for i, p := range ps {
		data[i] = p.Data
	}
	return []mode{
		{name: "fwd", flops: flops, bytes: bytesFwd, run: fwd, call: &opCall{op: op, attrs: attrs, inputs: data}},
		{name: "fwdbwd", flops: 3 * flops, bytes: bytesFwdBwd, run: fwdbwd,
			call: &opCall{op: op, attrs: attrs, inputs: data, upstream: up.Data, wrt: nSrc}},
	}, nil
}

// singleOp times one op applied to fixed inputs (a backprop kernel alone).
func singleOp(threads int, name, op string, attrs any, inputs []*tensor.Dense, flops float64) (mode, error) {
	tp := autodiff.NewTape(autodiff.Threads(threads), autodiff.NoGrad())
	var ps []*autodiff.Param
	for i, d := range inputs {
		ps = append(ps, &autodiff.Param{Name: fmt.Sprint("in", i), Data: d})
	}
	in := make([]autodiff.Value, len(ps)) // reused: the harness allocates nothing per run
	f := func() error {
		tp.Reset()
		for i, p := range ps {
			in[i] = tp.Param(p)
		}
		tp.Apply(op, attrs, in...)
		return tp.Err()
	}
	if err := f(); err != nil {
		return mode{}, err
	}
	return mode{name: name, flops: flops, run: f, call: &opCall{op: op, attrs: attrs, inputs: inputs}}, nil
}
