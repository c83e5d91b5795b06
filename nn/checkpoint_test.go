package nn

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/safetensors"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/optim"
)

// ckptModel builds a small float32 model with every kind of state:
// parameters, batch-norm statistics, fake-quant ranges, and randomness
// (dropout) in training. seed selects the initial weights.
func ckptModel(seed int64) *Sequential {
	r := rnd(seed)
	return NewSequential(
		Named("conv", NewFakeQuantWeights(NewConv2D(2, 4, 3, ConvOpts{Padding: "SAME", Rand: r}), WeightQuantOpts{})),
		Named("bn", NewBatchNorm(4, BatchNormOpts{Momentum: new(0.8)})),
		ReLU(),
		NewFakeQuantActivation(ActQuantOpts{EMADecay: new(0.9)}),
		NewDropout(0.25),
		GlobalAvgPool("NHWC"),
		Named("fc", NewDense(4, 3, DenseOpts{Rand: r})),
	)
}

// ckptData returns a fixed batch.
func ckptData() (*tensor.Dense, *tensor.Dense) {
	r := rnd(99)
	xs := make([]float32, 4*5*5*2)
	for i := range xs {
		xs[i] = float32(r.NormFloat64())
	}
	x, _ := tensorx.New([]int{4, 5, 5, 2}, xs)
	y, _ := tensorx.New([]int{4}, []int32{0, 2, 1, 2})
	return x, y
}

// trainSteps runs steps [from, to) on m with opt. Each step's randomness
// comes from a tape seeded with the step number, so a resumed run draws
// the same dropout masks as an uninterrupted one.
func trainSteps(t *testing.T, m Module, opt optim.Optimizer, from, to int) []float32 {
	t.Helper()
	x, y := ckptData()
	var losses []float32
	for step := from; step < to; step++ {
		tp := autodiff.NewTape(autodiff.Seed(int64(1000 + step)))
		loss := SparseSoftmaxCrossEntropy(m.Forward(tp, tp.Constant(x)), tp.Constant(y))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		v, err := loss.Item()
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, float32(v))
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	return losses
}

// bits returns the raw bits of a float32 tensor, for exact comparison.
func bits(t *testing.T, d *tensor.Dense) []uint32 {
	t.Helper()
	s, err := tensorx.Slice[float32](d)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(s))
	for i, v := range s {
		out[i] = math.Float32bits(v)
	}
	return out
}

func sameBits(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func newAdam(t *testing.T, m Module) optim.Optimizer {
	t.Helper()
	o, err := optim.NewAdam(m.Params(), optim.AdamSettings{LR: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestCheckpointResume: training N steps equals training k steps, saving,
// loading into a fresh model and optimizer, and training N−k steps, bit
// for bit (parameters, buffers, optimizer state, losses).
func TestCheckpointResume(t *testing.T) {
	const n, k = 6, 3
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")

	a := ckptModel(1)
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	optA := newAdam(t, a)
	lossA := trainSteps(t, a, optA, 0, n)

	b := ckptModel(1)
	optB := newAdam(t, b)
	lossB := trainSteps(t, b, optB, 0, k)
	meta := map[string]string{"epoch": "0", "step": "3", "loader.pos": "12", "seed": "1000"}
	if err := SaveCheckpoint(path, b, optB, meta); err != nil {
		t.Fatal(err)
	}

	c := ckptModel(2) // different initial weights: the load must replace them
	optC := newAdam(t, c)
	got, err := LoadCheckpoint(path, c, optC)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(meta) {
		t.Fatalf("metadata %v, want %v", got, meta)
	}
	for key, v := range meta {
		if got[key] != v {
			t.Fatalf("metadata %v, want %v", got, meta)
		}
	}
	if optC.Steps() != k {
		t.Fatalf("restored optimizer at step %d, want %d", optC.Steps(), k)
	}
	lossC := trainSteps(t, c, optC, k, n)
	lossB = append(lossB, lossC...)
	for i := range lossA {
		if math.Float32bits(lossA[i]) != math.Float32bits(lossB[i]) {
			t.Fatalf("loss %d: %v resumed, %v uninterrupted", i, lossB[i], lossA[i])
		}
	}
	pa, pc := a.Params(), c.Params()
	for i := range pa {
		if pa[i].Name != pc[i].Name || !sameBits(bits(t, pa[i].Data), bits(t, pc[i].Data)) {
			t.Fatalf("parameter %s differs after resuming", pa[i].Name)
		}
	}
	ba, bc := a.Buffers(), c.Buffers()
	if len(ba) != 6 {
		t.Fatalf("%d buffers, want 6 (bn 2, conv ranges 2, activation range 2)", len(ba))
	}
	for i := range ba {
		if ba[i].Name != bc[i].Name || !sameBits(bits(t, ba[i].Data), bits(t, bc[i].Data)) {
			t.Fatalf("buffer %s differs after resuming", ba[i].Name)
		}
	}
	sa, err := optA.State()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := optC.State()
	if err != nil {
		t.Fatal(err)
	}
	for key, d := range sa.Tensors {
		if !sameBits(bits(t, d), bits(t, sc.Tensors[key])) {
			t.Fatalf("optimizer state %s differs after resuming", key)
		}
	}
	for key, v := range sa.Scalars {
		if sc.Scalars[key] != v {
			t.Fatalf("optimizer scalar %s: %v, want %v", key, sc.Scalars[key], v)
		}
	}

	// The file is a plain safetensors file with the documented names.
	tensors, md, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"param/conv.weight", "param/conv.bias", "param/bn.scale", "param/fc.weight",
		"buffer/bn.moving_mean", "buffer/conv.weight_min", "buffer/3.max", "optim/adam.exp_avg/fc.bias"} {
		if tensors[name] == nil {
			t.Fatalf("checkpoint lacks %q", name)
		}
	}
	if md[VersionKey] != "1" || md["tapegrad.optim/adam.steps"] != "3" {
		t.Fatalf("metadata %v", md)
	}
}

func TestCheckpointErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	m := ckptModel(1)
	opt := newAdam(t, m)
	trainSteps(t, m, opt, 0, 1)
	if err := SaveCheckpoint(path, m, opt, nil); err != nil {
		t.Fatal(err)
	}
	noOpt := filepath.Join(dir, "noopt.safetensors")
	if err := SaveCheckpoint(noOpt, m, nil, nil); err != nil {
		t.Fatal(err)
	}

	// unchanged checks that a failed load changed nothing.
	fresh := func() (*Sequential, optim.Optimizer, func()) {
		f := ckptModel(5)
		o := newAdam(t, f)
		before := bits(t, f.Params()[0].Data)
		return f, o, func() {
			t.Helper()
			if !sameBits(before, bits(t, f.Params()[0].Data)) || o.Steps() != 0 {
				t.Fatal("a failed load changed the model or optimizer")
			}
		}
	}

	// A different architecture: names and shapes are reported.
	r := rnd(3)
	other := NewSequential(
		Named("conv", NewFakeQuantWeights(NewConv2D(2, 5, 3, ConvOpts{Padding: "SAME", Rand: r}), WeightQuantOpts{})),
		Named("fc", NewDense(4, 3, DenseOpts{Rand: r})),
	)
	_, err := LoadCheckpoint(path, other, nil)
	assertErr(t, "architecture", err, autodiff.ErrShape, `param "conv.weight" is float32 (3, 3, 2, 4) in the checkpoint, float32 (3, 3, 2, 5) in the model`,
		`unexpected tensors "buffer/3.max"`, `"param/bn.scale"`)
	missing := NewSequential(Named("conv", NewFakeQuantWeights(NewConv2D(2, 4, 3, ConvOpts{Padding: "SAME", Rand: r}), WeightQuantOpts{})),
		Named("extra", NewDense(1, 1, DenseOpts{Rand: r})))
	_, err = LoadCheckpoint(path, missing, nil)
	assertErr(t, "missing", err, autodiff.ErrShape, `missing param "extra.weight"`)

	// Loading without the optimizer is fine; asking for one from a file
	// without optimizer state is not.
	f, o, unchanged := fresh()
	if _, err := LoadCheckpoint(path, f, nil); err != nil {
		t.Fatal(err)
	}
	f, o, unchanged = fresh()
	_, err = LoadCheckpoint(noOpt, f, o)
	assertErr(t, "no optimizer state", err, autodiff.ErrInvalidArgument, "no optimizer state")
	unchanged()

	// Another optimizer kind: optim's own error, nothing changed.
	f, _, unchanged = fresh()
	sgd, err := optim.NewSGD(f.Params(), optim.SGDSettings{LR: 0.1, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadCheckpoint(path, f, sgd)
	assertErr(t, "optimizer kind", err, nil, "optimizer state")
	unchanged()

	// Versions.
	tensors, md, err := safetensors.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md[VersionKey] = "2"
	v2 := filepath.Join(dir, "v2.safetensors")
	if err := safetensors.WriteFile(v2, tensors, md); err != nil {
		t.Fatal(err)
	}
	f, o, unchanged = fresh()
	_, err = LoadCheckpoint(v2, f, o)
	assertErr(t, "version", err, autodiff.ErrUnimplemented, `version "2"`)
	unchanged()
	delete(md, VersionKey)
	if err := safetensors.WriteFile(v2, tensors, md); err != nil {
		t.Fatal(err)
	}
	_, err = LoadCheckpoint(v2, f, o)
	assertErr(t, "no version", err, nil, "not a tapegrad checkpoint")
	unchanged()

	// Files that are not checkpoints at all.
	_, err = LoadCheckpoint(filepath.Join(dir, "absent"), f, nil)
	assertErr(t, "absent", err, os.ErrNotExist)
	junk := filepath.Join(dir, "junk")
	if err := os.WriteFile(junk, []byte("not a safetensors file"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadCheckpoint(junk, f, nil)
	assertErr(t, "junk", err, safetensors.ErrFormat)
	unchanged()

	// Saving: reserved metadata keys, broken models, duplicate names.
	assertErr(t, "reserved", SaveCheckpoint(path, m, nil, map[string]string{"tapegrad.x": "1"}), autodiff.ErrInvalidArgument, "reserved")
	assertErr(t, "broken", SaveCheckpoint(path, NewDense(0, 1, DenseOpts{}), nil, nil), autodiff.ErrInvalidArgument, "nn.NewDense")
	d1, d2 := NewDense(1, 1, DenseOpts{Rand: r}), NewDense(1, 1, DenseOpts{Rand: r})
	twins := &twoModules{d1, d2}
	assertErr(t, "duplicate", SaveCheckpoint(path, twins, nil, nil), autodiff.ErrInvalidArgument, `two tensors are named "param/weight"`)
	_, err = LoadCheckpoint(path, twins, nil)
	assertErr(t, "duplicate load", err, autodiff.ErrShape, `two model tensors are named "param/weight"`)
	// The failed saves left the good checkpoint in place.
	if _, err := LoadCheckpoint(path, ckptModel(7), nil); err != nil {
		t.Fatal(err)
	}
}

// twoModules is a user-written module whose two layers have the same
// parameter names.
type twoModules struct{ a, b *Dense }

func (m *twoModules) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value {
	return m.b.Forward(t, m.a.Forward(t, x))
}
func (m *twoModules) Params() []*autodiff.Param { return append(m.a.Params(), m.b.Params()...) }
func (m *twoModules) Buffers() []*Buffer        { return nil }
