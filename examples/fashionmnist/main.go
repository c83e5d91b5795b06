// Command fashionmnist trains a small CNN on Fashion-MNIST with tapegrad:
// Conv2D, DepthwiseConv2dNative, FusedBatchNormV3 and FractionalAvgPool, and
// with -qat quantisation-aware training (FakeQuantWithMinMaxVarsPerChannel
// on the weights, per-tensor fake quantisation of the activations).
//
// It shows a live progress bar per epoch (loss, accuracy, examples/s, ETA)
// on a terminal, a plain line every -log-every otherwise (no carriage
// returns in logs), evaluates on the test set after every epoch, writes a
// checkpoint (model, batch-norm statistics, fake-quant ranges, optimizer
// and data-loader state) and a PNG plot of the curves, and resumes from
// the checkpoint with -resume. The last line it prints is
// "test accuracy: 0.XXXX".
//
//	go run ./examples/fashionmnist                      # bundled 6000/1000 subset
//	go run ./examples/fashionmnist -data /usr/share/datasets/fashion-mnist -epochs 20
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
	"github.com/tapegrad/tapegrad/optim"
)

type config struct {
	dataDir    string
	epochs     int
	batch      int
	lr         float64
	threads    int
	seed       int64
	qat        bool
	maxTrain   int
	checkpoint string
	resume     bool
	plot       string
	progress   bool
	logEvery   time.Duration // plain progress lines when not on a terminal
	stopAfter  int
	dist       distConfig // -dist (dist.go)
	export     string
	pad        int
	flip       bool
	erase      float64
	smooth     float64
	tta        bool // -tta: evaluate each test image and its mirror
}

func main() {
	var c config
	flag.StringVar(&c.dataDir, "data", "", "directory of the Fashion-MNIST IDX files (default: "+data.FashionMNISTDir+" if present, else the bundled subset)")
	flag.IntVar(&c.epochs, "epochs", 20, "training epochs")
	flag.IntVar(&c.batch, "batch", 64, "batch size")
	flag.Float64Var(&c.lr, "lr", 0.002, "peak learning rate (Adam, cosine decay to 0 over the run)")
	flag.IntVar(&c.threads, "threads", runtime.NumCPU(), "threads")
	flag.Int64Var(&c.seed, "seed", 1, "seed of the initialisation, shuffling, dropout and pooling")
	flag.BoolVar(&c.qat, "qat", false, "quantisation-aware training (8-bit weights per channel, 8-bit activations)")
	flag.IntVar(&c.maxTrain, "max-train", 0, "use only the first N training examples (0: all)")
	flag.StringVar(&c.checkpoint, "checkpoint", "fashionmnist.safetensors", "checkpoint file, written after every epoch")
	flag.BoolVar(&c.resume, "resume", false, "resume from -checkpoint")
	flag.StringVar(&c.plot, "plot", "fashionmnist.png", "PNG plot of the loss and accuracy curves ('' for none)")
	flag.BoolVar(&c.progress, "progress", true, "show the progress within each epoch: a live bar on a terminal, else a plain line every -log-every")
	flag.DurationVar(&c.logEvery, "log-every", 30*time.Second, "interval of the plain progress lines when the output is not a terminal")
	flag.IntVar(&c.stopAfter, "stop-after", 0, "stop after this many epochs of the -epochs schedule (continue later with -resume)")
	registerDistFlags(&c.dist)
	flag.StringVar(&c.export, "export", "", "write the trained model to this ONNX file (with -qat: int8 QDQ); see export.go")
	flag.IntVar(&c.pad, "pad", 0, "augmentation: random crops of the training images zero-padded by this many pixels (0: none)")
	flag.BoolVar(&c.flip, "flip", false, "augmentation: random horizontal flips of the training images")
	flag.Float64Var(&c.erase, "erase", 0, "augmentation: probability of random erasing (a random rectangle of 2-33% of the image set to 0), in [0, 1]")
	flag.Float64Var(&c.smooth, "label-smoothing", 0.1, "label smoothing of the training loss, in [0, 1)")
	flag.BoolVar(&c.tta, "tta", false, "test-time augmentation: classify each test image by the sum of its and its horizontal mirror's logits")
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { c.dist.threadsSet = c.dist.threadsSet || f.Name == "threads" })
	if err := run(c, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fashionmnist:", err)
		if activeComm != nil {
			activeComm.Abort(1) // end the other ranks too
		}
		os.Exit(1)
	}
}

// epochStats is one epoch's line of history (also stored in checkpoints).
type epochStats struct {
	Loss, TrainAcc, TestAcc, Seconds float64
}

func defaultDataDir() string {
	if _, err := os.Stat(filepath.Join(data.FashionMNISTDir, "train-images-idx3-ubyte.gz")); err == nil {
		return data.FashionMNISTDir
	}
	for _, d := range []string{"examples/fashionmnist/data", "data"} {
		if _, err := os.Stat(filepath.Join(d, "train-images-idx3-ubyte.gz")); err == nil {
			return d
		}
	}
	return data.FashionMNISTDir
}

func run(c config, stdout, stderr io.Writer) error {
	if c.epochs < 1 || c.batch < 1 || c.threads < 1 || !(c.lr > 0) {
		return errors.New("-epochs, -batch, -threads and -lr must be positive")
	}
	ds, err := startDist(&c) // nil unless -dist
	if err != nil {
		return err
	}
	stdout, stderr = ds.quiet(stdout, stderr)
	runtime.GOMAXPROCS(c.threads + ds.extraProcs())
	if c.dataDir == "" {
		c.dataDir = defaultDataDir()
	}
	train, err := data.LoadMNISTDir(c.dataDir, "train")
	if err != nil {
		return err
	}
	test, err := data.LoadMNISTDir(c.dataDir, "test")
	if err != nil {
		return err
	}
	x, y := train.Images, train.Labels
	if c.maxTrain > 0 && c.maxTrain < train.Len() {
		if x, y, err = firstRows(x, y, c.maxTrain); err != nil {
			return err
		}
	}
	loader, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: c.batch / ds.size(), Shuffle: true, Seed: uint64(c.seed), DropLast: true, Rank: ds.rank(), Ranks: ds.size(),
		Augment: &data.Augment{Pad: c.pad, FlipHorizontal: c.flip, Erase: c.erase}})
	if err != nil {
		return err
	}
	testLoader, err := data.NewLoader(test.Images, test.Labels, data.LoaderOptions{BatchSize: 500})
	if err != nil {
		return err
	}
	lossFn, err := newSmoothLoss(c.smooth, 10)
	if err != nil {
		return err
	}
	model := newModel(c.seed, c.qat)
	if err := model.Err(); err != nil {
		return err
	}
	steps := c.epochs * loader.NumBatches()
	opt, err := optim.NewAdam(model.Params(), optim.AdamSettings{
		LR:       c.lr,
		Schedule: optim.Cosine{Base: c.lr, Steps: steps},
		Eps:      optim.Float(1e-7),
	})
	if err != nil {
		return err
	}
	var history []epochStats
	start := 0
	if c.resume {
		if start, history, err = resume(c.checkpoint, model, opt, loader); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		fmt.Fprintf(stdout, "resumed from %s after epoch %d\n", c.checkpoint, start)
	}
	fmt.Fprintf(stdout, "data %s: %d training, %d test examples; %d epochs of %d steps, batch %d, %d threads%s%s\n",
		c.dataDir, loader.Len(), test.Len(), c.epochs, loader.NumBatches(), c.batch, c.threads, map[bool]string{true: ", QAT"}[c.qat], ds.describe(c.batch))

	tape := autodiff.NewTape(autodiff.Threads(c.threads), autodiff.Seed(c.seed))
	evalTape := autodiff.NewTape(autodiff.Threads(c.threads), autodiff.NoGrad(), autodiff.Training(false))
	if err := ds.attach(model, tape); err != nil {
		return err
	}
	end := c.epochs
	if c.stopAfter > 0 && c.stopAfter < end {
		end = c.stopAfter
	}
	acc, evaluated := 0.0, false // the last epoch's test accuracy
	for epoch := start; epoch < end; epoch++ {
		prog := newProgress(c, stdout, stderr, epoch, loader.NumBatches())
		t0 := time.Now()
		var lossSum float64
		var correct, seen, steps int
		for loader.Next() {
			b := loader.Batch()
			step := opt.Steps()
			tape.Reset()
			// The tape's random source (dropout, pooling regions) restarts
			// from the step number, so a resumed run is bit-identical.
			tape.Reseed(c.seed*1_000_003 + int64(step) + ds.seedOffset())
			logits := model.Forward(tape, tape.Constant(b.X))
			loss, err := lossFn.loss(tape, logits, b.Y)
			if err != nil {
				return err
			}
			if err := tape.Backward(loss); err != nil {
				return err
			}
			if err := ds.wait(); err != nil { // gradients averaged over the ranks
				return err
			}
			if err := opt.Step(); err != nil {
				return err
			}
			l, err := loss.Item()
			if err != nil {
				return err
			}
			n, err := countCorrect(logits, b.Y)
			if err != nil {
				return err
			}
			lossSum += l * float64(b.Size)
			correct += n
			seen += b.Size
			steps++
			prog.step(steps, lossSum/float64(seen), float64(correct)/float64(seen), float64(seen*ds.size())/time.Since(t0).Seconds())
		}
		prog.finish()
		secs := time.Since(t0).Seconds()
		if lossSum, correct, seen, err = ds.totals(lossSum, correct, seen); err != nil {
			return err
		}
		distNote, err := ds.endEpoch()
		if err != nil {
			return err
		}
		if acc, err = evaluateFn(model, evalTape, testLoader, c.tta); err != nil {
			return err
		}
		evaluated = true
		st := epochStats{Loss: lossSum / float64(seen), TrainAcc: float64(correct) / float64(seen), TestAcc: acc, Seconds: secs}
		history = append(history, st)
		fmt.Fprintf(stdout, "epoch %d/%d: loss %.4f train acc %.4f  %.1f s (%.0f examples/s)  test acc %.4f\n",
			epoch+1, c.epochs, st.Loss, st.TrainAcc, secs, float64(seen)/secs, acc)
		fmt.Fprint(stdout, distNote)
		if c.checkpoint != "" && ds.root() {
			if err := nn.SaveCheckpoint(c.checkpoint, model, opt, save(epoch+1, history), loader); err != nil {
				return err
			}
		}
		if c.plot != "" && ds.root() {
			if err := plotHistory(c.plot, history); err != nil {
				return err
			}
		}
	}
	if c.export != "" && ds.root() {
		if err := exportONNX(c.export, model, c.qat, stdout); err != nil {
			return err
		}
	}
	if !evaluated { // resumed with no epoch left to train
		if acc, err = evaluateFn(model, evalTape, testLoader, c.tta); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "test accuracy: %.4f\n", acc)
	return ds.close()
}

// evaluateFn is evaluate, which run calls through it (tests count the
// evaluations).
var evaluateFn = evaluate

// evaluate returns the test accuracy (eval mode: running batch-norm
// statistics, fixed pooling regions, no dropout). With mirror, each image
// is classified by the sum of its logits and its horizontal mirror's
// (test-time augmentation with the training's flips).
func evaluate(model nn.Module, tape *autodiff.Tape, l *data.Loader, mirror bool) (float64, error) {
	correct, seen := 0, 0
	var flipped, sum []float32 // reused across batches
	for l.Next() {
		b := l.Batch()
		tape.Reset()
		logits := model.Forward(tape, tape.Constant(b.X))
		if mirror {
			d, err := logits.Data()
			if err != nil {
				return 0, err
			}
			sum = append(sum[:0], d.Float32s()...)
			sh := b.X.Shape()
			if len(sh) != 4 {
				return 0, fmt.Errorf("evaluate: -tta needs NHWC images, got shape %v", sh)
			}
			flipped = slices.Grow(flipped[:0], len(b.X.Float32s()))[:len(b.X.Float32s())]
			mirrorNHWC(flipped, b.X.Float32s(), sh[0], sh[1], sh[2], sh[3])
			tape.Reset()
			m := model.Forward(tape, tape.Constant(tensor.New(tensor.WithShape(sh...), tensor.WithBacking(flipped))))
			md, err := m.Data()
			if err != nil {
				return 0, err
			}
			for i, v := range md.Float32s() {
				sum[i] += v
			}
			logits = tape.Constant(tensor.New(tensor.WithShape(md.Shape()...), tensor.WithBacking(sum)))
		}
		n, err := countCorrect(logits, b.Y)
		if err != nil {
			return 0, err
		}
		correct += n
		seen += b.Size
	}
	if seen == 0 {
		return 0, errors.New("empty test set")
	}
	return float64(correct) / float64(seen), nil
}

// mirrorNHWC writes to dst the n images of src, [n, h, w, c], each
// flipped horizontally.
func mirrorNHWC(dst, src []float32, n, h, w, c int) {
	for r := range n * h {
		row, out := src[r*w*c:(r+1)*w*c], dst[r*w*c:(r+1)*w*c]
		for x := range w {
			copy(out[x*c:(x+1)*c], row[(w-1-x)*c:(w-x)*c])
		}
	}
}

// countCorrect counts the rows whose largest logit is at the label.
func countCorrect(logits autodiff.Value, labels *tensor.Dense) (int, error) {
	d, err := logits.Data()
	if err != nil {
		return 0, err
	}
	lg, ys := d.Float32s(), labels.Int32s()
	classes := d.Shape()[1]
	n := 0
	for i, y := range ys {
		row := lg[i*classes : (i+1)*classes]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if int32(best) == y {
			n++
		}
	}
	return n, nil
}

// firstRows returns copies of the first n rows of x and y.
func firstRows(x, y *tensor.Dense, n int) (*tensor.Dense, *tensor.Dense, error) {
	xs, ys := x.Shape().Clone(), y.Shape().Clone()
	per := len(x.Float32s()) / xs[0]
	xs[0], ys[0] = n, n
	xd := append([]float32(nil), x.Float32s()[:n*per]...)
	yd := append([]int32(nil), y.Int32s()[:n]...)
	return tensor.New(tensor.WithShape(xs...), tensor.WithBacking(xd)), tensor.New(tensor.WithShape(ys...), tensor.WithBacking(yd)), nil
}

// save returns the run's own checkpoint metadata: the epochs completed
// and their history. The loader's position goes into the checkpoint as
// the loader's state (nn.SaveCheckpoint(..., loader)).
func save(epochs int, history []epochStats) map[string]string {
	m := map[string]string{
		"epochs":        strconv.Itoa(epochs),
		"history.count": strconv.Itoa(len(history)),
	}
	for i, h := range history {
		m[fmt.Sprintf("history.%d", i)] = fmt.Sprintf("%v %v %v %v", h.Loss, h.TrainAcc, h.TestAcc, h.Seconds)
	}
	return m
}

// resume restores the model, the optimizer and the loader's position from
// the checkpoint at path, and returns the epochs completed and their
// history. It also reads the checkpoints of earlier versions of this
// program, which kept the loader's position in their own metadata
// ("loader.seed", "loader.epoch", "loader.pos"; see restoreLegacyLoader).
func resume(path string, model nn.Module, opt nn.OptimizerState, l *data.Loader) (int, []epochStats, error) {
	meta, err := nn.LoadCheckpoint(path, model, opt, l)
	if err != nil {
		// LoadCheckpoint changed nothing. A checkpoint of the earlier
		// format holds no loader state: load it without, and take the
		// position from its metadata. Any other failure stands (the
		// second attempt may have loaded the model; the run stops).
		old, oldErr := nn.LoadCheckpoint(path, model, opt)
		if oldErr != nil || !hasLegacyLoader(old) {
			return 0, nil, err
		}
		if err := restoreLegacyLoader(old, l); err != nil {
			return 0, nil, err
		}
		meta = old
	}
	return restore(meta)
}

// legacyLoaderKeys are the metadata keys of the loader's position in the
// checkpoints of earlier versions of this program.
var legacyLoaderKeys = []string{"loader.seed", "loader.epoch", "loader.pos"}

// hasLegacyLoader reports whether the checkpoint metadata m holds a
// loader position of the earlier format.
func hasLegacyLoader(m map[string]string) bool {
	for _, k := range legacyLoaderKeys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// restoreLegacyLoader moves the loader to the position saved in the
// metadata of an earlier version's checkpoint.
func restoreLegacyLoader(m map[string]string, l *data.Loader) error {
	var st data.LoaderState
	var err error
	if st.Seed, err = strconv.ParseUint(m["loader.seed"], 10, 64); err != nil {
		return fmt.Errorf("checkpoint metadata: loader.seed: %w", err)
	}
	if st.Epoch, err = strconv.Atoi(m["loader.epoch"]); err != nil {
		return fmt.Errorf("checkpoint metadata: loader.epoch: %w", err)
	}
	if st.Pos, err = strconv.Atoi(m["loader.pos"]); err != nil {
		return fmt.Errorf("checkpoint metadata: loader.pos: %w", err)
	}
	return l.SetState(st)
}

// restore reads save's metadata: the epochs completed and their history.
func restore(m map[string]string) (int, []epochStats, error) {
	epochs, err := strconv.Atoi(m["epochs"])
	if err != nil {
		return 0, nil, fmt.Errorf("checkpoint metadata: epochs: %w", err)
	}
	if epochs < 0 {
		return 0, nil, fmt.Errorf("checkpoint metadata: epochs %d is negative", epochs)
	}
	n, err := strconv.Atoi(m["history.count"])
	if err != nil {
		return 0, nil, fmt.Errorf("checkpoint metadata: history.count: %w", err)
	}
	// One line per completed epoch, each its own metadata entry: a count
	// beyond either comes from a corrupt or crafted file, and must not size
	// an allocation.
	if n < 0 || n > epochs || n > len(m) {
		return 0, nil, fmt.Errorf("checkpoint metadata: history.count %d out of range (epochs %d, %d metadata entries)", n, epochs, len(m))
	}
	h := make([]epochStats, n)
	for i := range h {
		if _, err := fmt.Sscan(m[fmt.Sprintf("history.%d", i)], &h[i].Loss, &h[i].TrainAcc, &h[i].TestAcc, &h[i].Seconds); err != nil {
			return 0, nil, fmt.Errorf("checkpoint metadata: history.%d: %w", i, err)
		}
	}
	return epochs, h, nil
}
