package autodiff_test

import (
	"errors"
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/registry"
)

// sweepRun applies def to sample s on tp (float inputs watched, others
// constant), then takes the gradient of the sum of its float outputs
// with respect to its float inputs, and, unless the sample rules it out,
// the gradient of the sum of those. It reports whether every float result
// is finite, and the tape's error.
func sweepRun(tp *autodiff.Tape, def *registry.OpDef, s registry.Sample) (finite bool, err error) {
	var in, src []autodiff.Value
	for _, d := range s.Inputs {
		if isFloatDtype(d.Dtype()) {
			v := tp.Watch(d)
			in, src = append(in, v), append(src, v)
		} else {
			in = append(in, tp.Constant(d))
		}
	}
	outs := tp.Apply(def.Name, s.Attrs, in...)
	var tgt []autodiff.Value
	for _, o := range outs {
		if isFloatDtype(o.Dtype()) && o.RequiresGrad() {
			tgt = append(tgt, o)
		}
	}
	results := append([]autodiff.Value(nil), outs...)
	if len(tgt) > 0 && len(src) > 0 && tp.Err() == nil {
		g, err := tp.Grad(tgt, src, nil, autodiff.GradOpts{CreateGraph: s.NoSecondOrder == ""})
		if err != nil {
			return false, err
		}
		results = append(results, g...)
		var tgt2 []autodiff.Value
		for _, v := range g {
			if v.RequiresGrad() {
				tgt2 = append(tgt2, autodiff.Sum(v, nil, false))
			}
		}
		if s.NoSecondOrder == "" && len(tgt2) > 0 {
			gg, err := tp.Grad(tgt2, src, nil, autodiff.GradOpts{})
			if err != nil {
				return false, err
			}
			results = append(results, gg...)
		}
	}
	if err := tp.Err(); err != nil {
		return false, err
	}
	for _, v := range results {
		if !isFloatDtype(v.Dtype()) {
			continue
		}
		d, err := v.Float64s()
		if v.Dtype() == tensor.Float32 {
			var f []float32
			f, err = v.Float32s()
			d = d[:0]
			for _, x := range f {
				d = append(d, float64(x))
			}
		}
		if err != nil {
			return false, err
		}
		for _, x := range d {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false, nil
			}
		}
	}
	return true, nil
}

func isFloatDtype(dt tensor.Dtype) bool { return dt == tensor.Float32 || dt == tensor.Float64 }

// TestAnomalySweep runs every registered op's gradient-check samples, in
// float64 and in float32 where the op has a float32 kernel (forward, first and second order) with and without anomaly detection:
// where the run without it gives finite results, detection must find
// nothing (no gradient function may make and then mask NaN or Inf), and
// where it does not, detection must fail the tape.
func TestAnomalySweep(t *testing.T) {
	n, bad := 0, 0
	for _, def := range registry.List() {
		samples, err := gradcheck.OpSamples(def, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		var all []registry.Sample
		for _, s := range samples {
			all = append(all, s)
			if _, ok := def.Kernels[tensor.Float32]; ok {
				s32 := s
				s32.Name += "/float32"
				s32.Inputs = make([]*tensor.Dense, len(s.Inputs))
				for i, d := range s.Inputs {
					s32.Inputs[i] = d
					if d.Dtype() == tensor.Float64 {
						f := make([]float32, 0, d.Len())
						for _, x := range d.Float64s() {
							f = append(f, float32(x))
						}
						s32.Inputs[i] = tensor.New(tensor.WithShape(d.Shape().Clone()...), tensor.WithBacking(f))
					}
				}
				all = append(all, s32)
			}
		}
		for _, s := range all {
			finite, err := sweepRun(autodiff.NewTape(), def, s)
			if err != nil {
				if errors.Is(err, autodiff.ErrDtype) {
					continue // a float32 copy of a sample the op takes in float64 only
				}
				t.Errorf("%s sample %q without anomaly detection: %v", def.Name, s.Name, err)
				continue
			}
			_, errOn := sweepRun(autodiff.NewTape(autodiff.DetectAnomaly()), def, s)
			switch {
			case finite && errOn != nil:
				t.Errorf("%s sample %q: finite results, but anomaly detection reports %v", def.Name, s.Name, errOn)
			case !finite && !errors.Is(errOn, autodiff.ErrNonFinite):
				t.Errorf("%s sample %q: non-finite results, but anomaly detection reports %v", def.Name, s.Name, errOn)
			}
			n++
			if !finite {
				bad++
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d samples swept", n)
	}
	t.Logf("%d samples, %d with non-finite results", n, bad)
}
