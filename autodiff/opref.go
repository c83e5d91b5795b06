package autodiff

import (
	"sync"

	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// opRef looks an op up once, on first use (ops are registered in package
// initialisation, before any tape runs).
type opRef struct {
	name string
	once sync.Once
	d    *registry.OpDef
}

func ref(name string) *opRef { return &opRef{name: name} }

func (r *opRef) def() *registry.OpDef {
	r.once.Do(func() {
		d, err := registry.Lookup(r.name)
		if err != nil {
			panic("autodiff: built-in op " + r.name + " is not registered: " + err.Error())
		}
		r.d = d
	})
	return r.d
}

var (
	opOnesLike  = ref(forward.OpOnesLike)
	opZerosLike = ref(forward.OpZerosLike)
	opAddN      = ref(forward.OpAddN)
)
