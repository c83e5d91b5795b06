package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	pb "github.com/advancedclimatesystems/gonnx/onnx"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// Value is a tensor of the graph being built: the ONNX tensor of a layer's
// input or output, with the Go value it stands for.
//
// The ONNX tensor may hold the Go tensor's axes in another order (its
// layout, see Perm): a convolution exported from an NHWC layer leaves its
// output in NCHW, and the next layer that needs the Go order gets a
// Transpose (Builder.In). Rules of elementwise layers keep the layout.
type Value struct {
	name string
	perm []int // ONNX axis i holds Go axis perm[i]; nil: the Go order
	val  autodiff.Value
}

// Name returns the name of the ONNX tensor (in the layout Perm).
func (v Value) Name() string { return v.name }

// Perm returns the layout of the ONNX tensor: its axis i is axis Perm()[i]
// of the Go value. nil means the Go order.
func (v Value) Perm() []int { return slices.Clone(v.perm) }

// Shape returns the shape of the Go value, in the Go order. Axis 0 is the
// batch: the exporter runs the model on one example to learn the shapes,
// so it is 1 here and symbolic (or Options.BatchSize) in the graph.
func (v Value) Shape() []int { return v.val.Shape() }

// GoValue returns the Go value the tensor stands for (the model run on one
// all-zero example, in evaluation mode).
func (v Value) GoValue() autodiff.Value { return v.val }

// Attr is an attribute of an ONNX node; make one with AttrInt, AttrInts,
// AttrFloat, AttrFloats or AttrString.
type Attr struct{ p *pb.AttributeProto }

// AttrInt returns an integer attribute.
func AttrInt(name string, v int64) Attr {
	return Attr{&pb.AttributeProto{Name: name, Type: pb.AttributeProto_INT, I: v}}
}

// AttrInts returns an attribute holding a list of integers.
func AttrInts(name string, v ...int64) Attr {
	return Attr{&pb.AttributeProto{Name: name, Type: pb.AttributeProto_INTS, Ints: slices.Clone(v)}}
}

// AttrFloat returns a float attribute.
func AttrFloat(name string, v float32) Attr {
	return Attr{&pb.AttributeProto{Name: name, Type: pb.AttributeProto_FLOAT, F: v}}
}

// AttrFloats returns an attribute holding a list of floats.
func AttrFloats(name string, v ...float32) Attr {
	return Attr{&pb.AttributeProto{Name: name, Type: pb.AttributeProto_FLOATS, Floats: slices.Clone(v)}}
}

// AttrString returns a string attribute.
func AttrString(name, v string) Attr {
	return Attr{&pb.AttributeProto{Name: name, Type: pb.AttributeProto_STRING, S: []byte(v)}}
}

// Builder builds the ONNX graph of a model. The exporter walks the model's
// layers in order and calls each layer's rule (see Register) with the
// Builder and the layer's input; the rule adds nodes and initializers and
// returns the layer's output.
type Builder struct {
	g     *pb.GraphProto
	tape  *autodiff.Tape
	names map[string]bool
	trans map[string]string // Transposes made: tensor + perm -> name
	quant map[*autodiff.Param]*quantKernel
	path  string         // the current layer's path
	out   autodiff.Value // the current layer's Go output
	opts  Options
	err   error // the first error of a rule's Builder call
}

// fail records the first error of a Builder method; the exporter reports
// it after the rule returns.
func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Path returns the path of the layer being exported: the names of the
// Sequential layers leading to it, joined by ".", as in parameter names
// ("conv1", "2.0").
func (b *Builder) Path() string { return b.path }

// OutShape returns the Go shape of the current layer's output (axis 0 the
// batch, 1 here; see Value.Shape).
func (b *Builder) OutShape() []int { return b.out.Shape() }

// Out returns the layer's output Value: the ONNX tensor name, holding the
// layer's Go output in the Go axis order.
func (b *Builder) Out(name string) Value { return Value{name: name, val: b.out} }

// OutPerm returns the layer's output Value for an ONNX tensor holding the
// Go output's axes in the order perm (see Value.Perm).
func (b *Builder) OutPerm(name string, perm []int) Value {
	return Value{name: name, perm: normPerm(perm), val: b.out}
}

// In returns the name of an ONNX tensor holding x in the Go axis order,
// adding a Transpose if x is held in another layout.
func (b *Builder) In(x Value) string { return b.InPerm(x, nil) }

// InPerm returns the name of an ONNX tensor holding x's axes in the order
// perm (axis i of the result is Go axis perm[i]; nil is the Go order),
// adding a Transpose if x's layout differs. A Transpose is made once per
// tensor and layout.
func (b *Builder) InPerm(x Value, perm []int) string {
	perm = normPerm(perm)
	if slices.Equal(x.perm, perm) {
		return x.name
	}
	rank := len(x.Shape())
	cur, want := fullPerm(x.perm, rank), fullPerm(perm, rank)
	inv := make([]int, rank) // Go axis -> ONNX axis of x
	for i, g := range cur {
		inv[g] = i
	}
	p := make([]int64, rank)
	for i, g := range want {
		p[i] = int64(inv[g])
	}
	key := x.name + "|" + fmt.Sprint(p)
	if n, ok := b.trans[key]; ok {
		return n
	}
	n := b.Node("Transpose", []string{x.name}, AttrInts("perm", p...))
	b.trans[key] = n
	return n
}

// Node adds a node of the standard ONNX domain with one output and
// returns the output's name (unique in the graph, derived from the layer's
// path and op type). Inputs may be "" for an omitted optional input.
func (b *Builder) Node(op string, inputs []string, attrs ...Attr) string {
	return b.NodeN(op, inputs, 1, attrs...)[0]
}

// NodeN adds a node with n outputs and returns their names.
func (b *Builder) NodeN(op string, inputs []string, n int, attrs ...Attr) []string {
	base := b.unique(b.prefix() + op)
	outs := make([]string, n)
	for i := range outs {
		outs[i] = base
		if i > 0 {
			outs[i] = b.unique(base + ":" + strconv.Itoa(i))
		}
	}
	node := &pb.NodeProto{Name: base, OpType: op, Input: slices.Clone(inputs), Output: outs}
	for _, a := range attrs {
		node.Attribute = append(node.Attribute, a.p)
	}
	b.g.Node = append(b.g.Node, node)
	return outs
}

// Float32 adds a float32 initializer of the given shape (nil for a scalar)
// and returns its name, derived from hint. A data length that does not
// match the shape fails the export (the error names the layer).
func (b *Builder) Float32(hint string, shape []int, data []float32) string {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return b.initializer(hint, pb.TensorProto_FLOAT, shape, raw, len(data))
}

// Int64 adds an int64 initializer of the given shape (nil for a scalar)
// and returns its name.
func (b *Builder) Int64(hint string, shape []int, data []int64) string {
	raw := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return b.initializer(hint, pb.TensorProto_INT64, shape, raw, len(data))
}

// Int8 adds an int8 initializer of the given shape and returns its name.
func (b *Builder) Int8(hint string, shape []int, data []int8) string {
	raw := make([]byte, len(data))
	for i, v := range data {
		raw[i] = byte(v)
	}
	return b.initializer(hint, pb.TensorProto_INT8, shape, raw, len(data))
}

// Uint8 adds a uint8 initializer of the given shape and returns its name.
func (b *Builder) Uint8(hint string, shape []int, data []uint8) string {
	return b.initializer(hint, pb.TensorProto_UINT8, shape, slices.Clone(data), len(data))
}

func (b *Builder) initializer(hint string, dt pb.TensorProto_DataType, shape []int, raw []byte, n int) string {
	if n != prod(shape) {
		b.fail(fmt.Errorf("initializer %q: %d values for shape %v", hint, n, shape))
	}
	name := b.unique(b.prefix() + hint)
	dims := make([]int64, len(shape))
	for i, d := range shape {
		dims[i] = int64(d)
	}
	b.g.Initializer = append(b.g.Initializer, &pb.TensorProto{Name: name, DataType: int32(dt), Dims: dims, RawData: raw})
	return name
}

// Param adds the parameter's value as a float32 initializer, in its Go
// shape and order, and returns its name (the parameter's name). For the
// kernel of a layer in a FakeQuantWeights wrapper, it returns instead the
// output of a DequantizeLinear of int8 codes (see the package doc).
func (b *Builder) Param(p *autodiff.Param) (string, error) { return b.kernel(p, nil, nil, nil) }

// Buffer adds the buffer's value as a float32 initializer and returns its
// name.
func (b *Builder) Buffer(buf *nn.Buffer) (string, error) {
	if buf == nil {
		return "", fmt.Errorf("nil buffer")
	}
	d, err := float32Data(buf.Name, buf.Data)
	if err != nil {
		return "", err
	}
	return b.Float32(localName(buf.Name), buf.Data.Shape(), d), nil
}

// Module exports the sub-module m (of a layer made of other modules)
// applied to x, as the exporter does for a Sequential's layers; name is
// appended to the current path.
func (b *Builder) Module(name string, m nn.Module, x Value) (Value, error) {
	return b.apply(b.child(name), m, x)
}

// prefix is the name prefix of the current layer's nodes and tensors.
func (b *Builder) prefix() string {
	if b.path == "" {
		return ""
	}
	return b.path + "/"
}

// child returns the path of the current layer's sub-layer name.
func (b *Builder) child(name string) string {
	if b.path == "" {
		return name
	}
	return b.path + "." + name
}

// unique returns name, or name with a numeric suffix if it is taken.
func (b *Builder) unique(name string) string {
	n := name
	for i := 1; b.names[n]; i++ {
		n = name + "_" + strconv.Itoa(i)
	}
	b.names[n] = true
	return n
}

// localName is the last component of a parameter's name ("weight" of
// "conv1.weight"), the Builder's prefix giving the rest.
func localName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// normPerm returns nil for the identity permutation.
func normPerm(p []int) []int {
	for i, v := range p {
		if v != i {
			return slices.Clone(p)
		}
	}
	return nil
}

// fullPerm returns p, or the identity of the rank for nil.
func fullPerm(p []int, rank int) []int {
	if p != nil {
		return p
	}
	id := make([]int, rank)
	for i := range id {
		id[i] = i
	}
	return id
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// permute returns data of the given shape with its axes in the order perm
// (axis i of the result is axis perm[i] of data), and the new shape.
func permute[T any](data []T, shape, perm []int) ([]T, []int) {
	rank := len(shape)
	out := make([]T, len(data))
	nshape := make([]int, rank)
	for i, p := range perm {
		nshape[i] = shape[p]
	}
	strides := make([]int, rank) // of data
	s := 1
	for i := rank - 1; i >= 0; i-- {
		strides[i] = s
		s *= shape[i]
	}
	idx := make([]int, rank) // index in the result
	for k := range out {
		off := 0
		for i, p := range perm {
			off += idx[i] * strides[p]
		}
		out[k] = data[off]
		for i := rank - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < nshape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, nshape
}
