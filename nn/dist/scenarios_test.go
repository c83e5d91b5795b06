package dist_test

// Training scenarios shared by the in-process group tests (ddp_test.go)
// and the MPI tests (mpi_test.go, which run them under mpirun): each
// rank calls the scenario with its communicator, and every rank returns
// the same verdict (the checks end in a collective).

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"time"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
	"github.com/tapegrad/tapegrad/nn/dist"
	"github.com/tapegrad/tapegrad/optim"
	"github.com/tapegrad/tapegrad/registry"
)

const (
	imgSize  = 6
	channels = 2
	classes  = 3
	nExample = 96
)

// GateAttrs: disttest.Gate's rank picks the channel its gradient waits on.
type GateAttrs struct {
	Rank int `tf:"rank"`
}

// gates[rank] receives a value when the rank's instrumented communicator
// starts an all-reduce.
var (
	gatesMu sync.Mutex
	gates   = map[int]chan struct{}{}
)

func gate(rank int) chan struct{} {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	if gates[rank] == nil {
		gates[rank] = make(chan struct{}, 1)
	}
	return gates[rank]
}

// gateWait is how long disttest.Gate's gradient waits for an all-reduce.
const gateWait = 30 * time.Second

func init() {
	ident := func(kc *registry.KernelCtx, _ any, in []*tensor.Dense) ([]*tensor.Dense, error) {
		out, err := kc.Output(in[0].Dtype(), in[0].Shape()...)
		if err != nil {
			return nil, err
		}
		copy(out.Float32s(), in[0].Float32s())
		return []*tensor.Dense{out}, nil
	}
	one := []registry.Arg{{Name: "x"}}
	registry.MustRegister(&registry.OpDef{Name: "disttest.Gate", Inputs: one, Outputs: one, Attrs: GateAttrs{},
		Kernels: map[tensor.Dtype]registry.Kernel{tensor.Float32: ident}})
	// The gradient is the identity, once the rank's communicator has
	// started an all-reduce during this backward pass: placed after the
	// first layer, it holds the backward pass before the first layer's
	// gradients until the DDP has started communicating the others'.
	registry.MustSetGradient("disttest.Gate", func(e registry.Emitter, n registry.Node, dy []registry.Value) ([]registry.Value, error) {
		select {
		case <-gate(n.Attrs().(GateAttrs).Rank):
		case <-time.After(gateWait):
			return nil, fmt.Errorf("no all-reduce started during the backward pass within %v", gateWait)
		}
		return []registry.Value{e.Apply("Identity", nil, dy[0])[0]}, nil
	})
}

// signalComm is a Comm that signals gate(rank) when an all-reduce starts.
type signalComm struct{ dist.Comm }

func (s signalComm) signal() {
	select {
	case gate(s.Rank()) <- struct{}{}:
	default:
	}
}

func (s signalComm) AllReduceFloat32(buf []float32, op dist.Op) error {
	s.signal()
	return s.Comm.AllReduceFloat32(buf, op)
}

func (s signalComm) AllReduceFloat64(buf []float64, op dist.Op) error {
	s.signal()
	return s.Comm.AllReduceFloat64(buf, op)
}

// testModel: Conv2D, FusedBatchNorm, DepthwiseConv2dNative, 1x1 Conv2D,
// dense; with the gate after the first block if gateRank >= 0, and
// dropout before the dense layer if dropout.
func testModel(seed int64, gateRank int, dropout bool) *nn.Sequential {
	r := rand.New(rand.NewSource(seed))
	bn := func(c int) nn.Module { return nn.NewBatchNorm(c, nn.BatchNormOpts{}) }
	layers := []nn.Module{
		nn.NewConv2D(channels, 4, 3, nn.ConvOpts{Padding: "SAME", NoBias: true, Rand: r}), bn(4), nn.ReLU(),
	}
	if gateRank >= 0 {
		layers = append(layers, nn.NewLambda("gate", func(x autodiff.Value) autodiff.Value {
			return x.Tape().Apply("disttest.Gate", GateAttrs{Rank: gateRank}, x)[0]
		}))
	}
	layers = append(layers,
		nn.NewDepthwiseConv2D(4, 3, nn.ConvOpts{Padding: "SAME", Rand: r}), bn(4), nn.ReLU(),
		nn.NewConv2D(4, 8, 1, nn.ConvOpts{Padding: "SAME", Rand: r}), bn(8), nn.ReLU(),
		nn.Flatten())
	if dropout {
		layers = append(layers, nn.NewDropout(0.25))
	}
	layers = append(layers, nn.NewDense(8*imgSize*imgSize, classes, nn.DenseOpts{Rand: r}))
	return nn.NewSequential(layers...)
}

// dataset returns nExample images (random) and labels (of the image's
// sign pattern, so the model can learn something).
func dataset() (*tensor.Dense, *tensor.Dense) {
	r := rand.New(rand.NewSource(42))
	xs := make([]float32, nExample*imgSize*imgSize*channels)
	ys := make([]int32, nExample)
	per := imgSize * imgSize * channels
	for i := range ys {
		s := 0.0
		for k := range per {
			v := r.NormFloat64()
			xs[i*per+k] = float32(v)
			if k < per/2 {
				s += v
			}
		}
		ys[i] = int32(min(classes-1, max(0, int(s/4+1))))
	}
	x, _ := tensorx.New([]int{nExample, imgSize, imgSize, channels}, xs)
	y, _ := tensorx.New([]int{nExample}, ys)
	return x, y
}

// agree makes every rank return the same verdict: the number of ranks
// whose err is non-nil is all-reduced; a rank's own error comes first.
func agree(c dist.Comm, err error) error {
	n := []float64{0}
	if err != nil {
		n[0] = 1
	}
	if cerr := c.AllReduceFloat64(n, dist.Sum); cerr != nil {
		return errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("rank %d: %w", c.Rank(), err)
	}
	if n[0] > 0 {
		return fmt.Errorf("rank %d: %v other rank(s) failed", c.Rank(), n[0])
	}
	return nil
}

// paramBits returns the parameters' data, concatenated.
func paramBits(m nn.Module) []float32 {
	var out []float32
	for _, p := range m.Params() {
		out = append(out, p.Data.Float32s()...)
	}
	return out
}

// differFromRoot counts the elements of v that differ (bitwise) from
// rank 0's v.
func differFromRoot(c dist.Comm, v []float32) (int, error) {
	root := slices.Clone(v)
	if err := c.BroadcastFloat32(root, 0); err != nil {
		return 0, err
	}
	n := 0
	for i := range v {
		if math.Float32bits(v[i]) != math.Float32bits(root[i]) {
			n++
		}
	}
	return n, nil
}

// scenarioIdentical trains with DDP for steps steps (Adam, dropout and
// training-mode batch norm, every rank's model initialised from a
// different seed, small buckets) and checks that every rank ends with
// rank 0's parameters, bit for bit; that the batch-norm statistics
// differ between ranks (each rank keeps its own) until AverageBuffers.
func scenarioIdentical(c dist.Comm, steps int) error {
	return agree(c, identical(c, steps))
}

func identical(c dist.Comm, steps int) error {
	model := testModel(int64(100+c.Rank()), -1, true)
	if err := model.Err(); err != nil {
		return err
	}
	ddp, err := dist.NewDDP(c, model, dist.DDPOptions{BucketBytes: 1024})
	if err != nil {
		return err
	}
	defer ddp.Close()
	if ddp.Stats().Buckets < 3 {
		return fmt.Errorf("%d buckets, want several", ddp.Stats().Buckets)
	}
	init := paramBits(model)
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{LR: 0.01})
	if err != nil {
		return err
	}
	x, y := dataset()
	loader, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: 8, Shuffle: true, Seed: 3, DropLast: true, Rank: c.Rank(), Ranks: c.Size()})
	if err != nil {
		return err
	}
	tape := autodiff.NewTape(autodiff.Threads(1), autodiff.Seed(int64(1+c.Rank())))
	ddp.Attach(tape)
	for step := 0; step < steps; {
		if !loader.Next() {
			continue
		}
		b := loader.Batch()
		tape.Reset()
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(tape, tape.Constant(b.X)), tape.Constant(b.Y))
		if err := tape.Backward(loss); err != nil {
			return err
		}
		if err := ddp.Wait(); err != nil {
			return err
		}
		if err := opt.Step(); err != nil {
			return err
		}
		step++
	}
	final := paramBits(model)
	if slices.Equal(init, final) {
		return errors.New("training did not change the parameters")
	}
	n, err := differFromRoot(c, final)
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d of %d parameter elements differ from rank 0's after %d steps", n, len(final), steps)
	}
	var stats []float32
	for _, b := range model.Buffers() {
		stats = append(stats, b.Data.Float32s()...)
	}
	if n, err = differFromRoot(c, stats); err != nil {
		return err
	}
	if c.Size() > 1 && c.Rank() > 0 && n == 0 {
		return errors.New("batch-norm statistics equal rank 0's: they should be this rank's own")
	}
	if err := ddp.AverageBuffers(); err != nil {
		return err
	}
	stats = stats[:0]
	for _, b := range model.Buffers() {
		stats = append(stats, b.Data.Float32s()...)
	}
	if n, err = differFromRoot(c, stats); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d batch-norm statistics differ from rank 0's after AverageBuffers", n)
	}
	return nil
}

// scenarioEquivalent checks the averaging: Size ranks with batches of B
// train (SGD, steps steps) to the parameters one process reaches with
// batches of Size·B, within float32 rounding, on a model with Conv2D,
// DepthwiseConv2dNative and FusedBatchNorm. Batch normalisation makes a
// rank's gradient depend on its whole shard, so the single process must
// see the same statistics:
//
//   - inference: the tapes are in evaluation mode (batch norm normalises
//     with the running statistics, which stay fixed), so every example's
//     loss is independent of the others and one batch of Size·B is
//     exactly the union of the shards;
//   - otherwise (training mode, per-rank batch statistics as in DDP
//     without SyncBatchNorm): the single process runs each step's batch
//     of Size·B as Size "ghost" batches of B, one forward and backward
//     each with the loss scaled by 1/Size, accumulating the gradient.
//
// The ranks also train a copy without DDP on their shard alone, which
// must end far outside the tolerance: the check can fail.
func scenarioEquivalent(c dist.Comm, steps int, inference bool) error {
	return agree(c, equivalent(c, steps, inference))
}

func equivalent(c dist.Comm, steps int, inference bool) error {
	const b, lr = 4, 0.05
	x, y := dataset()
	train := func(m *nn.Sequential, ddp *dist.DDP, batch, rank, ranks, ghosts int) error {
		if err := m.Err(); err != nil {
			return err
		}
		opt, err := optim.NewSGD(m.Params(), optim.SGDSettings{LR: lr})
		if err != nil {
			return err
		}
		loader, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: batch, Shuffle: true, Seed: 9, DropLast: true, Rank: rank, Ranks: ranks})
		if err != nil {
			return err
		}
		tape := autodiff.NewTape(autodiff.Threads(1), autodiff.Training(!inference))
		if ddp != nil {
			ddp.Attach(tape)
		}
		for step := 0; step < steps; {
			if !loader.Next() {
				continue
			}
			bt := loader.Batch()
			sub := bt.Size / ghosts
			for g := range ghosts {
				xs, ys, err := rows(bt.X, bt.Y, g*sub, sub)
				if err != nil {
					return err
				}
				tape.Reset()
				loss := nn.SparseSoftmaxCrossEntropy(m.Forward(tape, tape.Constant(xs)), tape.Constant(ys))
				if ghosts > 1 {
					loss = autodiff.Mul(loss, tape.Scalar(tensor.Float32, 1/float64(ghosts)))
				}
				if err := tape.Backward(loss); err != nil {
					return err
				}
			}
			if ddp != nil {
				if err := ddp.Wait(); err != nil {
					return err
				}
			}
			if err := opt.Step(); err != nil {
				return err
			}
			step++
		}
		return nil
	}
	n := c.Size()
	ghosts := n
	if inference {
		ghosts = 1
	}
	ref := testModel(7, -1, false)
	if err := train(ref, nil, n*b, 0, 1, ghosts); err != nil {
		return fmt.Errorf("single process: %w", err)
	}
	alone := testModel(7, -1, false)
	if err := train(alone, nil, b, c.Rank(), n, 1); err != nil {
		return fmt.Errorf("rank without DDP: %w", err)
	}
	model := testModel(int64(7+1000*c.Rank()), -1, false)
	ddp, err := dist.NewDDP(c, model, dist.DDPOptions{BucketBytes: 512})
	if err != nil {
		return err
	}
	defer ddp.Close()
	if err := train(model, ddp, b, c.Rank(), n, 1); err != nil {
		return fmt.Errorf("DDP: %w", err)
	}
	want, got, solo := paramBits(ref), paramBits(model), paramBits(alone)
	const atol, rtol = 1e-6, 1e-5
	worst, worstSolo := 0.0, 0.0
	at := -1
	for i := range want {
		d := math.Abs(float64(got[i]-want[i])) / (atol + rtol*math.Abs(float64(want[i])))
		if d > worst {
			worst, at = d, i
		}
		worstSolo = max(worstSolo, math.Abs(float64(solo[i]-want[i]))/(atol+rtol*math.Abs(float64(want[i]))))
	}
	if worst > 1 {
		return fmt.Errorf("%d ranks × batch %d vs 1 × batch %d: element %d is %v, want %v (|diff| is %.3g× the tolerance %g + %g·|want|)",
			n, b, n*b, at, got[at], want[at], worst, atol, rtol)
	}
	if n > 1 && worstSolo <= 1 {
		return fmt.Errorf("a rank training alone on its shard stays within the tolerance (%.3g): the check cannot fail", worstSolo)
	}
	return nil
}

// rows returns copies of rows [start, start+n) of x and y.
func rows(x, y *tensor.Dense, start, n int) (*tensor.Dense, *tensor.Dense, error) {
	xs, ys := tensorx.Shape(x), tensorx.Shape(y)
	per := tensorx.Len(x) / xs[0]
	xs[0], ys[0] = n, n
	xd, err := tensorx.New(xs, slices.Clone(x.Float32s()[start*per:(start+n)*per]))
	if err != nil {
		return nil, nil, err
	}
	yd, err := tensorx.New(ys, slices.Clone(y.Int32s()[start:start+n]))
	return xd, yd, err
}

// scenarioOverlap checks that the all-reduce overlaps the backward pass:
// the model's gate (after the first block) holds the backward pass until
// the rank's communicator has started an all-reduce, which only a DDP
// that launches buckets during Backward does (the first block's
// parameters are in the last bucket). A DDP that communicated only in
// Wait would leave the gate waiting, and Backward would fail. The DDP's
// counters must agree.
func scenarioOverlap(c dist.Comm, steps int) error {
	return agree(c, overlap(c, steps))
}

func overlap(c dist.Comm, steps int) error {
	model := testModel(5, c.Rank(), false)
	if err := model.Err(); err != nil {
		return err
	}
	ddp, err := dist.NewDDP(signalComm{c}, model, dist.DDPOptions{BucketBytes: 1024})
	if err != nil {
		return err
	}
	defer ddp.Close()
	opt, err := optim.NewSGD(model.Params(), optim.SGDSettings{LR: 0.01})
	if err != nil {
		return err
	}
	x, y := dataset()
	loader, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: 4, DropLast: true, Rank: c.Rank(), Ranks: c.Size()})
	if err != nil {
		return err
	}
	tape := autodiff.NewTape(autodiff.Threads(1))
	ddp.Attach(tape)
	ddp.ResetStats()
	for step := 0; step < steps; {
		if !loader.Next() {
			continue
		}
		b := loader.Batch()
		tape.Reset()
		loss := nn.SparseSoftmaxCrossEntropy(model.Forward(tape, tape.Constant(b.X)), tape.Constant(b.Y))
		select { // forget the signals of the last step
		case <-gate(c.Rank()):
		default:
		}
		if err := tape.Backward(loss); err != nil {
			return err
		}
		if err := ddp.Wait(); err != nil {
			return err
		}
		if err := opt.Step(); err != nil {
			return err
		}
		step++
	}
	st := ddp.Stats()
	if st.Steps != steps || st.StartedInBackward != steps || st.LaunchedInBackward != steps*st.Buckets {
		return fmt.Errorf("stats %+v: want every step's first all-reduce started in Backward, every bucket launched there", st)
	}
	return nil
}

// runRanks runs f on every communicator of an in-process group of n
// ranks, one goroutine each, and returns rank 0's error.
func runRanks(n int, f func(c dist.Comm) error) error {
	comms, err := dist.NewGroup(n)
	if err != nil {
		return err
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
