//go:build mpi

package dist

/*
#cgo pkg-config: ompi
#include <mpi.h>

// Thin wrappers: MPI_COMM_WORLD, MPI_IN_PLACE and the datatypes are
// macros (casts of library symbols in Open MPI) that cgo cannot use
// directly. dt: 0 float32, 1 float64, 2 bytes.
static MPI_Datatype tg_type(int dt) {
	switch (dt) {
	case 0: return MPI_FLOAT;
	case 1: return MPI_DOUBLE;
	}
	return MPI_BYTE;
}

static int tg_init(int *provided) {
	int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, provided);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}
static int tg_rank(int *r) { return MPI_Comm_rank(MPI_COMM_WORLD, r); }
static int tg_size(int *s) { return MPI_Comm_size(MPI_COMM_WORLD, s); }
static int tg_allreduce_sum(void *buf, int n, int dt) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, tg_type(dt), MPI_SUM, MPI_COMM_WORLD);
}
static int tg_bcast(void *buf, int n, int dt, int root) {
	return MPI_Bcast(buf, n, tg_type(dt), root, MPI_COMM_WORLD);
}
static int tg_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
static int tg_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }
static int tg_finalize(void) { return MPI_Finalize(); }
static int tg_errstr(int code, char *buf) {
	int len = 0;
	if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return 0;
	return len;
}
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// WithMPI reports whether the package was built with MPI (build tag mpi).
const WithMPI = true

// Init initialises MPI (once per process: later calls return the same
// communicator and ignore their options) and returns MPI_COMM_WORLD. Every
// rank of the job calls it, then Close at the end. A process not started
// by mpirun is a job of one rank (MPI's singleton initialisation).
//
// Threads: MPI is initialised with MPI_THREAD_FUNNELED on a goroutine
// locked to its OS thread, which makes every MPI call of the process;
// the Comm's methods hand their calls to it and wait (a timeout bounds
// the wait, see Options). The calls are blocking MPI collectives: a rank
// that calls one from a helper goroutine (as DDP does) overlaps it with
// its computation, and FUNNELED is the thread level every MPI library
// provides. Errors of the library are returned, not fatal
// (MPI_ERRORS_RETURN on MPI_COMM_WORLD), as *Error.
//
// Open MPI's handlers for SIGSEGV, SIGBUS, SIGFPE and SIGABRT would replace
// the Go runtime's (which turns a nil dereference into a panic); Init
// switches them off (MCA parameter opal_signal empty) unless
// OMPI_MCA_opal_signal is set. It also makes Open MPI yield the CPU while
// it waits in a collective (mpi_yield_when_idle 1, unless
// OMPI_MCA_mpi_yield_when_idle is set): the MPI thread shares the cores
// with the kernels' threads, and a busy wait for a slower rank would take
// a core from them (measured: 2 ranks on 2 busy cores trained 15-20%
// faster with it).
func Init(opts Options) (Comm, error) {
	initOnce.Do(func() { world, initErr = startMPI(opts) })
	if initErr != nil {
		return nil, initErr
	}
	return world, nil
}

var (
	initOnce sync.Once
	world    *mpiComm
	initErr  error
)

// Calls the comm thread makes.
const (
	callAllReduce = iota
	callBcast
	callBarrier
	callFinalize
	callAbort
)

var callNames = [...]string{"MPI_Allreduce", "MPI_Bcast", "MPI_Barrier", "MPI_Finalize", "MPI_Abort"}

// mpiReq is one call for the comm thread. ptr points to Go memory holding
// no Go pointers (float or byte buffers), kept alive by the waiting
// caller, and passed to C only for the duration of the call.
type mpiReq struct {
	call int
	ptr  unsafe.Pointer
	n    int // elements
	dt   int // 0 float32, 1 float64, 2 bytes
	root int
}

type mpiComm struct {
	rank, size int
	timeout    time.Duration

	mu     sync.Mutex // one call at a time
	req    chan mpiReq
	res    chan error
	timer  *time.Timer
	closed bool
}

func startMPI(opts Options) (*mpiComm, error) {
	if _, ok := os.LookupEnv("OMPI_MCA_opal_signal"); !ok {
		os.Setenv("OMPI_MCA_opal_signal", "")
	}
	if _, ok := os.LookupEnv("OMPI_MCA_mpi_yield_when_idle"); !ok {
		os.Setenv("OMPI_MCA_mpi_yield_when_idle", "1")
	}
	c := &mpiComm{timeout: opts.Timeout, req: make(chan mpiReq), res: make(chan error, 1)}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	ready := make(chan error)
	go c.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return c, nil
}

// loop is the comm thread: it initialises MPI and then makes every MPI
// call of the process. It keeps its OS thread locked to the end, so that
// thread is the one MPI_Init_thread saw (FUNNELED).
func (c *mpiComm) loop(ready chan<- error) {
	runtime.LockOSThread()
	var provided C.int
	if rc := C.tg_init(&provided); rc != C.MPI_SUCCESS {
		ready <- mpiError("MPI_Init_thread", rc)
		return
	}
	if provided < C.MPI_THREAD_FUNNELED {
		ready <- fmt.Errorf("dist: MPI_Init_thread provides thread level %d, below MPI_THREAD_FUNNELED", int(provided))
		return
	}
	var rank, size C.int
	if rc := C.tg_rank(&rank); rc != C.MPI_SUCCESS {
		ready <- mpiError("MPI_Comm_rank", rc)
		return
	}
	if rc := C.tg_size(&size); rc != C.MPI_SUCCESS {
		ready <- mpiError("MPI_Comm_size", rc)
		return
	}
	c.rank, c.size = int(rank), int(size)
	ready <- nil
	for r := range c.req {
		err := c.do(r)
		c.res <- err
		if r.call == callFinalize {
			return // the locked thread ends with the goroutine
		}
	}
}

// maxCount is the largest count one MPI call takes (a C int).
const maxCount = math.MaxInt32

// do makes one call, in chunks of at most maxCount elements.
func (c *mpiComm) do(r mpiReq) error {
	var rc C.int
	switch r.call {
	case callBarrier:
		rc = C.tg_barrier()
	case callFinalize:
		rc = C.tg_finalize()
	case callAbort:
		rc = C.tg_abort(C.int(r.n))
	default:
		size := [...]uintptr{4, 8, 1}[r.dt]
		for off := 0; off < r.n && rc == C.MPI_SUCCESS; off += maxCount {
			k := min(r.n-off, maxCount)
			p := unsafe.Add(r.ptr, uintptr(off)*size)
			if r.call == callAllReduce {
				rc = C.tg_allreduce_sum(p, C.int(k), C.int(r.dt))
			} else {
				rc = C.tg_bcast(p, C.int(k), C.int(r.dt), C.int(r.root))
			}
		}
	}
	if rc != C.MPI_SUCCESS {
		return mpiError(callNames[r.call], rc)
	}
	return nil
}

func mpiError(call string, rc C.int) error {
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	n := C.tg_errstr(rc, &buf[0])
	return &Error{Call: call, Code: int(rc), Msg: C.GoStringN(&buf[0], n)}
}

// call hands r to the comm thread and waits for it, at most c.timeout:
// after that the job is aborted (the comm thread is stuck in MPI and no
// collective of this rank can complete).
func (c *mpiComm) call(r mpiReq) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.req <- r
	if c.timeout < 0 {
		return <-c.res
	}
	c.timer.Reset(c.timeout)
	select {
	case err := <-c.res:
		c.timer.Stop()
		return err
	case <-c.timer.C:
		fmt.Fprintf(os.Stderr, "dist: rank %d of %d: %s did not complete within %v (a rank failed or hangs); aborting the job\n",
			c.rank, c.size, callNames[r.call], c.timeout)
		c.abortStuck(AbortTimeoutCode)
		return nil // not reached
	}
}

func (c *mpiComm) Rank() int { return c.rank }
func (c *mpiComm) Size() int { return c.size }

func (c *mpiComm) AllReduceFloat32(buf []float32, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if len(buf) == 0 || c.size == 1 {
		return c.noop()
	}
	err := c.call(mpiReq{call: callAllReduce, ptr: unsafe.Pointer(&buf[0]), n: len(buf), dt: 0})
	runtime.KeepAlive(buf)
	if err == nil && op == Avg {
		divide(buf, c.size)
	}
	return err
}

func (c *mpiComm) AllReduceFloat64(buf []float64, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	if len(buf) == 0 || c.size == 1 {
		return c.noop()
	}
	err := c.call(mpiReq{call: callAllReduce, ptr: unsafe.Pointer(&buf[0]), n: len(buf), dt: 1})
	runtime.KeepAlive(buf)
	if err == nil && op == Avg {
		divide(buf, c.size)
	}
	return err
}

func (c *mpiComm) BroadcastFloat32(buf []float32, root int) error {
	return c.bcast(unsafe.Pointer(unsafe.SliceData(buf)), len(buf), 0, root)
}

func (c *mpiComm) BroadcastFloat64(buf []float64, root int) error {
	return c.bcast(unsafe.Pointer(unsafe.SliceData(buf)), len(buf), 1, root)
}

func (c *mpiComm) BroadcastBytes(buf []byte, root int) error {
	return c.bcast(unsafe.Pointer(unsafe.SliceData(buf)), len(buf), 2, root)
}

func (c *mpiComm) bcast(p unsafe.Pointer, n, dt, root int) error {
	if err := checkRoot(root, c.size); err != nil {
		return err
	}
	if n == 0 || c.size == 1 {
		return c.noop()
	}
	return c.call(mpiReq{call: callBcast, ptr: p, n: n, dt: dt, root: root})
}

// noop is a collective with nothing to move (one rank, or an empty
// buffer on every rank).
func (c *mpiComm) noop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

func (c *mpiComm) Barrier() error { return c.call(mpiReq{call: callBarrier}) }

// Abort calls MPI_Abort, which makes the launcher end every rank, from the
// comm thread if it is idle, else (it is stuck in a collective) from this
// one. If MPI_Abort returns or takes more than 10 s, the process exits
// with code on its own.
func (c *mpiComm) Abort(code int) {
	go func() {
		time.Sleep(10 * time.Second)
		os.Exit(code)
	}()
	if c.mu.TryLock() {
		if !c.closed {
			c.req <- mpiReq{call: callAbort, n: code}
			<-c.res
		}
		os.Exit(code)
	}
	c.abortStuck(code)
}

// abortStuck calls MPI_Abort from the calling goroutine's thread while the
// comm thread is blocked in MPI. This breaks the FUNNELED contract, on
// the way out only; Open MPI's MPI_Abort just asks the launcher to kill
// the job.
func (c *mpiComm) abortStuck(code int) {
	go func() {
		time.Sleep(10 * time.Second)
		os.Exit(code)
	}()
	C.tg_abort(C.int(code))
	os.Exit(code)
}

func (c *mpiComm) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.mu.Unlock()
	err := c.call(mpiReq{call: callFinalize})
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	return err
}
