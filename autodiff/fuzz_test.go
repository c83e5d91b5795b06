package autodiff_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// fuzzOps lists the library's registered ops (not the test ops of this
// package, some of which panic on purpose).
func fuzzOps() []*registry.OpDef {
	var out []*registry.OpDef
	for _, d := range registry.List() {
		if !strings.HasPrefix(d.Name, "tapetest.") {
			out = append(out, d)
		}
	}
	return out
}

// byteReader hands out fuzz bytes, then zeros.
type byteReader []byte

func (b *byteReader) next() int {
	if len(*b) == 0 {
		return 0
	}
	v := (*b)[0]
	*b = (*b)[1:]
	return int(v)
}

var fuzzDtypes = []tensor.Dtype{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Bool}

// fuzzTensor builds a small tensor (rank <= 4, dims <= 5) of a dtype
// chosen by the fuzz bytes, preferring the op's kernel dtypes; integer
// inputs get small values (they are often shapes, axes or sizes).
func fuzzTensor(br *byteReader, r *rand.Rand, def *registry.OpDef) *tensor.Dense {
	sel := br.next()
	var dt tensor.Dtype
	if sel < 160 {
		dts := def.Dtypes()
		dt = dts[sel%len(dts)]
	} else {
		dt = fuzzDtypes[sel%len(fuzzDtypes)]
	}
	rank := br.next() % 5
	shape := make([]int, rank)
	for i := range shape {
		shape[i] = br.next() % 6
	}
	d, _ := tensorx.Zeros(dt, shape)
	special := []float64{0, 1, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e30, -1e-30}
	switch dt {
	case tensor.Float32:
		for i := range d.Float32s() {
			v := r.NormFloat64()
			if k := br.next(); k >= 240 {
				v = special[k%len(special)]
			}
			d.Float32s()[i] = float32(v)
		}
	case tensor.Float64:
		for i := range d.Float64s() {
			v := r.NormFloat64()
			if k := br.next(); k >= 240 {
				v = special[k%len(special)]
			}
			d.Float64s()[i] = v
		}
	case tensor.Int32:
		for i := range d.Int32s() {
			d.Int32s()[i] = int32(br.next()%12 - 3)
		}
	case tensor.Int64:
		for i := range d.Int64s() {
			d.Int64s()[i] = int64(br.next()%12 - 3)
		}
	case tensor.Bool:
		for i := range d.Bools() {
			d.Bools()[i] = br.next()%2 == 1
		}
	}
	return d
}

// FuzzTapeOps applies a registered op, chosen by the fuzz input, to small
// tensors of fuzzed dtypes and shapes with fuzzed attrs, then takes its
// gradient (first and second order). Every outcome must be a result or an
// error: a panic, or a recovered panic reported as ErrInternal, fails.
func FuzzTapeOps(f *testing.F) {
	ops := fuzzOps()
	for i := range ops {
		f.Add(uint16(i), "{}", []byte{0, 2, 3, 3, 0, 2, 3, 3}, int64(i))
	}
	f.Add(uint16(0), `{"strides":[1,1,1,1],"padding":"SAME"}`, []byte{0, 4, 2, 3, 4, 5, 0, 4, 3, 3, 1, 2}, int64(7))
	f.Add(uint16(3), `{"keep_dims":true,"transpose_a":true,"data_format":"NCHW"}`, []byte{1, 2, 0, 5, 170, 1, 1}, int64(3))
	f.Fuzz(func(t *testing.T, opIdx uint16, attrsJSON string, shapes []byte, seed int64) {
		def := ops[int(opIdx)%len(ops)]
		var attrs any
		var m map[string]any
		if json.Unmarshal([]byte(attrsJSON), &m) == nil && len(m) > 0 {
			a, err := def.ParseAttrs(m)
			if err != nil {
				return // attr validation is fuzzed by registry's FuzzParseAttrs
			}
			attrs = a
		}
		br := byteReader(shapes)
		r := rand.New(rand.NewSource(seed))
		n := len(def.Inputs)
		if def.Variadic() {
			n += br.next() % 3
		}
		tp := autodiff.NewTape()
		in := make([]autodiff.Value, n)
		for i := range in {
			d := fuzzTensor(&br, r, def)
			if d.Dtype() == tensor.Float32 || d.Dtype() == tensor.Float64 {
				in[i] = tp.Watch(d)
			} else {
				in[i] = tp.Constant(d)
			}
		}
		out := tp.Apply(def.Name, attrs, in...)
		if err := tp.Err(); err != nil {
			if errors.Is(err, registry.ErrInternal) {
				t.Fatalf("%s: internal error (a recovered panic or broken kernel contract): %v", def.Name, err)
			}
			return
		}
		if def.GradKind() != registry.GradDefined {
			return
		}
		var targets, ups []autodiff.Value
		for _, o := range out {
			if o.Dtype() == tensor.Float32 || o.Dtype() == tensor.Float64 {
				targets = append(targets, o)
				ups = append(ups, autodiff.Value{})
			}
		}
		var srcs []autodiff.Value
		for _, v := range in {
			if v.RequiresGrad() {
				srcs = append(srcs, v)
			}
		}
		if len(targets) == 0 || len(srcs) == 0 {
			return
		}
		g, err := tp.Grad(targets, srcs, ups, autodiff.GradOpts{CreateGraph: true})
		if err != nil {
			if errors.Is(err, registry.ErrInternal) {
				t.Fatalf("%s: gradient: %v", def.Name, err)
			}
			return
		}
		var g2 []autodiff.Value
		for _, v := range g {
			if v.RequiresGrad() {
				g2 = append(g2, v)
			}
		}
		if len(g2) == 0 {
			return
		}
		if _, err := tp.Grad(g2, srcs, nil, autodiff.GradOpts{}); err != nil && errors.Is(err, registry.ErrInternal) {
			t.Fatalf("%s: second-order gradient: %v", def.Name, err)
		}
	})
}
