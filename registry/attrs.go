package registry

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"gorgonia.org/tensor"
)

// Attr structs describe an op's attributes: the tag grammar, the types and
// the zero-value rule are in the package documentation ("Attr structs").

var dtypeType = reflect.TypeOf(tensor.Float32)

type attrField struct {
	index   int
	name    string
	typ     reflect.Type
	def     reflect.Value // invalid if no default
	allowed []string
}

type attrSpec struct {
	typ    reflect.Type
	fields []attrField
	byName map[string]int
	plain  bool // no defaults, no allowed lists: normalisation is the identity
	// defaults is the struct with every default filled in, shared by every
	// nil attrs (nil if the defaults break an allowed list).
	defaults any
}

func (s *attrSpec) names() string {
	n := make([]string, len(s.fields))
	for i, f := range s.fields {
		n[i] = f.name
	}
	return "{" + strings.Join(n, ", ") + "}"
}

var specCache sync.Map // reflect.Type -> *attrSpec

func specFor(t reflect.Type) (*attrSpec, error) {
	if s, ok := specCache.Load(t); ok {
		return s.(*attrSpec), nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("attrs must be a struct type, got %v", t)
	}
	s := &attrSpec{typ: t, byName: map[string]int{}, plain: true}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := sf.Tag.Get("tf")
		if name == "" {
			return nil, fmt.Errorf("field %s.%s has no tf tag", t.Name(), sf.Name)
		}
		if !supportedAttrType(sf.Type) {
			return nil, fmt.Errorf("field %s.%s has unsupported type %v", t.Name(), sf.Name, sf.Type)
		}
		f := attrField{index: i, name: name, typ: sf.Type}
		if dv, ok := sf.Tag.Lookup("default"); ok {
			v, err := parseDefault(sf.Type, dv)
			if err != nil {
				return nil, fmt.Errorf("field %s.%s: bad default %q: %v", t.Name(), sf.Name, dv, err)
			}
			f.def = v
			s.plain = false
		}
		if al, ok := sf.Tag.Lookup("allowed"); ok {
			if sf.Type.Kind() != reflect.String {
				return nil, fmt.Errorf("field %s.%s: allowed values need a string field", t.Name(), sf.Name)
			}
			f.allowed = strings.Split(al, ",")
			s.plain = false
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("duplicate attr name %q in %s", name, t.Name())
		}
		s.byName[name] = len(s.fields)
		s.fields = append(s.fields, f)
	}
	s.defaults = s.defaultValue()
	specCache.Store(t, s)
	return s, nil
}

// defaultValue returns the attr struct holding every default, or nil if it
// breaks an allowed list (NormalizeAttrs then reports the error per call).
func (s *attrSpec) defaultValue() any {
	v := reflect.New(s.typ).Elem()
	for _, f := range s.fields {
		if f.def.IsValid() {
			v.Field(f.index).Set(f.def)
		}
		if f.allowed != nil {
			ok := false
			for _, a := range f.allowed {
				ok = ok || v.Field(f.index).String() == a
			}
			if !ok {
				return nil
			}
		}
	}
	return v.Interface()
}

func supportedAttrType(t reflect.Type) bool {
	if t == dtypeType {
		return true
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float32, reflect.Float64:
		return true
	case reflect.Slice:
		switch t.Elem().Kind() {
		case reflect.Int, reflect.Float32, reflect.Float64, reflect.String:
			return true
		}
	case reflect.Pointer:
		switch t.Elem().Kind() {
		case reflect.Bool, reflect.Int, reflect.Float32, reflect.Float64:
			return true
		}
	}
	return false
}

func parseDefault(t reflect.Type, s string) (reflect.Value, error) {
	var raw any
	switch {
	case t.Kind() == reflect.String && t != dtypeType:
		raw = s
	case t == dtypeType:
		raw = s
	default:
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return reflect.Value{}, err
		}
	}
	return convertAttr(t, raw)
}

// convertAttr converts a JSON-decoded value (string, float64, bool, []any)
// to a value of type t.
func convertAttr(t reflect.Type, raw any) (reflect.Value, error) {
	if t == dtypeType {
		s, ok := raw.(string)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a dtype name, got %T", raw)
		}
		dt, err := ParseDtype(s)
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(dt), nil
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := raw.(string)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a string, got %T", raw)
		}
		return reflect.ValueOf(s).Convert(t), nil
	case reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a bool, got %T", raw)
		}
		return reflect.ValueOf(b), nil
	case reflect.Int, reflect.Int64:
		f, ok := raw.(float64)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want an integer, got %T", raw)
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return reflect.Value{}, fmt.Errorf("want an integer, got %v", f)
		}
		return reflect.ValueOf(int64(f)).Convert(t), nil
	case reflect.Float32, reflect.Float64:
		f, err := jsonFloat(raw)
		if err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(f).Convert(t), nil
	case reflect.Slice:
		l, ok := raw.([]any)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a list, got %T", raw)
		}
		out := reflect.MakeSlice(t, len(l), len(l))
		for i, e := range l {
			v, err := convertAttr(t.Elem(), e)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("element %d: %v", i, err)
			}
			out.Index(i).Set(v)
		}
		return out, nil
	case reflect.Pointer:
		v, err := convertAttr(t.Elem(), raw)
		if err != nil {
			return reflect.Value{}, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(v)
		return p, nil
	}
	return reflect.Value{}, fmt.Errorf("unsupported attr type %v", t)
}

func jsonFloat(raw any) (float64, error) {
	switch v := raw.(type) {
	case float64:
		return v, nil
	case string:
		switch v {
		case "NaN":
			return math.NaN(), nil
		case "Inf", "+Inf", "inf":
			return math.Inf(1), nil
		case "-Inf", "-inf":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("want a number, got %T %v", raw, raw)
}

// ParseDtype parses a dtype name as TensorFlow and the golden files spell
// it ("float32", "float", "double", "int32", "int64", "bool").
func ParseDtype(s string) (tensor.Dtype, error) {
	switch s {
	case "float32", "float", "DT_FLOAT":
		return tensor.Float32, nil
	case "float64", "double", "DT_DOUBLE":
		return tensor.Float64, nil
	case "int32", "DT_INT32":
		return tensor.Int32, nil
	case "int64", "DT_INT64":
		return tensor.Int64, nil
	case "bool", "DT_BOOL":
		return tensor.Bool, nil
	}
	return tensor.Dtype{}, Errorf(ErrDtype, "unknown or unsupported dtype %q", s)
}

// typeAttrs are TensorFlow's type-valued and count attrs that tapegrad
// infers from the inputs; ParseAttrs accepts and ignores them.
var typeAttrs = map[string]bool{
	"T": true, "Tidx": true, "Tshape": true, "Tperm": true, "SrcT": true,
	"Tlabels": true, "Tpaddings": true, "N": true, "index_type": true,
	"U": true, "Tmultiples": true,
}

// ParsedAttrs is what ParseAttrsExact returns: an op's attr struct (Value)
// built from TensorFlow names. Unlike a struct written in Go, where a zero
// field means "TensorFlow's default", an attr given explicitly keeps its
// value even when it is Go's zero value, so {"num_bits": 0} stays 0 and is
// refused by the kernel, as TensorFlow refuses it. Pass it wherever attrs
// are taken (Tape.Apply, Run); NormalizeAttrs unwraps it.
type ParsedAttrs struct {
	// Value is the op's attr struct, defaults filled in for absent attrs.
	Value any
}

// ParseAttrs builds the op's attr struct from TensorFlow attribute names
// and JSON-decoded values, then normalises it like a struct written in Go:
// a field left at Go's zero value, whether absent or given as zero, takes
// TensorFlow's default. Unknown names are an error; TensorFlow's inferred
// type attrs ("T", "Tidx", ...) are ignored.
func (d *OpDef) ParseAttrs(m map[string]any) (any, error) {
	p, err := d.ParseAttrsExact(m)
	if err != nil || p == nil {
		return nil, err
	}
	return d.NormalizeAttrs(p.(ParsedAttrs).Value)
}

// ParseAttrsExact is ParseAttrs for conformance checking: absent attrs take
// TensorFlow's defaults, but an attr given explicitly keeps its value even
// when it is Go's zero value ({"num_bits": 0} stays 0 and is refused as
// TensorFlow refuses it). The result is a ParsedAttrs (nil for ops without
// attrs), accepted wherever attrs are taken (Tape.Apply, Run).
func (d *OpDef) ParseAttrsExact(m map[string]any) (any, error) {
	if d.attrSpec == nil {
		for k := range m {
			if !typeAttrs[k] {
				return nil, Errorf(ErrInvalidArgument, "%s: unknown attr %q (the op has no attrs)", d.Name, k)
			}
		}
		return nil, nil
	}
	s := d.attrSpec
	v := reflect.New(s.typ).Elem()
	given := make([]bool, len(s.fields))
	for k, raw := range m {
		i, ok := s.byName[k]
		if !ok {
			if typeAttrs[k] {
				continue
			}
			return nil, Errorf(ErrInvalidArgument, "%s: unknown attr %q (known: %s)", d.Name, k, s.names())
		}
		f := s.fields[i]
		if raw == nil {
			continue
		}
		cv, err := convertAttr(f.typ, raw)
		if err != nil {
			return nil, Errorf(ErrInvalidArgument, "%s: attr %s: %v", d.Name, k, err)
		}
		v.Field(f.index).Set(cv)
		given[i] = true
	}
	for i, f := range s.fields {
		if !given[i] && f.def.IsValid() {
			v.Field(f.index).Set(f.def)
		}
	}
	if err := d.checkAllowed(v); err != nil {
		return nil, err
	}
	return ParsedAttrs{Value: v.Interface()}, nil
}

// needsDefault reports whether a field of the attr struct v has a default
// and holds Go's zero value.
func (s *attrSpec) needsDefault(v reflect.Value) bool {
	for _, f := range s.fields {
		if f.def.IsValid() && v.Field(f.index).IsZero() {
			return true
		}
	}
	return false
}

func (d *OpDef) checkAllowed(v reflect.Value) error {
	for _, f := range d.attrSpec.fields {
		if f.allowed == nil {
			continue
		}
		got := v.Field(f.index).String()
		ok := false
		for _, a := range f.allowed {
			if got == a {
				ok = true
				break
			}
		}
		if !ok {
			return Errorf(ErrInvalidArgument, "%s: attr %s=%q is not in the allowed values {%s}", d.Name, f.name, got, strings.Join(f.allowed, ", "))
		}
	}
	return nil
}

// NormalizeAttrs checks that attrs is the op's attr struct (or a pointer to
// it, or nil for all defaults), fills TensorFlow's defaults into unset
// fields and checks allowed values. The result is a struct value, not a
// pointer: attrs itself when it is a struct needing no default (normalised
// attrs normalise to themselves without allocating), else a fresh value.
// Default slices are shared, so kernels must not modify attr slices.
func (d *OpDef) NormalizeAttrs(attrs any) (any, error) {
	s := d.attrSpec
	if s == nil {
		if attrs != nil {
			return nil, Errorf(ErrInvalidArgument, "%s: the op takes no attrs, got %T", d.Name, attrs)
		}
		return nil, nil
	}
	switch p := attrs.(type) {
	case ParsedAttrs:
		attrs = p.Value
		if reflect.TypeOf(attrs) != s.typ {
			return nil, Errorf(ErrInvalidArgument, "%s: attrs must be %v, got parsed %T", d.Name, s.typ, attrs)
		}
		return attrs, d.checkAllowed(reflect.ValueOf(attrs))
	case *ParsedAttrs:
		if p == nil || reflect.TypeOf(p.Value) != s.typ {
			return nil, Errorf(ErrInvalidArgument, "%s: attrs must be %v, got %T", d.Name, s.typ, attrs)
		}
		return p.Value, d.checkAllowed(reflect.ValueOf(p.Value))
	}
	var v reflect.Value
	switch {
	case attrs == nil:
		if s.defaults != nil {
			return s.defaults, nil
		}
		v = reflect.New(s.typ).Elem()
	default:
		rv := reflect.ValueOf(attrs)
		if rv.Kind() == reflect.Pointer && rv.Type().Elem() == s.typ {
			if rv.IsNil() {
				rv = reflect.New(s.typ)
			}
			rv = rv.Elem()
		}
		if rv.Type() != s.typ {
			return nil, Errorf(ErrInvalidArgument, "%s: attrs must be %v, got %T", d.Name, s.typ, attrs)
		}
		if s.plain {
			return rv.Interface(), nil
		}
		if reflect.TypeOf(attrs) == s.typ && !s.needsDefault(rv) {
			// Already normal (a struct value is immutable in an
			// interface, so sharing it is safe).
			if err := d.checkAllowed(rv); err != nil {
				return nil, err
			}
			return attrs, nil
		}
		v = reflect.New(s.typ).Elem()
		v.Set(rv)
	}
	for _, f := range s.fields {
		fv := v.Field(f.index)
		if f.def.IsValid() && fv.IsZero() {
			fv.Set(f.def)
		}
	}
	if err := d.checkAllowed(v); err != nil {
		return nil, err
	}
	return v.Interface(), nil
}
