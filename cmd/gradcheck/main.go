// Command gradcheck sweeps tapegrad's registered ops with numerical
// gradient checks (first and second order, package autodiff/gradcheck),
// over the configurations produced by every op's Samples generator.
//
// Usage:
//
//	go run ./cmd/gradcheck [-quick] [-op NAME[,NAME...]] [-seed N] [-v]
//
// It prints one line per op (configurations passed/total, and the first-
// and second-order counts), the first failure of a failing op, and a final
// line "N passed, N failed" counting ops. The exit status is 1 if any op
// failed, 2 on bad usage.
//
// An op without a Samples generator is listed as "no samples" and fails,
// unless it is not differentiable (registry.GradZero or GradNone), which
// is listed and passes. An op without a gradient state fails.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tapegrad/tapegrad/autodiff/gradcheck"
	"github.com/tapegrad/tapegrad/registry"

	_ "github.com/tapegrad/tapegrad/autodiff" // registers every op and gradient
)

// quickSamples is the number of configurations per op under -quick.
const quickSamples = 3

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command, with its exit status as result.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gradcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, fmt.Sprintf("check at most %d configurations per op (for CI)", quickSamples))
	only := fs.String("op", "", "check only this op (a comma-separated list of op names)")
	seed := fs.Int64("seed", 1, "seed of the sample generators, upstream gradients and projections")
	verbose := fs.Bool("v", false, "print every configuration")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gradcheck [-quick] [-op NAME[,NAME...]] [-seed N] [-v]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	var names []string
	if *only != "" {
		for _, n := range strings.Split(*only, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	} else {
		for _, d := range registry.List() {
			names = append(names, d.Name)
		}
	}
	max := 0
	if *quick {
		max = quickSamples
	}
	width := 0
	for _, n := range names {
		width = maxInt(width, len(n))
	}
	passed, failed := 0, 0
	for _, n := range names {
		r := sweepOp(n, *seed, max)
		status := "ok  "
		if !r.ok {
			status = "FAIL"
			failed++
		} else {
			passed++
		}
		fmt.Fprintf(stdout, "%s %-*s  %s\n", status, width, n, r.summary)
		if *verbose {
			for _, l := range r.lines {
				fmt.Fprintf(stdout, "       %s\n", l)
			}
		}
		if r.firstErr != nil {
			fmt.Fprintf(stdout, "       %v\n", r.firstErr)
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// opResult is the outcome of one op.
type opResult struct {
	ok       bool
	summary  string   // the rest of the op's line
	lines    []string // one per configuration (for -v)
	firstErr error    // the first failure, printed under the op's line
}

// sweepOp checks every (or, with max > 0, at most max) configuration of
// the op named name.
func sweepOp(name string, seed int64, max int) opResult {
	def, err := registry.Lookup(name)
	if err != nil {
		return opResult{summary: "not registered", firstErr: err}
	}
	switch def.GradKind() {
	case registry.GradUnset:
		return opResult{summary: "no gradient state (see registry.Check)"}
	case registry.GradZero, registry.GradNone:
		what := "not differentiable"
		if def.GradKind() == registry.GradNone {
			what = "no gradient: " + def.NoGradientReason()
		}
		if def.Samples == nil {
			return opResult{ok: true, summary: "no samples (" + what + ")"}
		}
		return opResult{ok: true, summary: what + " (gradient not checked)"}
	}
	if def.Samples == nil {
		return opResult{summary: "no samples (the op is differentiable: give it a Samples generator)"}
	}
	start := time.Now()
	samples, err := gradcheck.OpSamples(def, seed, max)
	if err != nil {
		return opResult{summary: "sample generator failed", firstErr: err}
	}
	if len(samples) == 0 {
		return opResult{summary: "no samples (the generator returned none)"}
	}
	r := opResult{ok: true}
	var cfgOK, firstOK, secondOK, secondRun, secondNA int
	opts := gradcheck.Options{Seed: seed}
	for _, s := range samples {
		o := opts.ForSample(s)
		f := gradcheck.Op(def.Name, s.Attrs)
		line := fmt.Sprintf("%-24s first ", quote(s.Name))
		e1 := gradcheck.Check(f, s.Inputs, o)
		var e2 error
		switch {
		case e1 != nil:
			line += "FAIL  second not run"
			r.note(s, 1, e1)
		case s.NoSecondOrder != "":
			firstOK++
			secondNA++
			line += "ok    second n/a (" + s.NoSecondOrder + ")"
		default:
			firstOK++
			secondRun++
			e2 = gradcheck.CheckSecondOrder(f, s.Inputs, o)
			if e2 != nil {
				line += "ok    second FAIL"
				r.note(s, 2, e2)
			} else {
				secondOK++
				line += "ok    second ok"
			}
		}
		if e1 == nil && e2 == nil {
			cfgOK++
		}
		if err := e1; err == nil {
			err = e2
			if err != nil {
				line += ": " + err.Error()
			}
		} else {
			line += ": " + err.Error()
		}
		r.lines = append(r.lines, line)
	}
	r.ok = cfgOK == len(samples)
	r.summary = fmt.Sprintf("%d/%d configs  first %d/%d  second %d/%d", cfgOK, len(samples), firstOK, len(samples), secondOK, secondRun)
	if secondNA > 0 {
		r.summary += fmt.Sprintf(" (%d n/a)", secondNA)
	}
	r.summary += fmt.Sprintf("  %.1fs", time.Since(start).Seconds())
	return r
}

// note records the op's first failure.
func (r *opResult) note(s registry.Sample, order int, err error) {
	if r.firstErr != nil {
		return
	}
	kind := "first order"
	if order == 2 {
		kind = "second order"
	}
	var fl *gradcheck.Failure
	if !errors.As(err, &fl) {
		kind += " (error)"
	}
	r.firstErr = fmt.Errorf("sample %s, %s: %w", quote(s.Name), kind, err)
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
