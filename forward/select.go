package forward

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Select and SelectV2 (docs/spec/cwise.md; TensorFlow's tf.where with x
// and y): output = condition ? t : e elementwise, the dtype of t (float32,
// float64, int32, int64 or bool; e must match, condition is bool).
//
//   - Select: t and e have the same shape; condition has that shape too,
//     or is a scalar (choosing all of t or all of e), or, when t is not a
//     vector, a vector choosing rows (whole slices along t's first
//     dimension).
//   - SelectV2: condition, t and e broadcast against each other (NumPy's
//     rules), and the output has the broadcast shape.
//
// The gradients route the upstream gradient to t where condition holds
// and to e elsewhere (SelectV2 summing it back over broadcast
// dimensions); condition gets none.

func init() {
	kernels := func(k func(elem tensor.Dtype) registry.Kernel) map[tensor.Dtype]registry.Kernel {
		m := map[tensor.Dtype]registry.Kernel{}
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool} {
			m[dt] = k(dt)
		}
		return m
	}
	registry.MustRegister(&registry.OpDef{Name: "Select",
		Doc:    "output = condition ? t : e elementwise; condition has t's shape, is a scalar, or a vector choosing rows of t",
		Inputs: args("condition", "t", "e"), Outputs: args("output"), TypeInput: 1,
		Kernels: kernels(func(dt tensor.Dtype) registry.Kernel {
			switch dt {
			case tensor.Float32:
				return selectKernel[float32]
			case tensor.Float64:
				return selectKernel[float64]
			case tensor.Int32:
				return selectKernel[int32]
			case tensor.Int64:
				return selectKernel[int64]
			}
			return selectKernel[bool]
		}),
		Samples: selectSamples})
	registry.MustRegister(&registry.OpDef{Name: "SelectV2",
		Doc:    "output = condition ? t : e elementwise, the three broadcasting against each other",
		Inputs: args("condition", "t", "e"), Outputs: args("output"), TypeInput: 1,
		Kernels: kernels(func(dt tensor.Dtype) registry.Kernel {
			switch dt {
			case tensor.Float32:
				return selectV2Kernel[float32]
			case tensor.Float64:
				return selectV2Kernel[float64]
			case tensor.Int32:
				return selectV2Kernel[int32]
			case tensor.Int64:
				return selectV2Kernel[int64]
			}
			return selectV2Kernel[bool]
		}),
		Samples: selectV2Samples})
}

// selectCheckDtypes checks that condition is bool and e has t's dtype.
func selectCheckDtypes(op string, in []*tensor.Dense) error {
	if dt := in[0].Dtype(); dt != tensor.Bool {
		return registry.Errorf(registry.ErrDtype, "%s: input 0 (condition) has dtype %v, expected bool", op, dt)
	}
	if in[2].Dtype() != in[1].Dtype() {
		return registry.Errorf(registry.ErrDtype, "%s: input 2 (e) has dtype %v, expected %v like input 1 (t)", op, in[2].Dtype(), in[1].Dtype())
	}
	return nil
}

// selectSameSize is TensorFlow's error for then and else of different
// shapes.
func selectSameSize(t, e []int) error {
	return registry.Errorf(registry.ErrInvalidArgument, "Select: 'then' and 'else' must have the same size.  but received: %s vs. %s", shapeDebugString(t), shapeDebugString(e))
}

func selectKernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	if err := selectCheckDtypes("Select", in); err != nil {
		return nil, err
	}
	c, t, e := in[0], in[1], in[2]
	cs, ts, es := c.Shape(), t.Shape(), e.Shape()
	cond := data[bool](c)
	switch {
	case len(cs) == 0:
		if !tensorx.SameShape(ts, es) {
			return nil, selectSameSize(ts, es)
		}
		src := e
		if cond[0] {
			src = t
		}
		out, err := like(kc, src)
		if err != nil {
			return nil, err
		}
		tensorx.CopyData(out, src)
		return kc.Results(out), nil
	case len(cs) == 1 && len(ts) != 1:
		if len(ts) == 0 {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Select: 'then' must be at least a vector, but saw shape: %s", shapeDebugString(ts))
		}
		if ts[0] != cs[0] {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Select: Number of batches of 'then' must match size of 'cond', but saw: %d vs. %d", ts[0], cs[0])
		}
		if !tensorx.SameShape(ts, es) {
			return nil, selectSameSize(ts, es)
		}
		out, err := like(kc, t)
		if err != nil {
			return nil, err
		}
		o, tv, ev := data[T](out), data[T](t), data[T](e)
		if len(cond) > 0 {
			row := len(o) / len(cond)
			for i, ci := range cond {
				src := ev
				if ci {
					src = tv
				}
				copy(o[i*row:(i+1)*row], src[i*row:(i+1)*row])
			}
		}
		return kc.Results(out), nil
	}
	for i, s := range [][]int{ts, es} {
		if !tensorx.SameShape(cs, s) {
			return nil, registry.Errorf(registry.ErrInvalidArgument, "Select: Inputs to operation Select of type Select must have the same size and shape.  Input 0: %s != input %d: %s", shapeDebugString(cs), i+1, shapeDebugString(s))
		}
	}
	out, err := like(kc, t)
	if err != nil {
		return nil, err
	}
	o, tv, ev := data[T](out), data[T](t), data[T](e)
	for i, ci := range cond {
		if ci {
			o[i] = tv[i]
		} else {
			o[i] = ev[i]
		}
	}
	return kc.Results(out), nil
}

// selectState is the state of SelectV2's rows.
type selectState[T any] struct {
	o, t, e []T
	c       []bool
}

// selectRow is SelectV2's bcastNRow (operands: condition, t, e).
func selectRow[T any](s *selectState[T], pos, m int, off, inc *[bcastMaxOps]int) {
	jc, jt, je := off[0], off[1], off[2]
	o := s.o[pos : pos+m]
	if inc[0] == 1 && inc[1] == 1 && inc[2] == 1 {
		c, t, e := s.c[jc:jc+m], s.t[jt:jt+m], s.e[je:je+m]
		for i := range o {
			if c[i] {
				o[i] = t[i]
			} else {
				o[i] = e[i]
			}
		}
		return
	}
	for i := range o {
		if s.c[jc] {
			o[i] = s.t[jt]
		} else {
			o[i] = s.e[je]
		}
		jc += inc[0]
		jt += inc[1]
		je += inc[2]
	}
}

func selectV2Kernel[T tensorx.Elem](kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
	if err := selectCheckDtypes("SelectV2", in); err != nil {
		return nil, err
	}
	c, t, e := in[0], in[1], in[2]
	p, ok, err := newBcastNPlan(c.Shape(), t.Shape(), e.Shape())
	if !ok {
		return nil, registry.Errorf(registry.ErrInvalidArgument, "SelectV2: condition %s, then %s, and else %s must be broadcastable",
			shapeDebugString(c.Shape()), shapeDebugString(t.Shape()), shapeDebugString(e.Shape()))
	}
	if err != nil {
		return nil, fmt.Errorf("SelectV2: %w", err)
	}
	out, err := kc.Output(t.Dtype(), p.out()...)
	if err != nil {
		return nil, err
	}
	s := selectState[T]{o: data[T](out), t: data[T](t), e: data[T](e), c: data[bool](c)}
	bcastNRun(kc.NumThreads(), &p, &s, selectRow[T])
	return kc.Results(out), nil
}
