package backward

import (
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// Attrs that gradient functions apply ops with, made once.
var (
	// sumAttrs is Sum's and Mean's attrs without keep_dims (the default).
	sumAttrs registry.Attrs[forward.SumAttrs]
	// sumKeepDims is Sum's and Mean's attrs with keep_dims.
	sumKeepDims = registry.NewAttrs(forward.SumAttrs{KeepDims: true})
)
