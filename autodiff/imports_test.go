package autodiff_test

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/testutil"
)

// testOnly are packages library code must not link: "testing" (and the
// flags it registers) changes users' test binaries, "flag" reads theirs.
var testOnly = []string{"testing", "flag"}

// TestNoTestingImports: autodiff's non-test files import neither "testing"
// nor "flag", and neither does anything autodiff depends on.
func TestNoTestingImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range testOnly {
				if p == bad {
					t.Errorf("%s imports %q", name, p)
				}
			}
		}
	}
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command: skipping the go list -deps check")
		}
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range testOnly {
			if dep == bad {
				t.Errorf("autodiff depends on %q (go list -deps)", dep)
			}
		}
	}
}

// TestPoisonEnvName: the test helper switches on the variable the arena
// reads.
func TestPoisonEnvName(t *testing.T) {
	if autodiff.PoisonEnv != testutil.PoisonEnv {
		t.Errorf("autodiff.PoisonEnv %q, testutil.PoisonEnv %q", autodiff.PoisonEnv, testutil.PoisonEnv)
	}
}
