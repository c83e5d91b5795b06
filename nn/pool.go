package nn

import (
	"fmt"
	"math"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/forward"
	"github.com/tapegrad/tapegrad/registry"
)

// FractionalPoolOpts configure FractionalAvgPool. The zero value is
// TensorFlow's default (random, non-overlapping cells; the column ratio
// equal to the row ratio; evaluation seed 1).
type FractionalPoolOpts struct {
	// RatioW is the column pooling ratio, >= 1 (default: the row ratio).
	RatioW float64
	// PseudoRandom draws the cell boundaries with the pseudo-random
	// sequence a_i = ceil(α·(i + u)) instead of a random shuffle.
	PseudoRandom bool
	// Overlapping makes each cell share its last row and column with the
	// next cell.
	Overlapping bool
	// EvalSeed seeds the fixed cells of evaluation mode (default 1).
	EvalSeed int64
}

// FractionalAvgPool is fractional average pooling (Graham 2014;
// TensorFlow's FractionalAvgPool) of an NHWC input [N, H, W, C] to
// [N, floor(H/ratio), floor(W/ratioW), C]: each output is the average of a
// cell of a grid whose row and column boundaries are drawn at random.
//
// In training, every Forward draws a fresh grid from the tape's seeded
// random source (autodiff.Seed), so runs are reproducible. In evaluation
// the grid is fixed: the op's deterministic mode with seed = seed2 =
// EvalSeed, the same grid on every call and every machine (TensorFlow's
// own for these seeds). The gradient spreads each output's gradient
// uniformly over its cell (FractionalAvgPoolGrad).
type FractionalAvgPool struct {
	stateless
	train, eval forward.FractionalPoolAttrs
	// trainOp, evalOp are FractionalAvgPool with train, eval.
	trainOp, evalOp registry.Attrs[forward.FractionalPoolAttrs]
	err             error
}

// NewFractionalAvgPool returns fractional average pooling with the given
// row pooling ratio (>= 1, e.g. 1.44; see opts.RatioW for the columns).
func NewFractionalAvgPool(ratio float64, opts FractionalPoolOpts) *FractionalAvgPool {
	p := &FractionalAvgPool{}
	p.err = p.init(ratio, opts)
	return p
}

func (p *FractionalAvgPool) init(ratio float64, o FractionalPoolOpts) error {
	const layer = "nn.NewFractionalAvgPool"
	rw := o.RatioW
	if rw == 0 {
		rw = ratio
	}
	for _, r := range []float64{ratio, rw} {
		if !(r >= 1) || r > math.MaxFloat32 {
			return configError("%s: pooling ratios must be finite and >= 1, got %v and %v", layer, ratio, o.RatioW)
		}
	}
	seed := o.EvalSeed
	if seed == 0 {
		seed = 1
	}
	p.train = forward.FractionalPoolAttrs{
		PoolingRatio: []float32{1, float32(ratio), float32(rw), 1},
		PseudoRandom: o.PseudoRandom, Overlapping: o.Overlapping,
	}
	p.eval = p.train
	p.eval.Deterministic, p.eval.Seed, p.eval.Seed2 = true, seed, seed
	p.trainOp = registry.NewAttrs(p.train)
	p.evalOp = registry.NewAttrs(p.eval)
	return nil
}

// Err returns the configuration error, or nil.
func (p *FractionalAvgPool) Err() error { return p.err }

func (p *FractionalAvgPool) String() string {
	if p.err != nil {
		return "FractionalAvgPool(invalid)"
	}
	return fmt.Sprintf("FractionalAvgPool(%v, %v)", p.train.PoolingRatio[1], p.train.PoolingRatio[2])
}

// Forward pools x over a random grid (training) or the fixed grid
// (evaluation).
func (p *FractionalAvgPool) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	if p.err != nil {
		return fail(t, p.err)
	}
	op := p.evalOp
	if t.IsTraining() {
		op = p.trainOp
	}
	// outputs: y, row and column sequences
	return autodiff.ValueOf(forward.FractionalAvgPool(t.Emitter(), op, t.Ref(x))[0])
}
