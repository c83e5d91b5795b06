package onnx

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
)

// Rule exports one layer: it adds to the graph, through b, the nodes that
// compute the layer's output from x (the layer's input) and returns the
// output (b.Out or b.OutPerm of the last node's output).
type Rule[L nn.Module] func(b *Builder, layer L, x Value) (Value, error)

// FuncRule exports a Lambda's function applied to x.
type FuncRule func(b *Builder, x Value) (Value, error)

// Exporter is implemented by layers that export themselves: a layer type
// of one's own can implement it instead of being registered.
type Exporter interface {
	ExportONNX(b *Builder, x Value) (Value, error)
}

type anyRule func(b *Builder, m nn.Module, x Value) (Value, error)

type ifaceRule struct {
	typ  reflect.Type
	rule anyRule
}

var rules = struct {
	sync.RWMutex
	types  map[reflect.Type]anyRule
	ifaces []ifaceRule // in registration order
	funcs  map[uintptr]FuncRule
}{types: map[reflect.Type]anyRule{}, funcs: map[uintptr]FuncRule{}}

// Register sets the export rule of the layers of type L: a concrete type
// (e.g. *mypkg.Block), which replaces any earlier rule of that type, the
// library's included; or an interface type, whose rule applies to the
// layers implementing it that have no rule of their own type (interfaces
// are tried in the order they were registered). A nil rule removes the
// registration. Register is safe for concurrent use; rules are usually
// registered in an init function.
//
// The exporter looks for a layer's rule in this order: the rule of its
// type, its ExportONNX method (Exporter), the registered interfaces, and
// for an *nn.Lambda the rule of its function (RegisterFunc).
func Register[L nn.Module](rule Rule[L]) {
	t := reflect.TypeFor[L]()
	var r anyRule
	if rule != nil {
		r = func(b *Builder, m nn.Module, x Value) (Value, error) { return rule(b, m.(L), x) }
	}
	rules.Lock()
	defer rules.Unlock()
	if t.Kind() == reflect.Interface {
		for i, ir := range rules.ifaces {
			if ir.typ == t {
				rules.ifaces = append(rules.ifaces[:i], rules.ifaces[i+1:]...)
				break
			}
		}
		if r != nil {
			rules.ifaces = append(rules.ifaces, ifaceRule{t, r})
		}
		return
	}
	if r == nil {
		delete(rules.types, t)
		return
	}
	rules.types[t] = r
}

// RegisterFunc sets the export rule of the Lambdas (nn.NewLambda) applying
// f, a function identified by its code: a named function (e.g.
// autodiff.Tanh), or every closure made by one function literal. A nil
// rule removes the registration. The library registers rules for
// autodiff's Relu (nn.ReLU), Relu6 (nn.ReLU6), Sigmoid (nn.Sigmoid), Tanh
// (nn.Tanh), Softmax, LogSoftmax, Exp, Log, Neg, Sqrt, Rsqrt and Square.
func RegisterFunc(f func(autodiff.Value) autodiff.Value, rule FuncRule) {
	if f == nil {
		return
	}
	k := reflect.ValueOf(f).Pointer()
	rules.Lock()
	defer rules.Unlock()
	if rule == nil {
		delete(rules.funcs, k)
		return
	}
	rules.funcs[k] = rule
}

// lookup returns m's export rule.
func lookup(m nn.Module) (anyRule, error) {
	rules.RLock()
	defer rules.RUnlock()
	if r := rules.types[reflect.TypeOf(m)]; r != nil {
		return r, nil
	}
	if e, ok := m.(Exporter); ok {
		return func(b *Builder, _ nn.Module, x Value) (Value, error) { return e.ExportONNX(b, x) }, nil
	}
	for _, ir := range rules.ifaces {
		if reflect.TypeOf(m).Implements(ir.typ) {
			return ir.rule, nil
		}
	}
	if l, ok := m.(*nn.Lambda); ok {
		if f := l.Func(); f != nil {
			if r := rules.funcs[reflect.ValueOf(f).Pointer()]; r != nil {
				return func(b *Builder, _ nn.Module, x Value) (Value, error) { return r(b, x) }, nil
			}
		}
		return nil, fmt.Errorf("%w for the Lambda's function (register one with onnx.RegisterFunc)", ErrNoRule)
	}
	return nil, fmt.Errorf("%w for %T (register one with onnx.Register, or implement onnx.Exporter)", ErrNoRule, m)
}
