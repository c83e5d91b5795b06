package importcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path; rules and messages use paths relative to it.
const module = "github.com/tapegrad/tapegrad"

// rule says which packages of the module a package may import directly.
type rule struct {
	// pkg is a package path relative to the module, or a prefix ending in
	// "/..." for a tree of packages.
	pkg string
	// may lists the allowed imports the same way; "*" allows any.
	may []string
}

// rules is the layering, top to bottom: imports only point down. The
// first rule whose pkg matches applies.
var rules = []rule{
	{"cmd/...", []string{"*"}},
	{"examples/...", []string{"*"}},
	{"nn/...", []string{"nn/...", "autodiff", "registry", "forward", "internal/..."}},
	{"optim", []string{"autodiff", "registry", "internal/..."}},
	{"autodiff/gradcheck", []string{"autodiff", "registry", "forward", "internal/..."}},
	{"autodiff/golden", []string{"autodiff", "registry", "forward", "internal/..."}},
	{"autodiff", []string{"registry", "forward", "backward", "internal/..."}},
	{"backward", []string{"registry", "forward", "internal/..."}},
	{"forward", []string{"registry", "internal/..."}},
	{"registry/registrytest", []string{"registry", "internal/..."}},
	{"registry", nil},
	{"internal/...", []string{"internal/..."}},
}

// match reports whether the relative package path p matches pattern.
func match(pattern, p string) bool {
	if pattern == "*" {
		return true
	}
	if tree, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == tree || strings.HasPrefix(p, tree+"/")
	}
	return p == pattern
}

// listed is what the test reads of `go list -json`.
type listed struct {
	ImportPath string
	Imports    []string
}

// violations returns one message per upward import among pkgs.
func violations(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		i := slices.IndexFunc(rules, func(r rule) bool { return match(r.pkg, rel) })
		if i < 0 {
			out = append(out, "package "+rel+" has no layering rule: add it to rules in internal/importcheck")
			continue
		}
		r := rules[i]
		for _, imp := range p.Imports {
			irel, ok := relative(imp)
			if !ok || irel == rel {
				continue
			}
			if !slices.ContainsFunc(r.may, func(m string) bool { return match(m, irel) }) {
				allowed := "nothing of the module"
				if len(r.may) > 0 {
					allowed = strings.Join(r.may, ", ")
				}
				out = append(out, "upward import: "+rel+" imports "+irel+" ("+r.pkg+" may import "+allowed+")")
			}
		}
	}
	return out
}

// relative returns path relative to the module, if it is in the module.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

// TestImportsPointDown lists every package of the module (non-test
// imports) and fails for each import that is not allowed by rules.
func TestImportsPointDown(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(outb))
	var pkgs []listed
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages of %s", len(pkgs), module)
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolationsReported checks the checker on made-up packages.
func TestViolationsReported(t *testing.T) {
	pkgs := []listed{
		{module + "/registry", []string{module + "/internal/tensorx", "fmt"}},
		{module + "/internal/golden", []string{module + "/autodiff", module + "/internal/tensorx"}},
		{module + "/nn", []string{module + "/optim", module + "/autodiff"}},
		{module + "/backward", []string{module + "/forward", module + "/internal/ewkern"}},
		{module + "/cmd/x", []string{module + "/nn"}},
		{module + "/newpkg", nil},
	}
	got := violations(pkgs)
	want := []string{
		"upward import: registry imports internal/tensorx (registry may import nothing of the module)",
		"upward import: internal/golden imports autodiff (internal/... may import internal/...)",
		"upward import: nn imports optim (nn/... may import nn/..., autodiff, registry, forward, internal/...)",
		"package newpkg has no layering rule: add it to rules in internal/importcheck",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
