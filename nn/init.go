package nn

import (
	"math"
	"math/rand"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Initializer fills t (float32 or float64) with initial values, drawing
// any randomness from r in row-major order, so the same source gives the
// same values. Initializers take an explicit source: there is no global
// random state.
type Initializer func(r *rand.Rand, t *tensor.Dense) error

// Fans returns the fan-in and fan-out of a weight of the given shape, as
// TensorFlow's initializers compute them: for a scalar 1 and 1; for a
// vector its length twice; for a matrix [in, out] in and out; for a
// convolution filter [..., in, out] (HWIO: [KH, KW, in, out]; depthwise
// [KH, KW, C, M]) in·r and out·r, where r is the product of the leading
// (spatial) dimensions.
func Fans(shape []int) (fanIn, fanOut float64) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return float64(shape[0]), float64(shape[0])
	case 2:
		return float64(shape[0]), float64(shape[1])
	}
	rf := 1.0
	for _, d := range shape[:len(shape)-2] {
		rf *= float64(d)
	}
	return float64(shape[len(shape)-2]) * rf, float64(shape[len(shape)-1]) * rf
}

// GlorotUniform draws from U(−l, l), l = sqrt(6 / (fanIn + fanOut))
// (Glorot and Bengio 2010; Keras's glorot_uniform, the default kernel
// initializer of Dense and Conv2D).
func GlorotUniform(r *rand.Rand, t *tensor.Dense) error {
	in, out := Fans(t.Shape())
	return uniform(r, t, math.Sqrt(3/math.Max(1, (in+out)/2)))
}

// GlorotNormal draws from a normal distribution truncated at two standard
// deviations, with standard deviation sqrt(2 / (fanIn + fanOut)) after
// truncation (Keras's glorot_normal).
func GlorotNormal(r *rand.Rand, t *tensor.Dense) error {
	in, out := Fans(t.Shape())
	return truncNormal(r, t, math.Sqrt(1/math.Max(1, (in+out)/2)))
}

// HeUniform draws from U(−l, l), l = sqrt(6 / fanIn) (He et al. 2015;
// Keras's he_uniform).
func HeUniform(r *rand.Rand, t *tensor.Dense) error {
	in, _ := Fans(t.Shape())
	return uniform(r, t, math.Sqrt(6/math.Max(1, in)))
}

// HeNormal draws from a normal distribution truncated at two standard
// deviations, with standard deviation sqrt(2 / fanIn) after truncation
// (Keras's he_normal).
func HeNormal(r *rand.Rand, t *tensor.Dense) error {
	in, _ := Fans(t.Shape())
	return truncNormal(r, t, math.Sqrt(2/math.Max(1, in)))
}

// Zeros fills t with 0 (r is not used and may be nil).
func Zeros(r *rand.Rand, t *tensor.Dense) error { return fill(t, 0) }

// Ones fills t with 1 (r is not used and may be nil).
func Ones(r *rand.Rand, t *tensor.Dense) error { return fill(t, 1) }

// Constant returns an initializer that fills a tensor with v.
func Constant(v float64) Initializer {
	return func(_ *rand.Rand, t *tensor.Dense) error { return fill(t, v) }
}

// truncatedStd is the standard deviation of a standard normal distribution
// truncated to [−2, 2]; Keras divides by it so that the truncated
// distribution has the requested standard deviation.
const truncatedStd = 0.87962566103423978

// uniform fills t with draws from U(−limit, limit).
func uniform(r *rand.Rand, t *tensor.Dense, limit float64) error {
	return fillFunc(r, t, func() float64 { return limit * (2*r.Float64() - 1) })
}

// truncNormal fills t with draws from N(0, (std/truncatedStd)²) truncated
// at two of its standard deviations (redrawn outside, as TensorFlow's
// truncated_normal).
func truncNormal(r *rand.Rand, t *tensor.Dense, std float64) error {
	s := std / truncatedStd
	return fillFunc(r, t, func() float64 {
		for {
			z := r.NormFloat64()
			if z >= -2 && z <= 2 {
				return s * z
			}
		}
	})
}

// fillFunc fills a float tensor with successive values of f.
func fillFunc(r *rand.Rand, t *tensor.Dense, f func() float64) error {
	if r == nil {
		return configError("nn: initializer: nil *rand.Rand")
	}
	if t == nil {
		return configError("nn: initializer: nil tensor")
	}
	switch t.Dtype() {
	case tensor.Float32:
		s := tensorx.MustSlice[float32](t)
		for i := range s {
			s[i] = float32(f())
		}
	case tensor.Float64:
		s := tensorx.MustSlice[float64](t)
		for i := range s {
			s[i] = f()
		}
	default:
		return registry.Errorf(registry.ErrDtype, "nn: initializer: want a float32 or float64 tensor, got %v", t.Dtype())
	}
	return nil
}

// fill sets every element of a float tensor to v.
func fill(t *tensor.Dense, v float64) error {
	if t == nil {
		return configError("nn: initializer: nil tensor")
	}
	switch t.Dtype() {
	case tensor.Float32:
		s := tensorx.MustSlice[float32](t)
		for i := range s {
			s[i] = float32(v)
		}
	case tensor.Float64:
		s := tensorx.MustSlice[float64](t)
		for i := range s {
			s[i] = v
		}
	default:
		return registry.Errorf(registry.ErrDtype, "nn: initializer: want a float32 or float64 tensor, got %v", t.Dtype())
	}
	return nil
}

// NewParam returns a trainable parameter for a layer of the user's: named
// name (unique within its layer; a Sequential prefixes it with the layer's
// index or name), of the given shape and dtype (float32 or float64),
// filled by init (GlorotUniform, Zeros, Constant(v), ...) drawing from
// rng (nil is fine for initializers that draw nothing). Return it from
// the layer's Params, the same pointer on every call.
func NewParam(name string, shape []int, dtype tensor.Dtype, init Initializer, rng *rand.Rand) (*autodiff.Param, error) {
	if name == "" {
		return nil, configError("nn.NewParam: empty name")
	}
	if init == nil {
		return nil, configError("nn.NewParam: %s: nil initializer", name)
	}
	for _, d := range shape {
		if d < 0 {
			return nil, configError("nn.NewParam: %s: negative dimension in shape %v", name, shape)
		}
	}
	p, err := newParam(name, dtype, shape, init, rng)
	if err != nil {
		return nil, wrapf(err, "nn.NewParam")
	}
	return p, nil
}

// newParam returns a parameter named name of dtype dt and the given shape,
// initialised by init from r.
func newParam(name string, dt tensor.Dtype, shape []int, init Initializer, r *rand.Rand) (*autodiff.Param, error) {
	if dt != tensor.Float32 && dt != tensor.Float64 {
		return nil, registry.Errorf(registry.ErrDtype, "parameters must be float32 or float64, got %v", dt)
	}
	d, err := tensorx.Zeros(dt, shape)
	if err != nil {
		return nil, err
	}
	if err := init(r, d); err != nil {
		return nil, wrapf(err, "initializing %s", name)
	}
	return autodiff.NewParam(name, d)
}
