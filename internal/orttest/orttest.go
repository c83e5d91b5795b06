// Package orttest runs ONNX models in ONNX Runtime for tests: the npm
// package onnxruntime-node (Version), installed on first use into a cache
// directory outside the repository and driven by a small Node.js script
// (run.js) through one long-lived node process per test binary. It also
// runs onnx.checker (python3's onnx package) where it is installed.
//
// Node.js and npm are required: without them Get fails the test, with a
// message saying how to install them. TAPEGRAD_SKIP_ORT=1 skips the tests
// instead (logged; for machines without Node.js, never in CI).
// TAPEGRAD_ORT_DIR overrides the cache directory (default
// $XDG_CACHE_HOME/tapegrad/onnxruntime-node-<Version>, or ~/.cache/...).
package orttest

import (
	"bufio"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Version is the onnxruntime-node release the tests run.
const Version = "1.30.0"

//go:embed run.js
var runJS []byte

// Tensor is a float32 tensor: a shape and its row-major elements.
type Tensor struct {
	Shape []int
	Data  []float32
}

// ORT is a running ONNX Runtime (a node process).
type ORT struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  *os.File
	out    *bufio.Reader
	nextID int
}

var (
	once    sync.Once
	runner  *ORT
	initErr error
)

// Get returns the process's ONNX Runtime, installing onnxruntime-node into
// the cache directory first if needed. It fails tb (or skips it, with
// TAPEGRAD_SKIP_ORT=1) when Node.js or npm is missing or the install
// fails.
func Get(tb testing.TB) *ORT {
	tb.Helper()
	if os.Getenv("TAPEGRAD_SKIP_ORT") == "1" {
		tb.Skip("TAPEGRAD_SKIP_ORT=1: the ONNX Runtime checks are SKIPPED (they run in CI; unset it to run them)")
	}
	once.Do(func() { runner, initErr = start() })
	if initErr != nil {
		tb.Fatalf("ONNX Runtime for the export tests: %v\n"+
			"These tests need Node.js (>= 16) and npm: apt-get install nodejs npm (CI's .ci/run does). "+
			"Set TAPEGRAD_SKIP_ORT=1 to skip them on a machine without Node.js (never in CI).", initErr)
	}
	return runner
}

// Dir returns the directory onnxruntime-node is installed in.
func Dir() (string, error) {
	if d := os.Getenv("TAPEGRAD_ORT_DIR"); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set TAPEGRAD_ORT_DIR): %w", err)
	}
	return filepath.Join(c, "tapegrad", "onnxruntime-node-"+Version), nil
}

func start() (*ORT, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node (Node.js) not found on PATH")
	}
	dir, err := install()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "tapegrad-run.js")
	if old, err := os.ReadFile(script); err != nil || string(old) != string(runJS) {
		if err := writeAtomic(script, runJS); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(node, script, filepath.Join(dir, "node_modules", "onnxruntime-node"))
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = pr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting node: %w", err)
	}
	pr.Close()
	return &ORT{cmd: cmd, stdin: pw, out: bufio.NewReaderSize(stdout, 1<<16)}, nil
}

// install makes sure onnxruntime-node Version is in Dir, running npm
// install --ignore-scripts (its install script would download from a host
// that is not needed: the npm package carries the CPU binaries) into a
// fresh directory renamed into place, so that concurrent test binaries do
// not see a half-made install.
func install() (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if installed(dir) {
		return dir, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm not found on PATH")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	cmd := exec.Command(npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--no-package-lock",
		"--prefix", tmp, "onnxruntime-node@"+Version)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install --ignore-scripts onnxruntime-node@%s failed: %v\n%s", Version, err, out)
	}
	if !installed(tmp) {
		return "", fmt.Errorf("npm install did not install onnxruntime-node %s into %s", Version, tmp)
	}
	if err := os.Rename(tmp, dir); err != nil && !installed(dir) {
		return "", fmt.Errorf("moving the install into place: %w", err)
	}
	return dir, nil
}

// installed reports whether dir holds onnxruntime-node Version.
func installed(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "onnxruntime-node", "package.json"))
	if err != nil {
		return false
	}
	var p struct{ Version string }
	return json.Unmarshal(b, &p) == nil && p.Version == Version
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Options of a run.
type Options struct {
	// NoOptimization disables ONNX Runtime's graph optimizations (fusions,
	// constant folding); by default every level is on.
	NoOptimization bool
	// Optimized, if set, is a file ONNX Runtime writes the optimized
	// model to.
	Optimized string
}

type request struct {
	ID        int                   `json:"id"`
	Model     string                `json:"model"`
	Opt       string                `json:"opt"`
	Optimized string                `json:"optimized,omitempty"`
	Inputs    map[string]tensorFile `json:"inputs"`
	OutDir    string                `json:"outDir"`
}

type tensorFile struct {
	Dims []int  `json:"dims"`
	Type string `json:"type,omitempty"`
	File string `json:"file"`
}

type answer struct {
	ID      int                   `json:"id"`
	Outputs map[string]tensorFile `json:"outputs"`
	Error   string                `json:"error"`
}

// Run runs the serialised model on the inputs (by name) and returns every
// output (by name). Its files go to tb.TempDir().
func (o *ORT) Run(tb testing.TB, model []byte, inputs map[string]Tensor, opts Options) (map[string]Tensor, error) {
	tb.Helper()
	dir := tb.TempDir()
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, model, 0o644); err != nil {
		return nil, err
	}
	return o.RunFile(tb, path, inputs, opts)
}

// RunFile runs the model in the file path (see Run).
func (o *ORT) RunFile(tb testing.TB, path string, inputs map[string]Tensor, opts Options) (map[string]Tensor, error) {
	tb.Helper()
	dir := tb.TempDir()
	req := request{Model: path, Opt: "all", Optimized: opts.Optimized, Inputs: map[string]tensorFile{}, OutDir: dir}
	if opts.NoOptimization {
		req.Opt = "disabled"
	}
	for name, t := range inputs {
		if prod(t.Shape) != len(t.Data) {
			return nil, fmt.Errorf("input %s: %d values for shape %v", name, len(t.Data), t.Shape)
		}
		f := filepath.Join(dir, "in-"+strconv.Itoa(len(req.Inputs))+".bin")
		raw := make([]byte, 4*len(t.Data))
		for i, v := range t.Data {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
		if err := os.WriteFile(f, raw, 0o644); err != nil {
			return nil, err
		}
		req.Inputs[name] = tensorFile{Dims: t.Shape, File: f}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nextID++
	req.ID = o.nextID
	line, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := o.stdin.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("writing to the ONNX Runtime process: %w", err)
	}
	resp, err := o.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading from the ONNX Runtime process: %w", err)
	}
	var a answer
	if err := json.Unmarshal([]byte(resp), &a); err != nil {
		return nil, fmt.Errorf("ONNX Runtime process answered %q: %w", strings.TrimSpace(resp), err)
	}
	if a.ID != req.ID {
		return nil, fmt.Errorf("ONNX Runtime process answered request %d, want %d (%s)", a.ID, req.ID, a.Error)
	}
	if a.Error != "" {
		return nil, fmt.Errorf("ONNX Runtime: %s", a.Error)
	}
	outs := map[string]Tensor{}
	for name, t := range a.Outputs {
		if t.Type != "float32" {
			return nil, fmt.Errorf("output %s has type %s, want float32", name, t.Type)
		}
		raw, err := os.ReadFile(t.File)
		if err != nil {
			return nil, err
		}
		if len(raw) != 4*prod(t.Dims) {
			return nil, fmt.Errorf("output %s: %d bytes for shape %v", name, len(raw), t.Dims)
		}
		d := make([]float32, len(raw)/4)
		for i := range d {
			d[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		outs[name] = Tensor{Shape: t.Dims, Data: d}
	}
	return outs, nil
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// checkerScript validates each model named on the command line with
// onnx.checker (full_check: also ONNX's strict shape inference).
const checkerScript = `
import sys, onnx
bad = 0
for p in sys.argv[1:]:
    try:
        onnx.checker.check_model(onnx.load(p), full_check=True)
    except Exception as e:
        bad += 1
        print("%s: %s" % (p, e))
sys.exit(1 if bad else 0)
`

// Check validates the model files with onnx.checker where python3 with
// the onnx package is installed (it logs that the check did not run
// otherwise: ONNX Runtime's checks stand without it).
func Check(tb testing.TB, paths ...string) {
	tb.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			tb.Log("onnx.checker not run: no python3")
			return
		}
	}
	if err := exec.Command(py, "-c", "import onnx").Run(); err != nil {
		tb.Logf("onnx.checker not run: %s has no onnx package (apt-get install python3-onnx)", py)
		return
	}
	out, err := exec.Command(py, append([]string{"-c", checkerScript}, paths...)...).CombinedOutput()
	if err != nil {
		tb.Errorf("onnx.checker: %v\n%s", err, out)
		return
	}
	tb.Logf("onnx.checker (full_check): %d models valid", len(paths))
}
