//go:build mpi

package dist_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tapegrad/tapegrad/nn/dist"
)

func init() {
	// An error of the MPI library comes back as a *dist.Error (the
	// communicator's error handler is MPI_ERRORS_RETURN), and the
	// communicator still works.
	workers["mpi-error"] = func(c dist.Comm) error {
		err := dist.BcastUnchecked(c, []byte{1, 2}, c.Size()+3)
		var me *dist.Error
		if !errors.As(err, &me) || me.Call != "MPI_Bcast" || me.Code == 0 || me.Msg == "" || !strings.Contains(err.Error(), "MPI_Bcast failed") {
			return agree(c, fmt.Errorf("MPI_Bcast from an invalid root: %v, want a *dist.Error", err))
		}
		return agree(c, commChecks(c))
	}
}

// benchEnv is the number of all-reduces the "bench-allreduce" worker times.
const benchEnv = "TAPEGRAD_DIST_BENCH_N"

func init() {
	// Times all-reduces of the example model's gradient (128,042 float32,
	// 512 KB) on ranks that enter them together (a barrier before each),
	// and prints rank 0's mean: the transfer itself, without waiting for a
	// slower rank.
	workers["bench-allreduce"] = func(c dist.Comm) error {
		n, err := strconv.Atoi(os.Getenv(benchEnv))
		if err != nil || n < 1 {
			n = 100
		}
		buf := make([]float32, 128042)
		var total time.Duration
		for range n {
			if err := c.Barrier(); err != nil {
				return err
			}
			t0 := time.Now()
			if err := c.AllReduceFloat32(buf, dist.Avg); err != nil {
				return err
			}
			total += time.Since(t0)
		}
		if c.Rank() == 0 {
			fmt.Printf("allreduce-ns %d\n", total.Nanoseconds()/int64(n))
		}
		return nil
	}
}
