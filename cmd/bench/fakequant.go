package main

import (
	"math/rand"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// W8: FakeQuantWithMinMaxVarsPerChannel, 8 bits, full range, x [32, 56, 56,
// 64] NHWC float32 (channels last, TensorFlow's per-channel axis), with
// bench_torch.py's data: x ~ 3·N(0, 1) and per-channel ranges min_c ∈
// [−3, −2), max_c ∈ [2, 3), so that a few percent of x falls outside the
// range and the min/max gradients are not trivially zero. fwd quantises;
// fwdbwd adds TensorFlow's gradient for a fixed random upstream: x's
// straight-through gradient and the per-channel min and max gradients
// (FakeQuantWithMinMaxVarsPerChannelGradient). PyTorch's W8 computes x's
// gradient only and its W8L adds learnable scale/zero-point gradients; both
// compare with this W8.
func init() {
	register(workload{name: "W8", desc: "FakeQuantWithMinMaxVarsPerChannel 8 bit N32 56x56 C64 NHWC (grads x, min, max)", build: buildW8})
}

func buildW8(threads int) ([]mode, error) {
	const n, h, w, c = 32, 56, 56, 64
	attrs, err := parseAttrs("FakeQuantWithMinMaxVarsPerChannel", map[string]any{"num_bits": 8.0, "narrow_range": false})
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewSource(8))
	x, err := randParam(r, "x", n, h, w, c)
	if err != nil {
		return nil, err
	}
	xs := tensorx.MustSlice[float32](x.Data)
	for i := range xs {
		xs[i] *= 3
	}
	lo, hi := make([]float32, c), make([]float32, c)
	for i := range lo {
		lo[i] = -2 - r.Float32()
		hi[i] = 2 + r.Float32()
	}
	loT, err := tensorx.New([]int{c}, lo)
	if err != nil {
		return nil, err
	}
	hiT, err := tensorx.New([]int{c}, hi)
	if err != nil {
		return nil, err
	}
	up, err := randParam(r, "upstream", n, h, w, c)
	if err != nil {
		return nil, err
	}
	ps := []*autodiff.Param{x, {Name: "min", Data: loT}, {Name: "max", Data: hiT}}
	// Minimum traffic (workloads.json): fwd reads x and writes y (2 tensor
	// passes); fwdbwd adds reading x and dy and writing dx (5 passes).
	t := tensorBytes(n, h, w, c)
	return paramModes(threads, "FakeQuantWithMinMaxVarsPerChannel", attrs, ps, 3, up, 0, 2*t, 5*t)
}
