//go:build unix && !race

package nn

import (
	"bufio"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// (Excluded from -race builds: its subject is the child process, whose
// writes the race detector does not see; and race-built children start
// slowly, making the test take half a minute.)

// TestCheckpointSurvivesSIGKILL kills a process that saves checkpoints in
// a loop (alternating states A and B of a 130 KB model) at random
// moments, 50 times, and checks after each kill that the file is complete,
// loadable and equal to A or to B, never torn or mixed. It also checks
// that the kills did land while a save was in progress (a temporary file
// was left) and that both states were seen, so that the test exercised
// the replacement.
func TestCheckpointSurvivesSIGKILL(t *testing.T) {
	const width, kills = 128, 50
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	states := [2]*Sequential{crashModel(width, 0), crashModel(width, 1)}
	if err := SaveCheckpoint(path, states[0], nil, crashMeta(0, -1)); err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	t.Logf("random kill times: seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	var seen [2]int
	interrupted, saves := 0, 0
	for k := range kills {
		cmd := exec.Command(testBinary(t))
		cmd.Env = append(os.Environ(), ckptChildEnv+"=loop", ckptPathEnv+"="+path, ckptSizeEnv+"="+strconv.Itoa(width))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || lines.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: child did not start: %q %s", k, lines.Text(), stderr.String())
		}
		// Count the child's saves while it runs.
		counted := make(chan int)
		go func() {
			n := 0
			for lines.Scan() {
				n++
			}
			counted <- n
		}()
		time.Sleep(time.Duration(r.Int63n(int64(25 * time.Millisecond))))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		n := <-counted
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended by %v, not by SIGKILL: %s", k, err, stderr.String())
		}
		saves += n
		seen[checkState(t, path, width, states)]++
		if tmp := tempFiles(t, dir, "ckpt.safetensors"); len(tmp) > 0 {
			interrupted++
			for _, name := range tmp {
				if !strings.HasPrefix(name, ".ckpt.safetensors.tmp") {
					t.Fatalf("kill %d: unexpected file %s next to the checkpoint", k, name)
				}
				os.Remove(filepath.Join(dir, name))
			}
		}
	}
	t.Logf("%d kills: %d during a save (temporary file left), %d saves completed; file held A %d times, B %d times",
		kills, interrupted, saves, seen[0], seen[1])
	if interrupted == 0 || seen[0] == 0 || seen[1] == 0 {
		t.Fatalf("the kills did not exercise the replacement (%d during a save, states seen %v): adjust the timing", interrupted, seen)
	}
}
