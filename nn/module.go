package nn

import (
	"fmt"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Module is a layer or a model: a function of one value on a tape, with
// named trainable parameters and named buffers (non-trainable state that a
// checkpoint keeps, such as batch-norm running statistics).
//
// Forward applies the module on t (whose mode, t.IsTraining(), selects
// training or evaluation behaviour) and returns its output; errors are
// recorded on t. Params and Buffers return the module's state in a fixed
// order, with unique names.
//
// Params and Buffers must return the same pointers on every call: the
// module's own *autodiff.Param and *Buffer values, made once when the
// module is built (see autodiff.NewParam), never fresh ones or copies.
// Optimizers, checkpoints and NewSequential (which renames them) hold on to
// these pointers; a Param made anew on each call would receive gradients
// that no optimizer ever applies.
//
// A module may also have the optional method
//
//	Err() error
//
// reporting a configuration error found when it was built (a negative
// size, an unknown padding). The constructors of this package return a
// module in any case and keep such an error instead of returning it, so
// that models read as one expression; NewSequential calls Err on every
// layer and makes the first error its own, naming the layer, and Forward
// then records it on the tape. User modules with constructors that can
// fail should do the same.
//
// A module with parameters or buffers belongs to at most one Sequential
// (see NewSequential); a stateless one (ReLU, Flatten) may be shared.
type Module interface {
	Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value
	Params() []*autodiff.Param
	Buffers() []*Buffer
}

// Buffer is a named tensor of non-trainable module state: it receives no
// gradient, layers update it in Forward (outside the tape), and
// checkpoints save it.
type Buffer struct {
	// Name identifies the buffer (in checkpoints).
	Name string
	// Data is the buffer's value. Layers update it in place.
	Data *tensor.Dense
}

// newBuffer returns a buffer of dtype dt and the given shape, every element
// v.
func newBuffer(name string, dt tensor.Dtype, shape []int, v float64) (*Buffer, error) {
	d, err := tensorx.Zeros(dt, shape)
	if err != nil {
		return nil, err
	}
	if err := fill(d, v); err != nil {
		return nil, err
	}
	return &Buffer{Name: name, Data: d}, nil
}

// binder maps a parameter to its value on the tape; nil means Tape.Param.
// The tests bind parameters to watched leaves, to check gradients with
// respect to them with package gradcheck.
type binder func(*autodiff.Param) autodiff.Value

// bind returns p's value on t.
func bind(t *autodiff.Tape, b binder, p *autodiff.Param) autodiff.Value {
	if b != nil {
		return b(p)
	}
	return t.Param(p)
}

// forwarder is implemented by the modules of this package: Forward with
// the parameters bound by b.
type forwarder interface {
	forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value
}

// forwardModule applies m, binding its parameters with b if m supports it.
func forwardModule(m Module, t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if f, ok := m.(forwarder); ok {
		return f.forward(t, x, b)
	}
	return m.Forward(t, x)
}

// errer is implemented by modules that keep a configuration error.
type errer interface{ Err() error }

// moduleErr returns m's configuration error, if it reports one.
func moduleErr(m Module) error {
	if m == nil {
		return configError("nn: nil Module")
	}
	if e, ok := m.(errer); ok {
		return e.Err()
	}
	return nil
}

// named gives a module its name in a Sequential.
type named struct {
	name string
	Module
}

// Named gives m a name, which Sequential uses instead of the layer's index
// as the prefix of m's parameter and buffer names ("conv1.weight"). The
// name must be non-empty and must not contain '/'.
func Named(name string, m Module) Module { return &named{name: name, Module: m} }

func (n *named) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	return forwardModule(n.Module, t, x, b)
}

// Err returns the named module's configuration error.
func (n *named) Err() error {
	if n.name == "" || strings.Contains(n.name, "/") {
		return configError("nn.Named: invalid name %q (non-empty, without '/')", n.name)
	}
	return moduleErr(n.Module)
}

// Sequential applies its layers in order, the output of each being the
// input of the next. Its parameters and buffers are those of its layers,
// in order, their names prefixed with the layer's index or Named name.
type Sequential struct {
	layers []Module
	names  []string
	err    error
}

// NewSequential returns the sequence of layers. It renames the layers'
// parameters and buffers (prefixing "<index>." or "<name>."), so a layer
// with parameters or buffers belongs to one Sequential: adding it to a
// second one is an error (nest the first Sequential whole instead). A
// layer's configuration error, a nil layer, two layers with the same name,
// one parameter or buffer shared by two layers, or a layer of another
// Sequential make the Sequential's error (see Err), naming the layer
// ("layer 2 (Dense)"); then no name is changed.
func NewSequential(layers ...Module) *Sequential {
	s := &Sequential{}
	seenName := map[string]bool{}
	seenParam := map[*autodiff.Param]bool{}
	seenBuf := map[*Buffer]bool{}
	for i, m := range layers {
		name := strconv.Itoa(i)
		inner := m
		if n, ok := m.(*named); ok {
			name, inner = n.name, n.Module
		}
		label := layerLabel(name, m)
		if err := moduleErr(m); err != nil {
			s.setErr(wrapf(err, "nn.Sequential: %s", label))
			continue
		}
		if seenName[name] {
			s.setErr(configError("nn.Sequential: two layers are named %q", name))
			continue
		}
		seenName[name] = true
		if ownedElsewhere(inner, s) {
			s.setErr(configError("nn.Sequential: %s already belongs to another Sequential: a layer can be in one only "+
				"(a second would rename its parameters, and the first model's checkpoints would stop loading); "+
				"make a new layer, or add the first Sequential whole", label))
			continue
		}
		for _, p := range inner.Params() {
			if p == nil || seenParam[p] {
				s.setErr(configError("nn.Sequential: %s: parameter %v is nil or belongs to another layer too", label, paramName(p)))
				continue
			}
			seenParam[p] = true
		}
		for _, b := range inner.Buffers() {
			if b == nil || seenBuf[b] {
				s.setErr(configError("nn.Sequential: %s: a buffer is nil or belongs to another layer too", label))
				continue
			}
			seenBuf[b] = true
		}
		s.layers = append(s.layers, inner)
		s.names = append(s.names, name)
	}
	if s.err != nil {
		return s
	}
	for i, m := range s.layers {
		for _, p := range m.Params() {
			p.Name = s.names[i] + "." + p.Name
		}
		for _, b := range m.Buffers() {
			b.Name = s.names[i] + "." + b.Name
		}
	}
	claim(s, s.layers)
	return s
}

func paramName(p *autodiff.Param) string {
	if p == nil {
		return "<nil>"
	}
	return strconv.Quote(p.Name)
}

func (s *Sequential) setErr(err error) {
	if s.err == nil {
		s.err = err
	}
}

// Err returns the first configuration error of the Sequential or its
// layers, or nil.
func (s *Sequential) Err() error { return s.err }

// Layers returns the layers (a copy of the list).
func (s *Sequential) Layers() []Module { return append([]Module(nil), s.layers...) }

// Names returns the layers' names, in order: their indices, or the names
// given by Named.
func (s *Sequential) Names() []string { return append([]string(nil), s.names...) }

// Forward applies the layers in order. The values a layer makes on t,
// other than its output, and each layer's output once the next layer has
// run, are intermediates the tape may release (see
// autodiff.Tape.Intermediates): on a NoGrad tape their buffers are reused
// at once, so inference holds about one layer's values at a time; on a
// recording tape Backward releases them once the gradient functions are
// done with them. The returned value (and x) stay valid until Reset.
func (s *Sequential) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return s.forward(t, x, nil)
}

func (s *Sequential) forward(t *autodiff.Tape, x autodiff.Value, b binder) autodiff.Value {
	if s.err != nil {
		return fail(t, s.err)
	}
	// Each layer's values but its output, and each output once the next
	// layer has run, are the tape's to release (autodiff.Tape.Intermediates).
	mark := t.Mark()
	for i, m := range s.layers {
		ok := t != nil && t.Err() == nil
		x = forwardModule(m, t, x, b)
		if ok && t.Err() != nil {
			annotateLayerError(t, layerLabel(s.names[i], m))
		}
		mark = t.Intermediates(mark, x)
	}
	return x
}

// Params returns the layers' parameters, in layer order.
func (s *Sequential) Params() []*autodiff.Param {
	var ps []*autodiff.Param
	for _, m := range s.layers {
		ps = append(ps, m.Params()...)
	}
	return ps
}

// Buffers returns the layers' buffers, in layer order.
func (s *Sequential) Buffers() []*Buffer {
	var bs []*Buffer
	for _, m := range s.layers {
		bs = append(bs, m.Buffers()...)
	}
	return bs
}

// String lists the layers and their parameters.
func (s *Sequential) String() string {
	var b strings.Builder
	b.WriteString("Sequential(\n")
	for i, m := range s.layers {
		if st, ok := m.(fmt.Stringer); ok {
			fmt.Fprintf(&b, "  %s: %s\n", s.names[i], strings.ReplaceAll(st.String(), "\n", "\n  "))
			continue
		}
		fmt.Fprintf(&b, "  %s: %T", s.names[i], m)
		for _, p := range m.Params() {
			fmt.Fprintf(&b, " %s%v", p.Name, p.Data.Shape())
		}
		b.WriteString("\n")
	}
	b.WriteString(")")
	return b.String()
}

// Lambda is a module without state that applies a function.
type Lambda struct {
	name string
	f    func(x autodiff.Value) autodiff.Value
}

// NewLambda returns a module named name (for String) that applies f, built
// from tape ops (e.g. autodiff.Tanh), to its input.
func NewLambda(name string, f func(x autodiff.Value) autodiff.Value) *Lambda {
	return &Lambda{name: name, f: f}
}

// String returns the Lambda's name.
func (l *Lambda) String() string { return l.name }

// Forward applies f.
func (l *Lambda) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	if l.f == nil {
		return fail(t, configError("nn.Lambda: nil function"))
	}
	if x.Err() != nil {
		return invalidInput(t, x)
	}
	return l.f(x)
}

// Params returns nil: a Lambda has no parameters.
func (l *Lambda) Params() []*autodiff.Param { return nil }

// Buffers returns nil: a Lambda has no buffers.
func (l *Lambda) Buffers() []*Buffer { return nil }

// Err reports a nil function.
func (l *Lambda) Err() error {
	if l.f == nil {
		return configError("nn.Lambda: nil function")
	}
	return nil
}
