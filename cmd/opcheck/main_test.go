package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

type result struct {
	code           int
	stdout, stderr string
}

func runCmd(args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// lastLine returns the last line of s, which must end in a newline.
func lastLine(t *testing.T, s string) string {
	t.Helper()
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("output does not end with a newline: %q", s)
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

var failHeader = regexp.MustCompile(`^FAIL \S+ #(\d+)(?: "([^"]*)")?`)

// failures maps each failing case of a report to its block of problem
// lines; cases are keyed by name, or by "#index" if they have none.
func failures(stdout string) map[string]string {
	out := map[string]string{}
	key := ""
	for _, l := range strings.Split(stdout, "\n") {
		if m := failHeader.FindStringSubmatch(l); m != nil {
			key = m[2]
			if key == "" {
				key = "#" + m[1]
			}
			out[key] = ""
			continue
		}
		if strings.HasPrefix(l, "     ") && key != "" {
			out[key] += strings.TrimSpace(l) + "\n"
			continue
		}
		key = ""
	}
	return out
}

// checkFailures checks that exactly the cases in want failed, each with a
// message containing the given substrings.
func checkFailures(t *testing.T, stdout string, want map[string][]string) {
	t.Helper()
	got := failures(stdout)
	for name, subs := range want {
		block, ok := got[name]
		if !ok {
			t.Errorf("case %q did not fail; output:\n%s", name, stdout)
			continue
		}
		for _, s := range subs {
			if !strings.Contains(block, s) {
				t.Errorf("case %q: message %q does not contain %q", name, block, s)
			}
		}
	}
	for name, block := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected failure of %q: %s", name, block)
		}
	}
}

func TestBuiltinPassing(t *testing.T) {
	r := runCmd("testdata/builtin/pass.json")
	if r.code != 0 || lastLine(t, r.stdout) != "20 passed, 0 failed" || r.stdout != "20 passed, 0 failed\n" {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCmd("-v", "testdata/builtin/pass.json")
	if r.code != 0 || strings.Count(r.stdout, "\nok   ")+boolInt(strings.HasPrefix(r.stdout, "ok   ")) != 20 {
		t.Fatalf("-v: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	for _, name := range []string{"identity/f64/nonfinite", "identity/f32/scalar-grad", "identity/f64/empty-grad", "addn/error/shape-mismatch"} {
		if !strings.Contains(r.stdout, `"`+name+`"`) {
			t.Errorf("-v does not list %q", name)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBuiltinFailing(t *testing.T) {
	r := runCmd("testdata/builtin/fail.json")
	if r.code != 1 || lastLine(t, r.stdout) != "0 passed, 16 failed" {
		t.Fatalf("exit %d, stdout:\n%s", r.code, r.stdout)
	}
	checkFailures(t, r.stdout, map[string][]string{
		"fail/addn-wrong-value":            {"output 0 (sum): 2 of 4 elements out of tolerance; worst at [1 0] (flat 2): got 4, want 4.5, |diff| 0.5 > tolerance 5.5e-06 (atol 1e-06 + rtol 1e-06 * |want|)"},
		"fail/zero-tolerance":              {"worst at [] (scalar): got 0.30000000000000004, want 0.3", "tolerance 0"},
		"fail/identity-wrong-dtype":        {"output 0 (output): dtype: got float64, want float32"},
		"fail/identity-wrong-shape":        {"shape: got [2 2], want [4]"},
		"fail/shape-only-wrong-shape":      {"shape: got [], want [1]"},
		"fail/identity-nan-vs-number":      {"1 of 2 elements", "worst at [1]: got NaN, want 0"},
		"fail/identity-number-vs-nan":      {"worst at [1]: got 2, want NaN"},
		"fail/identity-inf-sign":           {"got +Inf, want -Inf"},
		"fail/identity-int32":              {"1 of 3 elements differ", "worst at [2]: got 3, want 4"},
		"fail/identity-int64-beyond-2^53":  {"got 9007199254740993, want 9007199254740992"},
		"fail/identity-bool":               {"first at [1]: got true, want false"},
		"fail/addn-grad-wrong":             {"grad wrt input 1 (inputs[1]): 1 of 2 elements", "got 1, want 2"},
		"fail/addn-not-refused":            {`must refuse these inputs/attrs (error containing "must fail"), but it returned 1 output [float64 [2]]`},
		"fail/unregistered-op":             {`op "NoSuchOp" is not registered`},
		"fail/identity-two-outputs-listed": {"the op has 1 output (output), the case lists 2"},
		"fail/addn-forward-error":          {"the op failed: AddN: input 1 has dtype float32, expected float64"},
	})
}

func TestTestOpsPassing(t *testing.T) {
	r := runCmd("testdata/testops/pass.json")
	if r.code != 0 || r.stdout != "2 warning(s); run with -v to see them\n11 passed, 0 failed\n" {
		t.Fatalf("exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = runCmd("-v", "testdata/testops/pass.json")
	for _, want := range []string{
		`WARN testdata/testops/pass.json #9 "refuse/error/message-differs" (opcheck.Refuse): error message "opcheck.Refuse: input must be non-negative, got -1" does not contain "a message tapegrad does not use"`,
		`WARN testdata/testops/pass.json #5 "pair/f64/int-upstream-ignored" (opcheck.Pair): grad: upstream[2] ignored: output 2 is int64`,
		`ok   testdata/testops/pass.json #4 "pair/f32/both-upstreams-alpha3" (opcheck.Pair)`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-v output lacks %q:\n%s", want, r.stdout)
		}
	}
	if lastLine(t, r.stdout) != "11 passed, 0 failed" || strings.Contains(r.stdout, "warning(s)") {
		t.Errorf("-v output:\n%s", r.stdout)
	}
}

func TestTestOpsFailing(t *testing.T) {
	r := runCmd("-v", "testdata/testops/fail.json")
	if r.code != 1 || lastLine(t, r.stdout) != "0 passed, 9 failed" {
		t.Fatalf("exit %d, stdout:\n%s", r.code, r.stdout)
	}
	checkFailures(t, r.stdout, map[string][]string{
		"scale/attrs-wrong-type":      {"attrs: opcheck.Scale: attr alpha: want a number"},
		"scale/attrs-list-for-number": {"attrs: opcheck.Scale: attr alpha"},
		"scale/attrs-unknown-name":    {`attrs: opcheck.Scale: unknown attr "beta"`},
		"pair/wrong-int-output":       {"output 2 (n): 1 of 1 elements differ", "got 2, want 3"},
		"pair/wrong-grad":             {"grad wrt input 0 (x): 2 of 2 elements out of tolerance", "got 2, want 1"},
		"panic/forward":               {"the op failed: opcheck.Panic: kernel panicked: opcheck.Panic: boom"},
		"panic/error-case":            {"must refuse these inputs/attrs with an error, but it broke (panic or internal error)"},
		"gradpanic/grad":              {"grad: opcheck.GradPanic (backward):", "gradient function panicked: opcheck.GradPanic: gradient boom"},
		"refuse/unexpected-error":     {"the op failed: opcheck.Refuse: input must be non-negative"},
	})
}

func TestMalformedFiles(t *testing.T) {
	r := runCmd("testdata/malformed")
	if r.code != 1 || lastLine(t, r.stdout) != "1 passed, 29 failed" {
		t.Fatalf("exit %d, stdout:\n%s", r.code, r.stdout)
	}
	for _, want := range []string{
		"FAIL testdata/malformed/bad_json.json: invalid JSON at line 3, column 60: invalid character ']' looking for beginning of value\n",
		"FAIL testdata/malformed/cases_not_list.json: \"cases\" must be a list, got an object\n",
		"FAIL testdata/malformed/empty_file.json: the file is empty (want an object {\"cases\": [...]})\n",
		"FAIL testdata/malformed/no_cases.json: no \"cases\" list",
		"FAIL testdata/malformed/top_level_list.json: want an object {\"cases\": [...]}, got array\n",
		"1 warning(s)",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	const m = "malformed case: "
	checkFailures(t, r.stdout, map[string][]string{
		"bad/missing-op":                  {m + `missing "op"`},
		"bad/op-not-a-string":             {m + "op must be a string, got the number 42"},
		"bad/data-length":                 {m + `inputs[0] "input": data has 5 elements but shape [2 3] needs 6`},
		"bad/scalar-data-length":          {m + "inputs[0]: data has 0 elements but shape [] needs 1"},
		"bad/unknown-dtype":               {m + `inputs[0]: dtype "float16" is not one of float32, float64, int32, int64, bool`},
		"bad/input-data-null":             {m + "inputs[0]: data is null; only outputs and expected gradients may omit their data"},
		"bad/missing-data":                {m + `inputs[0]: missing "data"`},
		"bad/non-finite-spelling":         {m + `inputs[0]: data[1]: string "Infinity?" is not a number`},
		"bad/float32-overflow":            {m + "inputs[0]: data[0]: 1e39 is out of the float32 range"},
		"bad/int32-overflow":              {m + "inputs[0]: data[0]: 3000000000 overflows int32"},
		"bad/int-fraction":                {m + "inputs[0]: data[0]: want an integer, got 1.5"},
		"bad/bool-as-number":              {m + "inputs[0]: data[0]: want true or false, got the number 1"},
		"bad/negative-dim":                {m + "inputs[0]: shape [-1]: dimension 0 is not an integer >= 0"},
		"bad/shape-not-list":              {m + "inputs[0]: shape must be a list of integers, got the number 3"},
		"bad/attrs-not-an-object":         {m + "attrs must be an object, got a list"},
		"bad/attr-on-op-without-attrs":    {`attrs: Identity: unknown attr "alpha" (the op has no attrs)`},
		"bad/rtol-negative":               {m + "rtol must be a finite number >= 0, got -1"},
		"bad/missing-outputs":             {m + `missing "outputs" (or "error" for a case the op must refuse)`},
		"bad/error-with-outputs":          {m + `an error case must not list "outputs"`},
		"bad/grad-upstream-count":         {m + "grad.upstream has 2 entries for 1 output"},
		"bad/grad-expected-for-int-input": {m + "grad.expected[0] must be null: input 0 is int32"},
		"bad/grad-expected-shape":         {m + "grad.expected[0] is float64 [3] but input 0 is float64 [2]"},
		"bad/upstream-data-null":          {m + "grad.upstream[0]: data is null"},
		"#23":                             {m + "a case must be a JSON object, got the number 42"},
	})
	// the valid case after the malformed ones still ran
	r = runCmd("-v", "testdata/malformed/cases.json")
	for _, want := range []string{
		`ok   testdata/malformed/cases.json #24 "good/still-runs" (Identity)`,
		`WARN testdata/malformed/cases.json #24 "good/still-runs" (Identity): unknown key "comment" ignored`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("-v output lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestPathsAndFilter(t *testing.T) {
	r := runCmd("testdata/builtin")
	if r.code != 1 || lastLine(t, r.stdout) != "20 passed, 16 failed" {
		t.Fatalf("directory: exit %d, last line %q", r.code, lastLine(t, r.stdout))
	}
	r = runCmd("testdata/builtin/pass.json", "testdata/builtin/../builtin/pass.json", "testdata/builtin")
	if lastLine(t, r.stdout) != "20 passed, 16 failed" {
		t.Errorf("files listed twice: last line %q", lastLine(t, r.stdout))
	}
	r = runCmd("-run", "^identity/int", "testdata/builtin")
	if r.code != 0 || r.stdout != "3 passed, 0 failed\n" {
		t.Errorf("-run: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = runCmd("-threads", "1", "-run", "fail/addn", "testdata/builtin")
	if r.code != 1 || lastLine(t, r.stdout) != "0 passed, 4 failed" {
		t.Errorf("-run failing: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("not a case"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "no PATH given"},
		{[]string{"-v"}, 2, "no PATH given"},
		{[]string{"-nosuchflag", "testdata"}, 2, "flag provided but not defined"},
		{[]string{"testdata/does-not-exist.json"}, 2, "no such file or directory"},
		{[]string{empty}, 2, "no *.json case files"},
		{[]string{"-run", "(", "testdata"}, 2, "bad -run pattern"},
		{[]string{"-threads", "-1", "testdata"}, 2, "-threads must be >= 0"},
		{[]string{"-h"}, 0, "usage: opcheck"},
	} {
		r := runCmd(tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || r.stdout != "" {
			t.Errorf("%q: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, r.code, tc.code, r.stdout, r.stderr, tc.msg)
		}
	}
}

// TestGoldenSamples runs the repository's copy of the shared golden cases
// (the five files of the public sample; the project's generated families
// run in make conformance):
// every case must be well-formed and run without a runner problem; whether
// it passes depends on which op families are registered.
func TestGoldenSamples(t *testing.T) {
	var files []string
	for _, f := range []string{"conv2d", "depthwise_conv2d", "fake_quant", "fractional_avg_pool", "fused_batch_norm"} {
		files = append(files, "../../testdata/golden/"+f+".json")
	}
	r := runCmd(files...)
	m := regexp.MustCompile(`^(\d+) passed, (\d+) failed$`).FindStringSubmatch(lastLine(t, r.stdout))
	if m == nil {
		t.Fatalf("last line %q", lastLine(t, r.stdout))
	}
	passed, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	if passed+failed != 52 {
		t.Errorf("%d cases, want the sample's 52", passed+failed)
	}
	if (failed > 0) != (r.code == 1) {
		t.Errorf("exit %d with %d failures", r.code, failed)
	}
	for _, bad := range []string{"malformed case", "panic:", "invalid JSON"} {
		if strings.Contains(r.stdout, bad) {
			t.Errorf("the golden samples report %q:\n%s", bad, r.stdout)
		}
	}
}
