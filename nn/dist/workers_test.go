package dist_test

// Worker mode of the test binary: mpi_test.go starts this binary under
// mpirun with TAPEGRAD_DIST_WORKER naming a worker; TestMain then runs
// that worker on dist.Init's communicator instead of the tests.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
	"github.com/tapegrad/tapegrad/nn/dist"
	"github.com/tapegrad/tapegrad/optim"
)

const (
	workerEnv = "TAPEGRAD_DIST_WORKER" // the worker to run
	dirEnv    = "TAPEGRAD_DIST_DIR"    // where workers leave marker files
)

func TestMain(m *testing.M) {
	if w := os.Getenv(workerEnv); w != "" {
		os.Exit(runWorker(w))
	}
	os.Exit(m.Run())
}

// workers by name; each returns this rank's error.
var workers = map[string]func(c dist.Comm) error{
	"comm":                func(c dist.Comm) error { return agree(c, commChecks(c)) },
	"identical":           func(c dist.Comm) error { return scenarioIdentical(c, 8) },
	"equivalent-infer-bn": func(c dist.Comm) error { return scenarioEquivalent(c, 5, true) },
	"equivalent-rank-bn":  func(c dist.Comm) error { return scenarioEquivalent(c, 5, false) },
	"overlap":             func(c dist.Comm) error { return scenarioOverlap(c, 4) },
	// rank 1 kills itself (SIGKILL) at step 3; rank 0 would train for hours.
	"kill": func(c dist.Comm) error {
		return trainUntil(c, func(step int) error {
			if c.Rank() == 1 && step == 3 {
				mark("killed")
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			return nil
		})
	},
	// rank 1 fails at step 3 (and aborts, as a program should).
	"fail": func(c dist.Comm) error {
		return trainUntil(c, func(step int) error {
			if c.Rank() == 1 && step == 3 {
				mark("failed")
				return errors.New("injected failure")
			}
			return nil
		})
	},
	// rank 1 hangs at step 3 without dying; rank 0's collective times out.
	"hang": func(c dist.Comm) error {
		return trainUntil(c, func(step int) error {
			if c.Rank() == 1 && step == 3 {
				mark("hung")
				time.Sleep(time.Hour)
			}
			return nil
		})
	},
}

// workerTimeout is the collective timeout of the "hang" worker.
const workerTimeout = 2 * time.Second

func runWorker(name string) int {
	f, ok := workers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "no worker %q\n", name)
		return 2
	}
	opts := dist.Options{}
	if name == "hang" {
		opts.Timeout = workerTimeout
	}
	c, err := dist.Init(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	if err := f(c); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s, rank %d of %d: %v\n", name, c.Rank(), c.Size(), err)
		c.Abort(1)
	}
	if err := c.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "worker %s, rank %d: Close: %v\n", name, c.Rank(), err)
		return 1
	}
	mark("finished-" + strconv.Itoa(c.Rank()))
	fmt.Printf("worker %s, rank %d of %d: ok\n", name, c.Rank(), c.Size())
	return 0
}

// mark leaves a file named what, holding the time, in $TAPEGRAD_DIST_DIR.
func mark(what string) {
	if dir := os.Getenv(dirEnv); dir != "" {
		os.WriteFile(filepath.Join(dir, what), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)), 0o644)
	}
}

// trainUntil trains with DDP for an hour's worth of steps, calling
// onStep before each.
func trainUntil(c dist.Comm, onStep func(step int) error) error {
	model := testModel(1, -1, false)
	ddp, err := dist.NewDDP(c, model, dist.DDPOptions{BucketBytes: 1024})
	if err != nil {
		return err
	}
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
	deadline := time.Now().Add(time.Hour)
	for step := 0; time.Now().Before(deadline); {
		if !loader.Next() {
			continue
		}
		if err := onStep(step); err != nil {
			return err
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
	return nil
}

// commChecks exercises the collectives of c.
func commChecks(c dist.Comm) error {
	n, r := c.Size(), c.Rank()
	f32 := []float32{float32(r), 1, 0.5}
	if err := dist.AllReduce(c, f32, dist.Sum); err != nil {
		return err
	}
	if want := []float32{float32(n * (n - 1) / 2), float32(n), 0.5 * float32(n)}; !slices.Equal(f32, want) {
		return fmt.Errorf("float32 sum %v, want %v", f32, want)
	}
	f64 := make([]float64, 100_003) // an odd length, split by the ring
	for i := range f64 {
		f64[i] = float64(r*i) + 1
	}
	if err := dist.AllReduce(c, f64, dist.Avg); err != nil {
		return err
	}
	for i, v := range f64 {
		if want := float64(i*(n-1))/2 + 1; v != want {
			return fmt.Errorf("float64 average [%d] = %v, want %v", i, v, want)
		}
	}
	root := n - 1
	b32 := []float32{float32(r), float32(r)}
	b64 := []float64{float64(r)}
	by := []byte{byte(r), 7}
	if err := dist.Broadcast(c, b32, root); err != nil {
		return err
	}
	if err := dist.Broadcast(c, b64, root); err != nil {
		return err
	}
	if err := c.BroadcastBytes(by, root); err != nil {
		return err
	}
	if b32[1] != float32(root) || b64[0] != float64(root) || by[0] != byte(root) || by[1] != 7 {
		return fmt.Errorf("broadcast from %d: %v %v %v", root, b32, b64, by)
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	if err := c.BroadcastFloat32(b32, n); err == nil {
		return fmt.Errorf("broadcast from root %d of %d accepted", n, n)
	}
	if err := c.AllReduceFloat64(f64, dist.Op(9)); err == nil {
		return errors.New("Op(9) accepted")
	}
	return nil
}
