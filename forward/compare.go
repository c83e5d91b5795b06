package forward

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/registry"
)

// The comparison ops Greater, GreaterEqual, Less, LessEqual, Equal and
// NotEqual (docs/spec/cwise.md): z = x OP y elementwise, a bool tensor of
// the broadcast shape, for float32, float64, int32 and int64 operands of
// the same dtype (Equal and NotEqual also bool), with IEEE semantics (any
// comparison with NaN is false, except NaN != y). They are not
// differentiable (TensorFlow's NotDifferentiable).
//
// Equal and NotEqual have TensorFlow's incompatible_shape_error attr: when
// false, operands whose shapes do not broadcast give a scalar false (Equal)
// or true (NotEqual) instead of an error.

// EqualAttrs are the attributes of Equal and NotEqual.
type EqualAttrs struct {
	// IncompatibleShapeError (default true) makes operands that do not
	// broadcast an error; when false they compare as unequal (a scalar
	// result).
	IncompatibleShapeError *bool `tf:"incompatible_shape_error" default:"true"`
}

// cmpOp names a comparison.
type cmpOp uint8

const (
	cmpGreater cmpOp = iota
	cmpGreaterEqual
	cmpLess
	cmpLessEqual
	cmpEqual
	cmpNotEqual
)

// ordered is the set of element types the ordering comparisons take.
type ordered interface {
	float32 | float64 | int32 | int64
}

func init() {
	for _, c := range []struct {
		name, doc string
		op        cmpOp
	}{
		{"Greater", "z = x > y elementwise (bool), broadcasting", cmpGreater},
		{"GreaterEqual", "z = x >= y elementwise (bool), broadcasting", cmpGreaterEqual},
		{"Less", "z = x < y elementwise (bool), broadcasting", cmpLess},
		{"LessEqual", "z = x <= y elementwise (bool), broadcasting", cmpLessEqual},
		{"Equal", "z = x == y elementwise (bool), broadcasting", cmpEqual},
		{"NotEqual", "z = x != y elementwise (bool), broadcasting", cmpNotEqual},
	} {
		d := &registry.OpDef{Name: c.name, Doc: c.doc,
			Inputs: args("x", "y"), Outputs: args("z"),
			Kernels: numKernels(cmpKernel[float32](c.name, c.op), cmpKernel[float64](c.name, c.op),
				cmpKernel[int32](c.name, c.op), cmpKernel[int64](c.name, c.op))}
		if c.op == cmpEqual || c.op == cmpNotEqual {
			d.Attrs = EqualAttrs{}
			d.Kernels[tensor.Bool] = eqBoolKernel(c.name, c.op)
		}
		registry.MustRegister(d)
	}
}

// cmpPlan checks the operands of a comparison and plans their broadcast.
// For Equal and NotEqual with incompatible_shape_error false, operands
// that do not broadcast give incompatible == true and no error.
func cmpPlan(op string, attrs any, x, y *tensor.Dense) (p bcastNPlan, incompatible bool, err error) {
	if y.Dtype() != x.Dtype() {
		return p, false, registry.Errorf(registry.ErrDtype, "%s: input 1 (y) has dtype %v, expected %v like input 0 (x)", op, y.Dtype(), x.Dtype())
	}
	p, ok, err := newBcastNPlan(x.Shape(), y.Shape())
	if !ok {
		if a, isEq := attrs.(EqualAttrs); isEq && a.IncompatibleShapeError != nil && !*a.IncompatibleShapeError {
			return p, true, nil
		}
		return p, false, bcastShapeError(op, x.Shape(), y.Shape())
	}
	if err != nil {
		return p, false, fmt.Errorf("%s: %w", op, err)
	}
	return p, false, nil
}

// cmpIncompatible is the scalar result of Equal (false) or NotEqual (true)
// for operands that do not broadcast.
func cmpIncompatible(kc *registry.KernelCtx, op cmpOp) ([]*tensor.Dense, error) {
	out, err := kc.Output(tensor.Bool)
	if err != nil {
		return nil, err
	}
	data[bool](out)[0] = op == cmpNotEqual
	return kc.Results(out), nil
}

// cmpKernel returns the kernel of comparison op for element type T.
func cmpKernel[T ordered](name string, op cmpOp) registry.Kernel {
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		p, incompatible, err := cmpPlan(name, attrs, in[0], in[1])
		if err != nil {
			return nil, err
		}
		if incompatible {
			return cmpIncompatible(kc, op)
		}
		out, err := kc.Output(tensor.Bool, p.out()...)
		if err != nil {
			return nil, err
		}
		s := cmpState[T]{op: op, o: data[bool](out), a: data[T](in[0]), b: data[T](in[1])}
		bcastNRun(kc.NumThreads(), &p, &s, cmpStateRow[T])
		return kc.Results(out), nil
	}
}

// eqBoolKernel is the bool kernel of Equal and NotEqual.
func eqBoolKernel(name string, op cmpOp) registry.Kernel {
	return func(kc *registry.KernelCtx, attrs any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		p, incompatible, err := cmpPlan(name, attrs, in[0], in[1])
		if err != nil {
			return nil, err
		}
		if incompatible {
			return cmpIncompatible(kc, op)
		}
		out, err := kc.Output(tensor.Bool, p.out()...)
		if err != nil {
			return nil, err
		}
		s := cmpState[bool]{op: op, o: data[bool](out), a: data[bool](in[0]), b: data[bool](in[1])}
		bcastNRun(kc.NumThreads(), &p, &s, eqBoolRow)
		return kc.Results(out), nil
	}
}

// cmpState is the state of a comparison kernel's rows: the op, the output
// and the operands.
type cmpState[T any] struct {
	op   cmpOp
	o    []bool
	a, b []T
}

// cmpStateRow is the bcastNRow of the ordered comparisons.
func cmpStateRow[T ordered](s *cmpState[T], pos, m int, off, inc *[bcastMaxOps]int) {
	cmpRow(s.op, s.o[pos:pos+m], s.a[off[0]:], inc[0], s.b[off[1]:], inc[1])
}

// eqBoolRow is the bcastNRow of Equal and NotEqual on bool operands.
func eqBoolRow(s *cmpState[bool], pos, m int, off, inc *[bcastMaxOps]int) {
	want := s.op == cmpEqual
	ja, jb := off[0], off[1]
	for i := pos; i < pos+m; i++ {
		s.o[i] = (s.a[ja] == s.b[jb]) == want
		ja += inc[0]
		jb += inc[1]
	}
}

// cmpRow computes o[i] = a[i·ia] OP b[i·ib] (ia, ib are 0 for a broadcast
// scalar operand, 1 otherwise).
func cmpRow[T ordered](op cmpOp, o []bool, a []T, ia int, b []T, ib int) {
	if ia == 1 && ib == 1 {
		a, b = a[:len(o)], b[:len(o)]
		switch op {
		case cmpGreater:
			for i := range o {
				o[i] = a[i] > b[i]
			}
		case cmpGreaterEqual:
			for i := range o {
				o[i] = a[i] >= b[i]
			}
		case cmpLess:
			for i := range o {
				o[i] = a[i] < b[i]
			}
		case cmpLessEqual:
			for i := range o {
				o[i] = a[i] <= b[i]
			}
		case cmpEqual:
			for i := range o {
				o[i] = a[i] == b[i]
			}
		case cmpNotEqual:
			for i := range o {
				o[i] = a[i] != b[i]
			}
		}
		return
	}
	ja, jb := 0, 0
	for i := range o {
		x, y := a[ja], b[jb]
		switch op {
		case cmpGreater:
			o[i] = x > y
		case cmpGreaterEqual:
			o[i] = x >= y
		case cmpLess:
			o[i] = x < y
		case cmpLessEqual:
			o[i] = x <= y
		case cmpEqual:
			o[i] = x == y
		case cmpNotEqual:
			o[i] = x != y
		}
		ja += ia
		jb += ib
	}
}
