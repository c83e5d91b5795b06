//go:build mpi

package dist_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The MPI tests run workers (workers_test.go) of this test binary under
// mpirun, two ranks on this machine (shared memory and TCP loopback).

// mpiRanks is the number of ranks of the MPI tests.
const mpiRanks = 2

// jobLimit bounds a whole mpirun job (a hang fails the test instead of CI).
const jobLimit = 3 * time.Minute

// mpirun runs worker under mpirun and returns its output, exit code and
// the marker directory.
func mpirun(t *testing.T, worker string) (out string, code int, dir string) {
	t.Helper()
	bin, err := exec.LookPath("mpirun")
	if err != nil {
		t.Fatalf("mpirun not found (install openmpi-bin): %v", err)
	}
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), jobLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(mpiRanks), os.Args[0])
	cmd.Env = append(os.Environ(), workerEnv+"="+worker, dirEnv+"="+dir)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun %s: still running after %v:\n%s", worker, jobLimit, buf.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mpirun %s: %v", worker, err)
	}
	return buf.String(), code, dir
}

// runOK runs worker and requires every rank to succeed.
func runOK(t *testing.T, worker string) {
	out, code, dir := mpirun(t, worker)
	if code != 0 {
		t.Fatalf("mpirun %s: exit status %d:\n%s", worker, code, out)
	}
	for r := range mpiRanks {
		if _, err := os.Stat(filepath.Join(dir, "finished-"+strconv.Itoa(r))); err != nil {
			t.Errorf("rank %d did not finish:\n%s", r, out)
		}
	}
}

func TestMPICollectives(t *testing.T)           { runOK(t, "comm") }
func TestMPIIdenticalParams(t *testing.T)       { runOK(t, "identical") }
func TestMPIEquivalentInferenceBN(t *testing.T) { runOK(t, "equivalent-infer-bn") }
func TestMPIEquivalentPerRankBN(t *testing.T)   { runOK(t, "equivalent-rank-bn") }
func TestMPIOverlap(t *testing.T)               { runOK(t, "overlap") }

// failureLimit is how soon after a rank's failure the whole job must
// have ended: "within seconds", far below DefaultTimeout (5 minutes), so
// it is the transport or Abort that ends the job, not the watchdog.
const failureLimit = 20 * time.Second

// runFailing runs a worker in which rank 1 fails (leaving the marker
// file marker) and checks that the job ends non-zero within failureLimit
// of the failure, rank 0 never finishing.
func runFailing(t *testing.T, worker, marker string, limit time.Duration) string {
	out, code, dir := mpirun(t, worker)
	end := time.Now()
	if code == 0 {
		t.Errorf("mpirun %s: exit status 0, want non-zero:\n%s", worker, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, marker))
	if err != nil {
		t.Fatalf("rank 1 did not reach its failure (%v):\n%s", err, out)
	}
	at, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if d := end.Sub(time.Unix(0, at)); d > limit {
		t.Errorf("the job ended %v after rank 1's failure, want within %v:\n%s", d, limit, out)
	} else {
		t.Logf("the job ended %v after rank 1's failure (exit status %d)", d.Round(time.Millisecond), code)
	}
	if _, err := os.Stat(filepath.Join(dir, "finished-0")); err == nil {
		t.Errorf("rank 0 finished normally:\n%s", out)
	}
	return out
}

// TestMPIKilledRank: rank 1 is killed (SIGKILL) mid-run; mpirun ends rank
// 0, and the job exits non-zero.
func TestMPIKilledRank(t *testing.T) { runFailing(t, "kill", "killed", failureLimit) }

// TestMPIFailedRank: rank 1 returns an error mid-run and calls Abort.
func TestMPIFailedRank(t *testing.T) { runFailing(t, "fail", "failed", failureLimit) }

// TestMPIHungRank: rank 1 stops calling collectives without dying; rank
// 0's collective times out (Options.Timeout) and aborts the job.
func TestMPIHungRank(t *testing.T) {
	out := runFailing(t, "hang", "hung", workerTimeout+failureLimit)
	if !strings.Contains(out, "did not complete within "+workerTimeout.String()) {
		t.Errorf("no timeout message from rank 0:\n%s", out)
	}
}

func TestMPIErrorReturned(t *testing.T) { runOK(t, "mpi-error") }

// BenchmarkMPIAllReduce512KB reports the time of one all-reduce of the
// example model's gradient (512 KB of float32) between 2 ranks on this
// machine, the ranks entering it together (ns/op; mpirun's start is not
// counted).
func BenchmarkMPIAllReduce512KB(b *testing.B) {
	bin, err := exec.LookPath("mpirun")
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "--allow-run-as-root", "--oversubscribe", "-np", strconv.Itoa(mpiRanks), os.Args[0])
	cmd.Env = append(os.Environ(), workerEnv+"=bench-allreduce", benchEnv+"="+strconv.Itoa(b.N))
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%v:\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "allreduce-ns "); ok {
			ns, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(ns, "ns/op")
			return
		}
	}
	b.Fatalf("no timing in the output:\n%s", out)
}
