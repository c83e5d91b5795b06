package nn

import (
	"fmt"
	"math"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// PoolOpts configure MaxPool2D and AvgPool2D. The zero value is Keras's
// default: strides equal to the window, VALID padding, NHWC.
type PoolOpts struct {
	// Strides are the row and column steps of the window (default: the
	// window size).
	Strides [2]int
	// Padding is "VALID" (default) or "SAME" (TensorFlow's: the output
	// has ceil(input/stride) rows and columns, the extra padding after;
	// padding is never part of a window).
	Padding string
	// DataFormat is "NHWC" (default) or "NCHW".
	DataFormat string
}

// Pool2D is 2-D max or average pooling of a 4-D input (TensorFlow's
// MaxPool or AvgPool, through MaxPool2D or AvgPool2D): each output is the
// maximum (the average) of a window of the input's rows and columns. With
// SAME padding, border windows hold fewer input elements; an average
// divides by their count. Max pooling's gradient goes to each window's
// first maximum in row-major order.
type Pool2D struct {
	stateless
	avg   bool
	attrs forward.PoolAttrs
	op    registry.Attrs[forward.PoolAttrs]
	err   error
}

// MaxPool2D returns max pooling over kh×kw windows.
func MaxPool2D(kh, kw int, opts PoolOpts) *Pool2D {
	return newPool2D("nn.MaxPool2D", false, kh, kw, opts)
}

// AvgPool2D returns average pooling over kh×kw windows.
func AvgPool2D(kh, kw int, opts PoolOpts) *Pool2D {
	return newPool2D("nn.AvgPool2D", true, kh, kw, opts)
}

func newPool2D(layer string, avg bool, kh, kw int, o PoolOpts) *Pool2D {
	p := &Pool2D{avg: avg}
	sh, sw := o.Strides[0], o.Strides[1]
	if sh == 0 && sw == 0 {
		sh, sw = kh, kw
	}
	padding, format := o.Padding, o.DataFormat
	if padding == "" {
		padding = "VALID"
	}
	if format == "" {
		format = "NHWC"
	}
	switch {
	case kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 || kh > math.MaxInt32 || kw > math.MaxInt32 || sh > math.MaxInt32 || sw > math.MaxInt32:
		p.err = configError("%s: window %dx%d and strides %v must be positive", layer, kh, kw, o.Strides)
	case padding != "VALID" && padding != "SAME":
		p.err = configError("%s: padding must be VALID or SAME, got %q", layer, o.Padding)
	case format != "NHWC" && format != "NCHW":
		p.err = configError("%s: data format must be NHWC or NCHW, got %q", layer, o.DataFormat)
	}
	if p.err != nil {
		return p
	}
	p.attrs = forward.PoolAttrs{Ksize: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1}, Padding: padding, DataFormat: format}
	if format == "NCHW" {
		p.attrs.Ksize, p.attrs.Strides = []int{1, 1, kh, kw}, []int{1, 1, sh, sw}
	}
	p.op = registry.NewAttrs(p.attrs)
	return p
}

// Err returns the configuration error, or nil.
func (p *Pool2D) Err() error { return p.err }

// Avg reports whether p averages (AvgPool) rather than takes maxima.
func (p *Pool2D) Avg() bool { return p.avg }

// Attrs returns the attrs of the op p applies (MaxPool or AvgPool), for
// exporters; the zero PoolAttrs if p is invalid.
func (p *Pool2D) Attrs() forward.PoolAttrs { return p.attrs }

// String describes the layer: its kind, window, strides, padding and
// data format.
func (p *Pool2D) String() string {
	if p.err != nil {
		return "Pool2D(invalid)"
	}
	name := "MaxPool2D"
	if p.avg {
		name = "AvgPool2D"
	}
	return fmt.Sprintf("%s(ksize=%v, strides=%v, %s, %s)", name, p.attrs.Ksize, p.attrs.Strides, p.attrs.Padding, p.attrs.DataFormat)
}

// Forward pools x.
func (p *Pool2D) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	if p.err != nil {
		return fail(t, p.err)
	}
	if x.Err() != nil {
		return invalidInput(t, x)
	}
	if p.avg {
		return autodiff.ValueOf(forward.AvgPool(t.Emitter(), p.op, t.Ref(x)))
	}
	return autodiff.ValueOf(forward.MaxPool(t.Emitter(), p.op, t.Ref(x)))
}
