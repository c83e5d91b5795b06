package registry

import (
	"reflect"
	"runtime"
	"strings"
)

// Attrs is an op's attr struct A with TensorFlow's defaults filled in,
// boxed once. Typed op builders (forward.Conv2D, backward.Conv2DBackpropInput,
// ...) take it instead of a bare A: a layer or a gradient function makes it
// once, and applying the op with it allocates nothing for the attrs and fills
// no defaults again. The zero Attrs means "every attr at its default".
//
// Make one with NewAttrs from a struct, or with NodeAttrs from a recorded op
// (a gradient function forwarding its op's attrs). The op checks the values
// (allowed lists, ranges) when it is applied, and reports a bad value there,
// with the op's name.
type Attrs[A any] struct {
	v any // an A, or nil for the defaults
}

// NewAttrs returns a with TensorFlow's defaults filled into its fields
// that hold Go's zero value (see "Attr structs" in the package
// documentation: a field with a default cannot be set to zero unless it
// is a pointer).
func NewAttrs[A any](a A) Attrs[A] {
	var boxed any = a // boxed once: kept as is when no default is missing
	rv := reflect.ValueOf(boxed)
	if rv.Kind() != reflect.Struct {
		return Attrs[A]{v: boxed}
	}
	s, err := specFor(rv.Type())
	if err != nil || s.plain || !s.needsDefault(rv) {
		// A malformed attr type is reported by the op it is applied to.
		return Attrs[A]{v: boxed}
	}
	v := reflect.New(s.typ).Elem()
	v.Set(rv)
	for _, f := range s.fields {
		if fv := v.Field(f.index); f.def.IsValid() && fv.IsZero() {
			fv.Set(f.def)
		}
	}
	return Attrs[A]{v: v.Interface()}
}

// NodeAttrs returns the attrs of the recorded op n as an Attrs[A], sharing
// the node's normalised value. If n's attrs are not an A, applying an op
// with the result reports the mismatch.
func NodeAttrs[A any](n Node) Attrs[A] { return Attrs[A]{v: n.Attrs()} }

// Value returns the attr struct (the zero A for the zero Attrs, which the
// op reads as all defaults; a mismatched NodeAttrs also gives the zero A).
func (a Attrs[A]) Value() A {
	v, _ := a.v.(A)
	return v
}

// Boxed returns the attrs as passed to Emitter.Apply: the boxed struct, or
// nil for the defaults. Typed builders use it.
func (a Attrs[A]) Boxed() any { return a.v }

// Apply applies the op named op on e and returns its outputs. It copies in
// into a slice of the emitter's (Emitter.Values), so a caller's variadic
// argument list stays on the caller's stack; typed builders call it.
func Apply(e Emitter, op string, attrs any, in ...Value) []Value {
	args := e.Values(len(in))
	copy(args, in)
	return e.Apply(op, attrs, args...)
}

// Apply1 is Apply for an op with one output: it returns that output.
func Apply1(e Emitter, op string, attrs any, in ...Value) Value {
	args := e.Values(len(in))
	copy(args, in)
	return e.Apply(op, attrs, args...)[0]
}

// Package returns the import path of the package that registered the op
// ("github.com/tapegrad/tapegrad/forward" for TensorFlow's forward ops),
// or "" if it could not be told. cmd/genops uses it to put each op's typed
// builder beside the op's registration.
func (d *OpDef) Package() string { return d.pkg }

// callerPackage returns the import path of the first function on the
// stack outside package registry.
func callerPackage() string {
	var pcs [16]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	const self = "github.com/tapegrad/tapegrad/registry."
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, self) {
			return funcPackage(f.Function)
		}
		if !more {
			return ""
		}
	}
}

// funcPackage returns the package path of a runtime function name such as
// "github.com/x/y/forward.init.0" or "example.com/m.(*T).f".
func funcPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}
