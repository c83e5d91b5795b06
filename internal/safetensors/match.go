package safetensors

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// ErrMismatch is wrapped by Match's errors.
var ErrMismatch = errors.New("checkpoint does not match")

// Match checks that got (tensors read from a file) has exactly the names of
// want (the live tensors they will be loaded into), each with the same
// dtype and shape. The error lists every missing and unexpected name (up to
// 10 of each) and every mismatched tensor, sorted, e.g.
//
//	checkpoint does not match: missing ["conv1.weight"]; unexpected ["conv1.w"];
//	"fc.bias" is float32 (10) in the file, want float32 (12)
func Match(got, want map[string]*tensor.Dense) error {
	var missing, extra, bad []string
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		if g == nil || w == nil {
			bad = append(bad, fmt.Sprintf("%q is nil", name))
			continue
		}
		if g.Dtype() != w.Dtype() || !tensorx.SameShape(g.Shape(), w.Shape()) {
			bad = append(bad, fmt.Sprintf("%q is %v %v in the file, want %v %v", name, g.Dtype(), g.Shape(), w.Dtype(), w.Shape()))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			extra = append(extra, name)
		}
	}
	if len(missing)+len(extra)+len(bad) == 0 {
		return nil
	}
	var parts []string
	list := func(label string, names []string) {
		if len(names) == 0 {
			return
		}
		slices.Sort(names)
		more := ""
		if len(names) > 10 {
			more = fmt.Sprintf(" and %d more", len(names)-10)
			names = names[:10]
		}
		parts = append(parts, fmt.Sprintf("%s %q%s", label, names, more))
	}
	list("missing", missing)
	list("unexpected", extra)
	slices.Sort(bad)
	parts = append(parts, bad...)
	return fmt.Errorf("%w: %s", ErrMismatch, strings.Join(parts, "; "))
}
