package backward

import (
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Samples of StridedSliceGrad and tapegrad.SliceGrad: the configurations
// of their forward ops' samples (the same slices), with the input replaced
// by its shape and an upstream gradient of the slice's shape. Both ops are
// linear in dy, the only float input.

// slIndexLike returns v as a vector of the dtype of like (int32 or int64).
func slIndexLike(like *tensor.Dense, v []int) *tensor.Dense {
	if like.Dtype() == tensor.Int64 {
		w := make([]int64, len(v))
		for i, x := range v {
			w[i] = int64(x)
		}
		return mustSample(tensorx.New([]int{len(w)}, w))
	}
	w := make([]int32, len(v))
	for i, x := range v {
		w[i] = int32(x)
	}
	return mustSample(tensorx.New([]int{len(w)}, w))
}

// forwardSamples returns the samples of the forward op named op.
func forwardSamples(op string, r *rand.Rand) []registry.Sample {
	d, err := registry.Lookup(op)
	if err != nil || d.Samples == nil {
		panic("backward: no samples of " + op)
	}
	return d.Samples(r)
}

// stridedSliceGradSamples are the samples of StridedSliceGrad.
func stridedSliceGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, s := range forwardSamples(forward.OpStridedSlice, r) {
		x := s.Inputs[0]
		a := s.Attrs.(forward.StridedSliceAttrs)
		box, err := forward.ParseStridedSlice("StridedSliceGrad", x.Shape(), s.Inputs[1], s.Inputs[2], s.Inputs[3], a)
		if err != nil {
			panic("backward: bad StridedSlice sample " + s.Name + ": " + err.Error())
		}
		dy := forward.SampleNormal(r, box.Final()...)
		out = append(out, registry.Sample{Name: s.Name, Attrs: a,
			Inputs: []*tensor.Dense{slIndexLike(s.Inputs[1], tensorx.Shape(x)), s.Inputs[1], s.Inputs[2], s.Inputs[3], dy}})
	}
	return out
}

// sliceGradSamples are the samples of tapegrad.SliceGrad, from Slice's.
func sliceGradSamples(r *rand.Rand) []registry.Sample {
	var out []registry.Sample
	for _, s := range forwardSamples(forward.OpSlice, r) {
		x := s.Inputs[0]
		begin, err := tensorx.Ints(s.Inputs[1])
		if err != nil {
			panic(err)
		}
		size, err := tensorx.Ints(s.Inputs[2])
		if err != nil {
			panic(err)
		}
		for i := range size {
			if size[i] == -1 {
				size[i] = x.Shape()[i] - begin[i]
			}
		}
		out = append(out, registry.Sample{Name: s.Name,
			Inputs: []*tensor.Dense{slIndexLike(s.Inputs[1], tensorx.Shape(x)), s.Inputs[1], forward.SampleNormal(r, size...)}})
	}
	return out
}
