package main

// Data-parallel training (-dist): every rank of an MPI job (mpirun -np N,
// binary built with -tags mpi) trains a replica of the model on its
// 1/N of every global batch of -batch examples; package nn/dist averages
// the gradients over the ranks as the backward pass produces them. Rank 0
// alone prints, evaluates, writes the checkpoint and the plot.
//
//	go build -tags mpi -o fashionmnist-mpi ./examples/fashionmnist
//	mpirun -np 2 ./fashionmnist-mpi -dist -threads 1 -data /usr/share/datasets/fashion-mnist

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/dist"
)

// distConfig holds the -dist flags.
type distConfig struct {
	enabled    bool
	bucketKB   int
	timeout    time.Duration
	threadsSet bool // -threads given explicitly
}

func registerDistFlags(d *distConfig) {
	flag.BoolVar(&d.enabled, "dist", false, "data-parallel training over the ranks of an MPI job (mpirun -np N; build with -tags mpi); -batch is the global batch")
	flag.IntVar(&d.bucketKB, "bucket-kb", dist.DefaultBucketBytes>>10, "with -dist: gradient bucket size in KiB")
	flag.DurationVar(&d.timeout, "dist-timeout", dist.DefaultTimeout, "with -dist: abort the job when a collective takes longer (a rank died or hangs)")
}

// distRun is the data-parallel state of a run; nil when not -dist (its
// methods then describe a single process).
type distRun struct {
	comm dist.Comm
	ddp  *dist.DDP
	cfg  distConfig
}

// activeComm is the communicator of a -dist run, for main's error path:
// a failing rank aborts the job instead of leaving the others waiting.
var activeComm dist.Comm

// startDist joins the MPI job for -dist and adapts c: the batch per rank
// (-batch is the global batch) and, unless -threads was given, the
// threads per rank (the cores divided among the ranks on this host).
func startDist(c *config) (*distRun, error) {
	if !c.dist.enabled {
		return nil, nil
	}
	if c.dist.bucketKB < 1 {
		return nil, fmt.Errorf("-bucket-kb %d must be positive", c.dist.bucketKB)
	}
	comm, err := dist.Init(dist.Options{Timeout: c.dist.timeout})
	if err != nil {
		return nil, err
	}
	activeComm = comm
	n := comm.Size()
	if c.batch%n != 0 {
		return nil, fmt.Errorf("-batch %d (the global batch) is not a multiple of the %d ranks", c.batch, n)
	}
	if !c.dist.threadsSet {
		local, _ := strconv.Atoi(os.Getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
		c.threads = max(1, runtime.NumCPU()/max(local, 1))
	}
	return &distRun{comm: comm, cfg: c.dist}, nil
}

func (d *distRun) rank() int {
	if d == nil {
		return 0
	}
	return d.comm.Rank()
}

func (d *distRun) size() int {
	if d == nil {
		return 1
	}
	return d.comm.Size()
}

// root reports whether this rank prints and writes files (rank 0).
func (d *distRun) root() bool { return d.rank() == 0 }

// quiet returns the writers of this rank: rank 0's are out and errOut,
// the others' output is dropped (errors still reach stderr via main).
func (d *distRun) quiet(out, errOut io.Writer) (io.Writer, io.Writer) {
	if d.root() {
		return out, errOut
	}
	return io.Discard, io.Discard
}

// describe is the header line's note on the ranks.
func (d *distRun) describe(batch int) string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf(", %d ranks × %d (MPI)", d.size(), batch/d.size())
}

// attach wraps model for data-parallel training (rank 0's weights and
// statistics to every rank; buckets of -bucket-kb) and hooks tape's
// Backward to it.
func (d *distRun) attach(model nn.Module, tape *autodiff.Tape) error {
	if d == nil {
		return nil
	}
	ddp, err := dist.NewDDP(d.comm, model, dist.DDPOptions{BucketBytes: d.cfg.bucketKB << 10})
	if err != nil {
		return err
	}
	d.ddp = ddp
	ddp.Attach(tape)
	return nil
}

// wait completes the step's gradient averaging (after Backward).
func (d *distRun) wait() error {
	if d == nil {
		return nil
	}
	return d.ddp.Wait()
}

// totals sums an epoch's loss, correct and seen over the ranks.
func (d *distRun) totals(loss float64, correct, seen int) (float64, int, int, error) {
	if d == nil {
		return loss, correct, seen, nil
	}
	v := []float64{loss, float64(correct), float64(seen)}
	if err := d.comm.AllReduceFloat64(v, dist.Sum); err != nil {
		return 0, 0, 0, err
	}
	return v[0], int(v[1]), int(v[2]), nil
}

// endEpoch averages the batch-norm statistics over the ranks (each rank
// keeps its own during the epoch, as DDP without SyncBatchNorm), so that
// the evaluated and saved model carries the statistics of all the data,
// and returns a line on the epoch's communication.
func (d *distRun) endEpoch() (string, error) {
	if d == nil {
		return "", nil
	}
	if err := d.ddp.AverageBuffers(); err != nil {
		return "", err
	}
	st := d.ddp.Stats()
	d.ddp.ResetStats()
	steps := max(st.Steps, 1)
	return fmt.Sprintf("dist: %d ranks, %d bucket(s) of %.2f MB gradients per step; all-reduce %.2f ms/step, %.0f%% of it hidden behind backward\n",
		d.size(), st.Buckets, float64(st.Bytes)/1e6, float64(st.AllReduce.Microseconds())/1e3/float64(steps), 100*st.Hidden()), nil
}

// extraProcs is the number of Go Ps the communication needs beside the
// kernels' threads: one, shared by the DDP's helper goroutine and the MPI
// thread, so that a bucket's all-reduce starts (and the next one follows)
// while the kernels keep theirs busy, not at their next preemption. Both
// sleep in between.
func (d *distRun) extraProcs() int {
	if d == nil {
		return 0
	}
	return 1
}

// seedOffset separates the ranks' random streams (dropout masks, pooling
// regions), as independent processes would have.
func (d *distRun) seedOffset() int64 { return int64(d.rank()) * 1_000_000_007 }

// close finalises MPI.
func (d *distRun) close() error {
	if d == nil {
		return nil
	}
	if d.ddp != nil {
		d.ddp.Close()
	}
	activeComm = nil
	return d.comm.Close()
}
