package dist

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Op is the reduction of an all-reduce.
type Op int

const (
	// Sum adds the ranks' buffers.
	Sum Op = iota
	// Avg adds the ranks' buffers and divides by the number of ranks (in
	// the buffer's precision, the same division on every rank, so every
	// rank gets the same bits).
	Avg
)

func (o Op) String() string {
	switch o {
	case Sum:
		return "Sum"
	case Avg:
		return "Avg"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Comm is a group of ranks (processes, or goroutines for NewGroup) that
// run the same program on different data and meet in collective
// operations. Every rank must call the same collectives in the same order
// with buffers of the same length; a collective returns once every rank
// has joined it. The methods may be called from any goroutine, one
// collective at a time per Comm (concurrent calls are serialised).
//
// Buffers are reduced or overwritten in place. A collective that fails
// returns an error (an *Error for MPI); the group is then in an unknown
// state, and the program should call Abort.
type Comm interface {
	// Rank is this rank's number, 0 to Size()-1.
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllReduceFloat32 replaces buf on every rank by the elementwise
	// reduction (op) of all ranks' buf. Every rank gets the same bits.
	AllReduceFloat32(buf []float32, op Op) error
	// AllReduceFloat64 is AllReduceFloat32 for float64.
	AllReduceFloat64(buf []float64, op Op) error
	// BroadcastFloat32 copies root's buf into every other rank's buf.
	BroadcastFloat32(buf []float32, root int) error
	// BroadcastFloat64 is BroadcastFloat32 for float64.
	BroadcastFloat64(buf []float64, root int) error
	// BroadcastBytes copies root's buf into every other rank's buf.
	BroadcastBytes(buf []byte, root int) error
	// Barrier returns once every rank has called it.
	Barrier() error
	// Abort ends every rank of the group with the exit status code, as
	// fast as the transport allows (MPI_Abort for MPI). It does not
	// return. Call it when this rank fails, so that the others do not wait
	// for it forever.
	Abort(code int)
	// Close releases the group (MPI_Finalize for MPI); every rank calls it
	// once at the end. Collectives after Close return an error.
	Close() error
}

// Options configure Init.
type Options struct {
	// Timeout bounds every collective of an MPI communicator: one that has
	// not completed after Timeout (a rank that hangs, or died without the
	// launcher noticing) makes this rank print the collective's name and
	// abort the whole job (MPI_Abort, exit status 3). Zero means
	// DefaultTimeout; negative means no limit. It bounds the time ranks
	// may drift apart between two collectives too (one rank evaluating or
	// writing a checkpoint while the others wait), so it must exceed that.
	Timeout time.Duration
}

// DefaultTimeout is the collective timeout when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Minute

// AbortTimeoutCode is the exit status of ranks aborted by a collective
// that timed out.
const AbortTimeoutCode = 3

// ErrClosed is returned by the collectives of a closed Comm.
var ErrClosed = errors.New("dist: communicator closed")

// ErrMismatch is returned (by the in-process group) when the ranks call
// different collectives, or with buffers of different lengths.
var ErrMismatch = errors.New("dist: ranks called mismatched collectives")

// Error is an error reported by the MPI library.
type Error struct {
	// Call is the MPI function that failed (MPI_Allreduce, ...).
	Call string
	// Code is its error code, Msg the library's text for it.
	Code int
	Msg  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("dist: %s failed: %s (MPI error %d)", e.Call, e.Msg, e.Code)
}

// AllReduce is AllReduceFloat32 or AllReduceFloat64 by T.
func AllReduce[T float32 | float64](c Comm, buf []T, op Op) error {
	switch b := any(buf).(type) {
	case []float32:
		return c.AllReduceFloat32(b, op)
	case []float64:
		return c.AllReduceFloat64(b, op)
	}
	panic("unreachable")
}

// Broadcast is BroadcastFloat32 or BroadcastFloat64 by T.
func Broadcast[T float32 | float64](c Comm, buf []T, root int) error {
	switch b := any(buf).(type) {
	case []float32:
		return c.BroadcastFloat32(b, root)
	case []float64:
		return c.BroadcastFloat64(b, root)
	}
	panic("unreachable")
}

// checkOp and checkRoot validate collective arguments.
func checkOp(op Op) error {
	if op != Sum && op != Avg {
		return fmt.Errorf("dist: unknown reduction %v", op)
	}
	return nil
}

func checkRoot(root, size int) error {
	if root < 0 || root >= size {
		return fmt.Errorf("dist: broadcast root %d out of range [0, %d)", root, size)
	}
	return nil
}

// divide divides every element by n (the Avg of a Sum).
func divide[T float32 | float64](buf []T, n int) {
	if n == 1 {
		return
	}
	d := T(n)
	for i := range buf {
		buf[i] /= d
	}
}

// launchedRanks returns the number of ranks a launcher (mpirun, or
// srun with PMI) says this process belongs to, 0 if none.
func launchedRanks() int {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"} {
		if n, err := strconv.Atoi(os.Getenv(v)); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// Local is the communicator of a single process: rank 0 of 1. Its
// collectives do nothing (a reduction over one rank is the identity) but
// check their arguments. The zero value is ready to use.
type Local struct{ closed bool }

// Rank returns 0.
func (*Local) Rank() int { return 0 }

// Size returns 1.
func (*Local) Size() int { return 1 }

func (l *Local) check() error {
	if l.closed {
		return ErrClosed
	}
	return nil
}

// AllReduceFloat32 leaves buf as it is.
func (l *Local) AllReduceFloat32(buf []float32, op Op) error {
	if err := l.check(); err != nil {
		return err
	}
	return checkOp(op)
}

// AllReduceFloat64 leaves buf as it is.
func (l *Local) AllReduceFloat64(buf []float64, op Op) error {
	if err := l.check(); err != nil {
		return err
	}
	return checkOp(op)
}

// BroadcastFloat32 leaves buf as it is (root must be 0).
func (l *Local) BroadcastFloat32(buf []float32, root int) error {
	if err := l.check(); err != nil {
		return err
	}
	return checkRoot(root, 1)
}

// BroadcastFloat64 leaves buf as it is (root must be 0).
func (l *Local) BroadcastFloat64(buf []float64, root int) error {
	if err := l.check(); err != nil {
		return err
	}
	return checkRoot(root, 1)
}

// BroadcastBytes leaves buf as it is (root must be 0).
func (l *Local) BroadcastBytes(buf []byte, root int) error {
	if err := l.check(); err != nil {
		return err
	}
	return checkRoot(root, 1)
}

// Barrier returns at once.
func (l *Local) Barrier() error { return l.check() }

// Abort exits the process with status code.
func (*Local) Abort(code int) { os.Exit(code) }

// Close marks the communicator closed.
func (l *Local) Close() error {
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	return nil
}
