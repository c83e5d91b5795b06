package main

import (
	"math/rand"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// W7: FusedBatchNormV3 in training, x [32, 56, 56, 64] NHWC float32, as
// bench_torch.py's F.batch_norm(training=True, momentum 0.1, eps 1e-3):
// scale 1, offset 0, running mean 0 and variance 1, blended with
// exponential_avg_factor 0.1 (PyTorch's momentum) so that the running
// statistics are updated as PyTorch's are. fwd computes y and the batch
// statistics; fwdbwd adds the gradients of a fixed random upstream for y
// w.r.t. x, scale and offset (TensorFlow's gradient, FusedBatchNormGradV3).
func init() {
	register(workload{name: "W7", desc: "FusedBatchNormV3 training N32 56x56 C64 NHWC", build: buildW7})
}

// tensorBytes is the size in bytes of a float32 tensor of the given shape.
func tensorBytes(shape ...int) float64 {
	n := 4.0
	for _, d := range shape {
		n *= float64(d)
	}
	return n
}

// fillParam returns a non-trainable float32 parameter with every element v.
func fillParam(name string, v float32, shape ...int) (*autodiff.Param, error) {
	n, err := tensorx.Numel(shape)
	if err != nil {
		return nil, err
	}
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	d, err := tensorx.New(shape, s)
	if err != nil {
		return nil, err
	}
	return &autodiff.Param{Name: name, Data: d}, nil
}

func buildW7(threads int) ([]mode, error) {
	const n, h, w, c = 32, 56, 56, 64
	attrs, err := parseAttrs("FusedBatchNormV3", map[string]any{
		"epsilon": 1e-3, "exponential_avg_factor": 0.1, "data_format": "NHWC", "is_training": true,
	})
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(7))
	x, err := randParam(r, "x", n, h, w, c)
	if err != nil {
		return nil, err
	}
	up, err := randParam(r, "upstream", n, h, w, c)
	if err != nil {
		return nil, err
	}
	ps := []*autodiff.Param{x}
	for _, s := range []struct {
		name string
		v    float32
	}{{"scale", 1}, {"offset", 0}, {"mean", 0}, {"variance", 1}} {
		p, err := fillParam(s.name, s.v, c)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	// Minimum traffic (workloads.json): fwd reads x and writes y (2 tensor
	// passes); fwdbwd adds reading x and dy and writing dx (5 passes).
	t := tensorBytes(n, h, w, c)
	return paramModes(threads, "FusedBatchNormV3", attrs, ps, 3, up, 0, 2*t, 5*t)
}
