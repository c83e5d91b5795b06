package onnx

import (
	"errors"
	"fmt"
	"os"
	"slices"

	pb "github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/proto"
	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// Opset is the version of the standard ONNX operator set the exported
// models import, and IRVersion the ONNX IR version they declare (the IR of
// ONNX 1.8, the release of opset 13).
const (
	Opset     = 13
	IRVersion = 7
)

// Errors the exporter wraps (test them with errors.Is).
var (
	// ErrNoRule: a layer has no export rule (see Register).
	ErrNoRule = errors.New("no export rule")
	// ErrUnsupported: a layer's configuration has no ONNX equivalent
	// here (e.g. float64 parameters, more than 8 quantisation bits).
	ErrUnsupported = errors.New("not exportable")
)

// Options configure an export.
type Options struct {
	// InputShape is the shape of one example, without the batch axis,
	// e.g. [28, 28, 1] for NHWC images. Required: the exporter runs the
	// model on one example to learn every layer's shape.
	InputShape []int
	// InputName and OutputName name the graph's input and output
	// (default "input" and "output").
	InputName, OutputName string
	// BatchSize fixes the batch axis of the input and output; 0 (the
	// default) leaves it symbolic, named "N".
	BatchSize int
	// GraphName names the graph (default "tapegrad").
	GraphName string
	// DocString documents the model (optional).
	DocString string
}

// Marshal exports model in evaluation mode (running batch-norm
// statistics, fixed pooling grids, no dropout, stored quantisation
// ranges) as a serialised ONNX model: a float32 input [batch,
// InputShape...], a float32 output. The model must be float32. The error
// of a layer that cannot be exported names it by its path and type.
func Marshal(model nn.Module, opts Options) ([]byte, error) {
	m, err := build(model, opts)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}

// WriteFile exports model (see Marshal) to the file path.
func WriteFile(path string, model nn.Module, opts Options) error {
	data, err := Marshal(model, opts)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func build(model nn.Module, o Options) (*pb.ModelProto, error) {
	if o.InputName == "" {
		o.InputName = "input"
	}
	if o.OutputName == "" {
		o.OutputName = "output"
	}
	if o.GraphName == "" {
		o.GraphName = "tapegrad"
	}
	if o.InputName == o.OutputName {
		return nil, fmt.Errorf("nn/onnx: input and output have the same name %q", o.InputName)
	}
	if len(o.InputShape) == 0 {
		return nil, fmt.Errorf("nn/onnx: Options.InputShape is empty (the shape of one example, e.g. [28 28 1])")
	}
	for _, d := range o.InputShape {
		if d <= 0 {
			return nil, fmt.Errorf("nn/onnx: Options.InputShape %v has a non-positive dimension", o.InputShape)
		}
	}
	if o.BatchSize < 0 {
		return nil, fmt.Errorf("nn/onnx: Options.BatchSize %d is negative", o.BatchSize)
	}
	if model == nil {
		return nil, fmt.Errorf("nn/onnx: nil model")
	}
	tape := autodiff.NewTape(autodiff.Training(false), autodiff.NoGrad())
	shape := append([]int{1}, o.InputShape...)
	x0 := tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float32))
	b := &Builder{
		g:     &pb.GraphProto{Name: o.GraphName, DocString: o.DocString},
		tape:  tape,
		names: map[string]bool{o.InputName: true, o.OutputName: true},
		trans: map[string]string{},
		quant: map[*autodiff.Param]*quantKernel{},
		opts:  o,
	}
	in := Value{name: o.InputName, val: tape.Constant(x0)}
	y, err := b.apply("", model, in)
	if err != nil {
		return nil, err
	}
	if y.val.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("nn/onnx: the model's output is %v, not float32: %w", y.val.Dtype(), ErrUnsupported)
	}
	b.path = ""
	last := b.In(y)
	b.rename(last, o.OutputName)
	b.g.Input = []*pb.ValueInfoProto{valueInfo(o.InputName, o.BatchSize, shape[1:])}
	b.g.Output = []*pb.ValueInfoProto{valueInfo(o.OutputName, o.BatchSize, y.Shape()[1:])}
	return &pb.ModelProto{
		IrVersion:       IRVersion,
		OpsetImport:     []*pb.OperatorSetIdProto{{Domain: "", Version: Opset}},
		ProducerName:    "tapegrad",
		ProducerVersion: "1",
		DocString:       o.DocString,
		Graph:           b.g,
	}, nil
}

// rename makes the node output from the output named to (renaming its
// uses too), or, if from is no node's output (the graph input), adds an
// Identity from from to to.
func (b *Builder) rename(from, to string) {
	found := false
	for _, n := range b.g.Node {
		found = found || slices.Contains(n.Output, from)
	}
	if !found {
		b.g.Node = append(b.g.Node, &pb.NodeProto{Name: to + "/Identity", OpType: "Identity", Input: []string{from}, Output: []string{to}})
		return
	}
	for _, n := range b.g.Node {
		for i, o := range n.Output {
			if o == from {
				n.Output[i] = to
			}
		}
		for i, in := range n.Input {
			if in == from {
				n.Input[i] = to
			}
		}
	}
}

// valueInfo describes a float32 graph input or output [batch, rest...].
func valueInfo(name string, batch int, rest []int) *pb.ValueInfoProto {
	dims := []*pb.TensorShapeProto_Dimension{{Value: &pb.TensorShapeProto_Dimension_DimParam{DimParam: "N"}}}
	if batch > 0 {
		dims[0] = &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimValue{DimValue: int64(batch)}}
	}
	for _, d := range rest {
		dims = append(dims, &pb.TensorShapeProto_Dimension{Value: &pb.TensorShapeProto_Dimension_DimValue{DimValue: int64(d)}})
	}
	return &pb.ValueInfoProto{Name: name, Type: &pb.TypeProto{Value: &pb.TypeProto_TensorType{TensorType: &pb.TypeProto_Tensor{
		ElemType: int32(pb.TensorProto_FLOAT), Shape: &pb.TensorShapeProto{Dim: dims}}}}}
}

// layerError is the error of one layer, naming it.
type layerError struct {
	path, kind string
	err        error
}

func (e *layerError) Error() string {
	return fmt.Sprintf("nn/onnx: layer %s (%s): %v", e.path, e.kind, e.err)
}

func (e *layerError) Unwrap() error { return e.err }

// layerErr wraps err with the layer's path and type, unless an inner
// layer's error already names it.
func layerErr(path string, m nn.Module, err error) error {
	var le *layerError
	if errors.As(err, &le) {
		return err
	}
	p := path
	if p == "" {
		p = "(model)"
	}
	return &layerError{path: fmt.Sprintf("%q", p), kind: kindOf(m), err: err}
}

// kindOf describes m's type (and a Lambda's name).
func kindOf(m nn.Module) string {
	if l, ok := m.(*nn.Lambda); ok {
		return fmt.Sprintf("%T %q", m, l.Name())
	}
	return fmt.Sprintf("%T", m)
}

// apply exports m applied to x, at path.
func (b *Builder) apply(path string, m nn.Module, x Value) (Value, error) {
	if m == nil {
		return Value{}, layerErr(path, m, errors.New("nil module"))
	}
	if e, ok := m.(interface{ Err() error }); ok && e.Err() != nil {
		return Value{}, layerErr(path, m, e.Err())
	}
	if inner, name := nn.Unnamed(m); name != "" {
		if path == "" {
			path = name
		}
		return b.apply(path, inner, x)
	}
	if s, ok := m.(*nn.Sequential); ok {
		names := s.Names()
		for i, l := range s.Layers() {
			p := names[i]
			if path != "" {
				p = path + "." + p
			}
			var err error
			if x, err = b.apply(p, l, x); err != nil {
				return Value{}, err
			}
		}
		return x, nil
	}
	rule, err := lookup(m)
	if err != nil {
		return Value{}, layerErr(path, m, err)
	}
	for _, p := range m.Params() {
		if p != nil && p.Data != nil && p.Data.Dtype() != tensor.Float32 {
			return Value{}, layerErr(path, m, fmt.Errorf("parameter %s is %v: only float32 models are exported: %w", p.Name, p.Data.Dtype(), ErrUnsupported))
		}
	}
	// The layer's Go output: its shape for the rule, its value for the
	// next layers' rules.
	y := m.Forward(b.tape, x.val)
	if err := b.tape.Err(); err != nil {
		return Value{}, layerErr(path, m, fmt.Errorf("running the layer in evaluation mode: %w", err))
	}
	savedPath, savedOut := b.path, b.out
	b.path, b.out = path, y
	v, err := rule(b, m, x)
	b.path, b.out = savedPath, savedOut
	if err == nil && b.err != nil {
		err = b.err
	}
	b.err = nil
	if err == nil && v.name == "" {
		err = errors.New("the export rule returned no tensor")
	}
	if err == nil && v.perm != nil && len(v.perm) != len(y.Shape()) {
		err = fmt.Errorf("the export rule's layout %v does not match the output's rank %d", v.perm, len(y.Shape()))
	}
	if err != nil {
		return Value{}, layerErr(path, m, err)
	}
	v.val = y
	return v, nil
}

// float32Data returns the float32 elements of d, named what in errors.
func float32Data(what string, d *tensor.Dense) ([]float32, error) {
	if d == nil {
		return nil, fmt.Errorf("%s: no data", what)
	}
	if d.Dtype() != tensor.Float32 {
		return nil, fmt.Errorf("%s is %v: only float32 models are exported: %w", what, d.Dtype(), ErrUnsupported)
	}
	return slices.Clone(d.Float32s()), nil
}
