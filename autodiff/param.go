package autodiff

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Param is a long-lived trainable tensor (a weight): its data, its
// accumulated gradient and a trainable flag. A Param is never an op operand
// itself; bind it to a tape with Tape.Param, which returns a Value.
//
// Gradients accumulate in Grad across Backward calls until ZeroGrad.
// Code that changes Data in place (optimizers) must call MarkModified, so a
// tape that used the old data reports the change instead of computing a
// wrong gradient.
type Param struct {
	// Name identifies the parameter (in checkpoints and error messages).
	Name string
	// Data is the parameter's value.
	Data *tensor.Dense
	// Grad is the accumulated gradient: nil until the first Backward, then
	// of Data's shape and dtype.
	Grad *tensor.Dense
	// Trainable parameters receive gradients in Backward.
	Trainable bool

	version uint64
}

// NewParam returns a trainable parameter holding a contiguous copy of data.
func NewParam(name string, data *tensor.Dense) (*Param, error) {
	d, err := tensorx.Clone(data)
	if err != nil {
		return nil, fmt.Errorf("NewParam %q: %w", name, err)
	}
	switch d.Dtype() {
	case tensor.Float32, tensor.Float64:
	default:
		return nil, fmt.Errorf("%w: NewParam %q: parameters must be float32 or float64, got %v", ErrDtype, name, d.Dtype())
	}
	return &Param{Name: name, Data: d, Trainable: true}, nil
}

// MarkModified records that Data was changed in place.
func (p *Param) MarkModified() { p.version++ }

// Version counts the in-place modifications recorded by MarkModified.
func (p *Param) Version() uint64 { return p.version }

// ZeroGrad sets the accumulated gradient to zero (keeping its buffer).
func (p *Param) ZeroGrad() {
	if p.Grad != nil {
		zero(p.Grad)
	}
}

// checkGrad reports whether accumulate(g) would fail, without changing p:
// g must match p.Grad, or p.Data if p has no Grad yet.
func (p *Param) checkGrad(g *tensor.Dense) error {
	ref, what := p.Grad, "Grad"
	if ref == nil {
		ref, what = p.Data, "Data"
	}
	if ref.Dtype() != g.Dtype() || !tensorx.SameShape(ref.Shape(), g.Shape()) {
		return fmt.Errorf("%w: parameter %q: gradient %v %v does not match %s %v %v", ErrShape, p.Name, g.Dtype(), g.Shape(), what, ref.Dtype(), ref.Shape())
	}
	return nil
}

// accumulate adds g into p.Grad, allocating it on first use.
func (p *Param) accumulate(g *tensor.Dense) error {
	if err := p.checkGrad(g); err != nil {
		return err
	}
	if p.Grad == nil {
		z, err := tensorx.Zeros(p.Data.Dtype(), p.Data.Shape())
		if err != nil {
			return err
		}
		p.Grad = z
	}
	switch g.Dtype() {
	case tensor.Float32:
		dst, src := p.Grad.Float32s(), g.Float32s()
		for i, v := range src {
			dst[i] += v
		}
	case tensor.Float64:
		dst, src := p.Grad.Float64s(), g.Float64s()
		for i, v := range src {
			dst[i] += v
		}
	}
	return nil
}
