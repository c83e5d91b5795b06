// Command opcheck runs golden cases (testdata/golden/FORMAT.md) against
// tapegrad's op registry.
//
// Usage:
//
//	go run ./cmd/opcheck [-v] [-run REGEXP] [-threads N] PATH...
//
// Each PATH is a case file or a directory searched recursively for *.json
// case files. opcheck prints every failing case with its problems (for a
// value mismatch: the number of bad elements and the worst one, with its
// index, got, want and tolerance), then a final line exactly
// "N passed, N failed". A case fails when its op is not registered, when
// the op's outputs or gradients differ from the case, when an error case is
// not refused cleanly, or when the case is malformed; an unreadable or
// invalid JSON file counts as one failure. With -v passing cases and
// warnings (an error message without the case's substring, ignored keys)
// are printed too; without it only the number of warnings is.
//
// Tolerances: |got-want| <= atol + rtol*|want| elementwise, with the case's
// rtol/atol; where a case gives none, rtol = atol = 1e-6 for float32 and
// 1e-12 for float64. NaN matches only NaN, infinities must match exactly,
// integers and bools compare exactly.
//
// Exit status: 0 if every case passed, 1 if any failed, 2 for a usage
// error (bad flag, no PATH, a PATH that does not exist or holds no *.json
// file).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/tapegrad/tapegrad/autodiff/golden"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: opcheck [-v] [-run REGEXP] [-threads N] PATH...\n" +
	"Runs the golden cases in each PATH (a case file, or a directory searched for *.json).\n"

// run is the whole command: it parses args, runs the cases, writes the
// report to stdout and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("opcheck", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprint(stderr, usage)
		fset.PrintDefaults()
	}
	verbose := fset.Bool("v", false, "print passing cases and warnings too")
	runPat := fset.String("run", "", "run only the cases whose name matches this regular expression")
	threads := fset.Int("threads", 0, "kernel threads per op (0: GOMAXPROCS)")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fset.NArg() == 0 {
		fmt.Fprint(stderr, "opcheck: no PATH given\n"+usage)
		return 2
	}
	if *threads < 0 {
		fmt.Fprintf(stderr, "opcheck: -threads must be >= 0, got %d\n", *threads)
		return 2
	}
	var filter *regexp.Regexp
	if *runPat != "" {
		re, err := regexp.Compile(*runPat)
		if err != nil {
			fmt.Fprintf(stderr, "opcheck: bad -run pattern: %v\n", err)
			return 2
		}
		filter = re
	}
	files, err := caseFiles(fset.Args())
	if err != nil {
		fmt.Fprintf(stderr, "opcheck: %v\n", err)
		return 2
	}

	opts := golden.Options{Threads: *threads}
	passed, failed, warnings := 0, 0, 0
	for _, f := range files {
		cases, err := golden.ReadFile(f)
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "FAIL %v\n", err)
			continue
		}
		for _, c := range cases {
			if filter != nil && !filter.MatchString(c.Name) {
				continue
			}
			res := golden.Run(c, opts)
			if res.Passed() {
				passed++
				if *verbose {
					fmt.Fprintf(stdout, "ok   %s\n", c)
				}
			} else {
				failed++
				fmt.Fprintf(stdout, "FAIL %s\n", c)
				for _, m := range res.Failures {
					fmt.Fprintf(stdout, "     %s\n", m)
				}
				if *verbose && res.Stack != "" {
					fmt.Fprintf(stdout, "     stack:\n%s", indent(res.Stack, "       "))
				}
			}
			warnings += len(res.Warnings)
			if *verbose {
				for _, w := range res.Warnings {
					fmt.Fprintf(stdout, "WARN %s: %s\n", c, w)
				}
			}
		}
	}
	if warnings > 0 && !*verbose {
		fmt.Fprintf(stdout, "%d warning(s); run with -v to see them\n", warnings)
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// caseFiles expands the PATH arguments: files as given, directories to
// their *.json files (recursively, in lexical order). Each file is listed
// once.
func caseFiles(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			add(p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".json") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no *.json case files in this directory", p)
		}
		sort.Strings(found)
		for _, f := range found {
			add(f)
		}
	}
	return out, nil
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
