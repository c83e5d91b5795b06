//go:build unix

package nn

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Crash-safety tests of SaveCheckpoint. They run SaveCheckpoint in child
// processes (this test binary, re-executed with ckptChildEnv set: init
// below runs the child's part instead of the tests), so that the child can
// be killed in the middle of a write, or be given a file-size limit or
// another user's permissions. (Unix only: resource limits, credentials.)

const (
	ckptChildEnv = "TAPEGRAD_CKPT_CHILD" // the child's job: "loop", "save"
	ckptPathEnv  = "TAPEGRAD_CKPT_PATH"  // the checkpoint's path
	ckptSizeEnv  = "TAPEGRAD_CKPT_SIZE"  // the model's width (crashModel)
	ckptLimitEnv = "TAPEGRAD_CKPT_FSIZE" // "save": RLIMIT_FSIZE in bytes, if set
)

func init() {
	job := os.Getenv(ckptChildEnv)
	if job == "" {
		return
	}
	os.Exit(ckptChild(job))
}

// ckptChild is the child process: "loop" saves state B, A, B, … to the
// path for ever (printing "ready" first and "saved N" after each save);
// "save" saves state B once, under the file-size limit if one is given,
// and prints the error (or "ok").
func ckptChild(job string) int {
	path := os.Getenv(ckptPathEnv)
	width, err := strconv.Atoi(os.Getenv(ckptSizeEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: bad size:", err)
		return 2
	}
	models := [2]*Sequential{crashModel(width, 0), crashModel(width, 1)}
	out := bufio.NewWriter(os.Stdout)
	switch job {
	case "loop":
		fmt.Fprintln(out, "ready")
		out.Flush()
		for i := 0; ; i++ {
			s := 1 - i%2 // B first: the parent wrote A
			if err := SaveCheckpoint(path, models[s], nil, crashMeta(s, i)); err != nil {
				fmt.Fprintln(os.Stderr, "child:", err)
				return 1
			}
			fmt.Fprintln(out, "saved", i)
			out.Flush()
		}
	case "save":
		if lim := os.Getenv(ckptLimitEnv); lim != "" {
			n, err := strconv.ParseUint(lim, 10, 64)
			if err != nil {
				fmt.Fprintln(os.Stderr, "child: bad limit:", err)
				return 2
			}
			// Writing past the limit fails with EFBIG (the signal that
			// comes with it, ignored here, would kill the process).
			signal.Ignore(syscall.SIGXFSZ)
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				fmt.Fprintln(os.Stderr, "child: setrlimit:", err)
				return 2
			}
		}
		if err := SaveCheckpoint(path, models[1], nil, crashMeta(1, 1)); err != nil {
			fmt.Fprintln(out, err)
		} else {
			fmt.Fprintln(out, "ok")
		}
		out.Flush()
		return 0
	}
	fmt.Fprintln(os.Stderr, "child: unknown job", job)
	return 2
}

// crashModel returns a model of two width×width dense layers and a batch
// norm (parameters and buffers) holding state s (0: A, 1: B): every
// element of every tensor has a value that depends on s, the tensor and
// its index, so that a file mixing the states, or holding a stale block,
// equals neither.
func crashModel(width, s int) *Sequential {
	m := NewSequential(
		Named("fc1", NewDense(width, width, DenseOpts{Rand: rnd(1)})),
		Named("bn", NewBatchNorm(width, BatchNormOpts{})),
		Named("fc2", NewDense(width, width, DenseOpts{Rand: rnd(2)})),
	)
	k := 0
	fill := func(d []float32) {
		k++
		for i := range d {
			v := float32(k*100000+i%99991) + 0.5
			if s == 1 {
				v = -v
			}
			d[i] = v
		}
	}
	for _, p := range m.Params() {
		fill(tensorx.MustSlice[float32](p.Data))
	}
	for _, b := range m.Buffers() {
		fill(tensorx.MustSlice[float32](b.Data))
	}
	return m
}

// crashMeta is the metadata saved with state s by the i-th save.
func crashMeta(s, i int) map[string]string {
	return map[string]string{"state": "AB"[s : s+1], "save": strconv.Itoa(i)}
}

// checkState loads the checkpoint at path into a fresh model and returns
// which state (0 or 1) it holds, failing the test unless the file is
// complete, loadable and equal to one of the two states in every element
// and in its metadata.
func checkState(t *testing.T, path string, width int, want [2]*Sequential) int {
	t.Helper()
	m := crashModel(width, 0)
	for _, p := range m.Params() { // forget the values: the file must set them all
		clear(tensorx.MustSlice[float32](p.Data))
	}
	for _, b := range m.Buffers() {
		clear(tensorx.MustSlice[float32](b.Data))
	}
	md, err := LoadCheckpoint(path, m, nil)
	if err != nil {
		t.Fatalf("checkpoint not loadable: %v", err)
	}
	s := strings.Index("AB", md["state"])
	if len(md["state"]) != 1 || s < 0 {
		t.Fatalf("checkpoint metadata %v: no state A or B", md)
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return len(a) == len(b)
	}
	ref := want[s]
	for i, p := range m.Params() {
		if !same(tensorx.MustSlice[float32](p.Data), tensorx.MustSlice[float32](ref.Params()[i].Data)) {
			t.Fatalf("checkpoint says state %s but parameter %s differs from it (a torn or mixed file)", md["state"], p.Name)
		}
	}
	for i, b := range m.Buffers() {
		if !same(tensorx.MustSlice[float32](b.Data), tensorx.MustSlice[float32](ref.Buffers()[i].Data)) {
			t.Fatalf("checkpoint says state %s but buffer %s differs from it (a torn or mixed file)", md["state"], b.Name)
		}
	}
	return s
}

// tempFiles lists the entries of dir other than the checkpoint name.
func tempFiles(t *testing.T, dir, name string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name() != name {
			out = append(out, e.Name())
		}
	}
	return out
}

// saveChild runs a child that saves state B over path once, with the
// given extra environment and process attributes, and returns what it
// printed (the error, or "ok").
func saveChild(t *testing.T, bin, path string, width int, env []string, attr *syscall.SysProcAttr) string {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), ckptChildEnv+"=save", ckptPathEnv+"="+path, ckptSizeEnv+"="+strconv.Itoa(width))
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = attr
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v: %s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// checkFailedSave checks the outcome of a save that should have failed:
// an error naming path (and containing want), the old file (state A)
// intact and loadable, nothing else in its directory.
func checkFailedSave(t *testing.T, msg, want, path string, width int, states [2]*Sequential) {
	t.Helper()
	t.Logf("SaveCheckpoint: %s", msg)
	if msg == "ok" {
		t.Fatal("SaveCheckpoint succeeded; want an error")
	}
	if !strings.Contains(msg, path) || !strings.Contains(msg, want) {
		t.Errorf("error %q does not name the checkpoint %s and the cause %q", msg, path, want)
	}
	if s := checkState(t, path, width, states); s != 0 {
		t.Errorf("old checkpoint replaced by state %d", s)
	}
	if tmp := tempFiles(t, filepath.Dir(path), filepath.Base(path)); len(tmp) > 0 {
		t.Errorf("files left next to the checkpoint: %v", tmp)
	}
}

// TestCheckpointWriteErrorKeepsOldFile makes saves fail and checks that
// SaveCheckpoint returns an error naming the path, leaves the old file
// intact and loadable, and leaves no temporary file:
//   - a full disk, simulated with a file-size limit (RLIMIT_FSIZE) in a
//     child process: the write fails part-way with EFBIG, the code path of
//     ENOSPC; root is subject to the limit too;
//   - a read-only directory: for root, which ignores permissions, the
//     saving child runs as user nobody (65534), from a copy of the test
//     binary it can execute;
//   - a path that names a directory (the rename fails after the write).
func TestCheckpointWriteErrorKeepsOldFile(t *testing.T) {
	const width = 64 // 33 KB
	states := [2]*Sequential{crashModel(width, 0), crashModel(width, 1)}
	// Directories open to every user, for the child running as nobody.
	root, err := os.MkdirTemp("", "tapegrad-ckpt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(root)
	})
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	newDir := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "ckpt.safetensors")
		if err := SaveCheckpoint(p, states[0], nil, crashMeta(0, -1)); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("disk full", func(t *testing.T) {
		path := newDir("full")
		msg := saveChild(t, testBinary(t), path, width, []string{ckptLimitEnv + "=4096"}, nil)
		checkFailedSave(t, msg, "file too large", path, width, states)
	})

	t.Run("read-only directory", func(t *testing.T) {
		path := newDir("ro")
		if err := os.Chmod(filepath.Dir(path), 0o555); err != nil {
			t.Fatal(err)
		}
		var msg string
		if os.Geteuid() != 0 {
			err := SaveCheckpoint(path, states[1], nil, crashMeta(1, 1))
			if err == nil {
				t.Fatal("SaveCheckpoint succeeded in a read-only directory")
			}
			msg = err.Error()
		} else {
			bin := filepath.Join(root, "child.test")
			if err := copyFile(testBinary(t), bin); err != nil {
				t.Fatal(err)
			}
			msg = saveChild(t, bin, path, width, nil, &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}})
		}
		checkFailedSave(t, msg, "permission denied", path, width, states)
	})

	t.Run("path is a directory", func(t *testing.T) {
		path := newDir("isdir")
		target := filepath.Join(filepath.Dir(path), "sub")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := SaveCheckpoint(target, states[1], nil, nil)
		if err == nil {
			t.Fatal("SaveCheckpoint over a directory succeeded")
		}
		t.Logf("SaveCheckpoint: %v", err)
		if !strings.Contains(err.Error(), target) {
			t.Errorf("error %q does not name %s", err, target)
		}
		if fi, err := os.Stat(filepath.Join(target, "keep")); err != nil || fi.Size() != 0 {
			t.Errorf("directory changed: %v", err)
		}
		if tmp := tempFiles(t, filepath.Dir(path), filepath.Base(path)); len(tmp) != 1 || tmp[0] != "sub" {
			t.Errorf("files left next to the checkpoint: %v", tmp)
		}
	})
}

// copyFile copies the file src to dst, executable by everyone.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// testBinary returns the path of this test binary, which the tests run
// again as their child processes.
func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
