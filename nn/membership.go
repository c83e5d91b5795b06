package nn

import (
	"fmt"
	"reflect"
	"sync"
	"weak"

	"github.com/tapegrad/tapegrad/autodiff"
)

// A layer with state (parameters or buffers) belongs to one Sequential:
// NewSequential prefixes the names of its parameters and buffers, so a
// second Sequential would rename them again and the first model's
// checkpoints would stop loading. memberships records, for each such
// layer, the Sequential that holds it, so that the second is refused.
//
// The record holds no strong reference: the key is the layer's address
// and the value a weak pointer to the Sequential. A Sequential holds its
// layers, so while the Sequential is alive its layers are too and their
// addresses are not reused; an entry whose Sequential was collected is
// stale, and is ignored and swept.
var memberships struct {
	sync.Mutex
	m     map[uintptr]weak.Pointer[Sequential]
	sweep int // sweep stale entries when the map reaches this size
}

// layerKey returns the identity of a layer with state, or false for a
// stateless layer (which may be shared freely: nothing of it is renamed)
// or one that is not a pointer.
func layerKey(m Module) (uintptr, bool) {
	if len(m.Params()) == 0 && len(m.Buffers()) == 0 {
		return 0, false
	}
	v := reflect.ValueOf(m)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, false
	}
	return v.Pointer(), true
}

// ownedElsewhere reports whether layer m belongs to a Sequential other
// than s.
func ownedElsewhere(m Module, s *Sequential) bool {
	k, ok := layerKey(m)
	if !ok {
		return false
	}
	memberships.Lock()
	defer memberships.Unlock()
	owner := memberships.m[k].Value()
	return owner != nil && owner != s
}

// claim records that s holds the layers ms.
func claim(s *Sequential, ms []Module) {
	memberships.Lock()
	defer memberships.Unlock()
	if memberships.m == nil {
		memberships.m = map[uintptr]weak.Pointer[Sequential]{}
		memberships.sweep = 64
	}
	w := weak.Make(s)
	for _, m := range ms {
		if k, ok := layerKey(m); ok {
			memberships.m[k] = w
		}
	}
	if len(memberships.m) >= memberships.sweep {
		for k, o := range memberships.m {
			if o.Value() == nil {
				delete(memberships.m, k)
			}
		}
		memberships.sweep = max(64, 2*len(memberships.m))
	}
}

// layerLabel names layer i of a Sequential in messages: "layer 2 (Dense)",
// or "layer conv1 (Conv2D)" for a layer given a name with Named.
func layerLabel(name string, m Module) string {
	return "layer " + name + " (" + layerKind(m) + ")"
}

// layerKind is the kind of a layer for messages: its type's name (Dense,
// Conv2D, Sequential), a Lambda's name (ReLU), or the name its String
// method starts with for this package's unexported layer types (Flatten).
func layerKind(m Module) string {
	switch l := m.(type) {
	case nil:
		return "nil"
	case *named:
		return layerKind(l.Module)
	case *Lambda:
		return l.name
	case *Sequential:
		return "Sequential"
	}
	t := reflect.TypeOf(m)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	name := t.Name()
	if name != "" && name[0] >= 'A' && name[0] <= 'Z' {
		return name
	}
	if st, ok := m.(fmt.Stringer); ok {
		s := st.String()
		for i, r := range s {
			if r == '(' || r == ' ' || r == '\n' {
				s = s[:i]
				break
			}
		}
		if s != "" {
			return s
		}
	}
	if name == "" {
		return t.String()
	}
	return name
}

// annotateLayerError prefixes the tape's error, raised while layer label
// ran, with the layer, so that an op's error inside a model says where in
// the model it is ("in layer 2 (Dense): ...").
func annotateLayerError(t *autodiff.Tape, label string) {
	if oe, ok := t.Err().(*autodiff.OpError); ok {
		oe.Err = fmt.Errorf("in %s: %w", label, oe.Err)
	}
}
