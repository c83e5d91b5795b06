package nn

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// OpDropoutMask is the name of the dropout-mask op registered by package
// nn (see DropoutMaskAttrs): TensorFlow has no such op (its dropout is a
// composite of RandomUniform, GreaterEqual, Cast and Mul).
const OpDropoutMask = "tapegrad.DropoutMask"

// DropoutMaskAttrs are the attrs of tapegrad.DropoutMask(x) -> mask: a
// tensor of x's shape and dtype whose elements are, independently, 0 with
// probability Rate and 1/(1−Rate) otherwise (computed in x's dtype, as
// TensorFlow's dropout scales), drawn in row-major order from the caller's
// random source (the tape's, see autodiff.Seed): an element is kept when a
// uniform draw in [0, 1) is >= Rate, as in tf.nn.dropout. The op is not
// differentiable (its output is a constant for the tape); Dropout multiplies
// x by it.
type DropoutMaskAttrs struct {
	// Rate is the probability of dropping an element, in [0, 1).
	Rate float64 `tf:"rate"`
}

func init() {
	registry.MustRegister(&registry.OpDef{
		Name:   OpDropoutMask,
		Doc:    "mask of x's shape and dtype: 0 with probability rate, else 1/(1-rate), drawn from the caller's random source",
		Inputs: []registry.Arg{{Name: "x"}}, Outputs: []registry.Arg{{Name: "mask"}},
		Attrs: DropoutMaskAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{
			tensor.Float32: dropoutMaskKernel[float32],
			tensor.Float64: dropoutMaskKernel[float64],
		},
	})
	registry.MustNotDifferentiable(OpDropoutMask)
}

// DropoutMask is the typed builder of tapegrad.DropoutMask (the shape of
// the builders cmd/genops writes for the library's ops).
func DropoutMask(e registry.Emitter, attrs registry.Attrs[DropoutMaskAttrs], x registry.Value) registry.Value {
	return registry.Apply1(e, OpDropoutMask, attrs.Boxed(), x)
}

func dropoutMaskKernel[T tensorx.Float](kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	a := attrs.(DropoutMaskAttrs)
	if !(a.Rate >= 0 && a.Rate < 1) {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: rate must be in [0, 1), got %v", OpDropoutMask, a.Rate)
	}
	if kc.Rand == nil {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "%s: the caller has no random source", OpDropoutMask)
	}
	out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
	if err != nil {
		return nil, err
	}
	m := tensorx.MustSlice[T](out)
	scale := T(1) / (T(1) - T(a.Rate))
	r := kc.Rand
	for i := range m {
		if r.Float64() >= a.Rate {
			m[i] = scale
		} else {
			m[i] = 0
		}
	}
	return kc.Results(out), nil
}

// fail records err on t (unless t already has an error) and returns a
// poisoned value.
func fail(t *autodiff.Tape, err error) autodiff.Value {
	if t == nil {
		return autodiff.Value{}
	}
	return t.Fail("", err)
}

// configError returns an error wrapping registry.ErrInvalidArgument.
func configError(format string, args ...any) error {
	return registry.Errorf(registry.ErrInvalidArgument, format, args...)
}

// wrapf prefixes err with a context, keeping its sentinel.
func wrapf(err error, format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
