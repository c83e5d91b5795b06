package nn

import (
	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
)

// Read-only views of the layers' configuration, for code that translates a
// model into another form (package nn/onnx exports models to ONNX). They
// return copies: changing them does not change the layer.

// ConvAttrs returns the attrs the layer applies Conv2D with (strides,
// padding, explicit paddings, data format, dilations).
func (c *Conv2D) ConvAttrs() forward.Conv2DAttrs { return cloneConvAttrs(c.conv.Value()) }

// ConvAttrs returns the attrs the layer applies DepthwiseConv2dNative
// with.
func (d *DepthwiseConv2D) ConvAttrs() forward.DepthwiseConv2dAttrs {
	return cloneDepthwiseAttrs(d.conv.Value())
}

// DepthwiseAttrs returns the attrs of the layer's depthwise convolution.
func (s *SeparableConv2D) DepthwiseAttrs() forward.DepthwiseConv2dAttrs {
	return cloneDepthwiseAttrs(s.dw.Value())
}

// PointwiseAttrs returns the attrs of the layer's pointwise (1x1) Conv2D.
func (s *SeparableConv2D) PointwiseAttrs() forward.Conv2DAttrs { return cloneConvAttrs(s.pw.Value()) }

// EvalAttrs returns the attrs of FusedBatchNormV3 in evaluation mode
// (epsilon, data format; is_training false).
func (b *BatchNorm) EvalAttrs() forward.FusedBatchNormAttrs { return b.eval }

// ReLU reports whether the layer applies max(y, 0) to its output
// (BatchNormOpts.ReLU).
func (b *BatchNorm) ReLU() bool { return b.relu }

// EvalAttrs returns the attrs of FractionalAvgPool in evaluation mode: the
// deterministic grid, seeded with the layer's EvalSeed.
func (p *FractionalAvgPool) EvalAttrs() forward.FractionalPoolAttrs {
	a := p.eval
	a.PoolingRatio = append([]float32(nil), a.PoolingRatio...)
	return a
}

// QuantAttrs returns the attrs of FakeQuantWithMinMaxVarsPerChannel that
// the layer quantises its kernel with (bit width, narrow range).
func (f *FakeQuantWeights) QuantAttrs() forward.FakeQuantAttrs { return f.attrs }

// Kernel returns the wrapped layer's kernel, the parameter it quantises.
func (f *FakeQuantWeights) Kernel() *autodiff.Param {
	if f.Layer == nil {
		return nil
	}
	return f.Layer.kernel()
}

// QuantShape returns the shape under which the kernel is quantised per
// channel of its last axis: the kernel's own shape for Dense and Conv2D,
// [KH, KW, in·M] for DepthwiseConv2D.
func (f *FakeQuantWeights) QuantShape() []int {
	if f.Layer == nil {
		return nil
	}
	if s := f.Layer.quantShape(); s != nil {
		return s
	}
	return append([]int(nil), f.Layer.kernel().Data.Shape()...)
}

// QuantAttrs returns the attrs of FakeQuantWithMinMaxVars that the layer
// applies (bit width, narrow range).
func (f *FakeQuantActivation) QuantAttrs() forward.FakeQuantAttrs { return f.attrs }

// Func returns the function the Lambda applies.
func (l *Lambda) Func() func(x autodiff.Value) autodiff.Value { return l.f }

// Name returns the Lambda's name.
func (l *Lambda) Name() string { return l.name }

// IsGlobalAvgPool reports whether m is a layer made by GlobalAvgPool, and
// its data format.
func IsGlobalAvgPool(m Module) (format string, ok bool) {
	g, ok := m.(*globalAvgPool)
	if !ok {
		return "", false
	}
	return g.format, true
}

// IsFlatten reports whether m is a layer made by Flatten.
func IsFlatten(m Module) bool {
	_, ok := m.(flatten)
	return ok
}

// Unnamed returns the module Named wrapped and the name it gave (m itself
// and "" if m is not a Named module).
func Unnamed(m Module) (Module, string) {
	if n, ok := m.(*named); ok {
		return n.Module, n.name
	}
	return m, ""
}

func cloneConvAttrs(a forward.Conv2DAttrs) forward.Conv2DAttrs {
	a.Strides = append([]int(nil), a.Strides...)
	a.ExplicitPaddings = append([]int(nil), a.ExplicitPaddings...)
	a.Dilations = append([]int(nil), a.Dilations...)
	return a
}

func cloneDepthwiseAttrs(a forward.DepthwiseConv2dAttrs) forward.DepthwiseConv2dAttrs {
	a.Strides = append([]int(nil), a.Strides...)
	a.ExplicitPaddings = append([]int(nil), a.ExplicitPaddings...)
	a.Dilations = append([]int(nil), a.Dilations...)
	return a
}
