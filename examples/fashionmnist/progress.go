package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports the training progress within an epoch. On a terminal
// it is a live bar on stderr, redrawn in place; when stdout or stderr is
// not a terminal (a CI log, `| tee`, a file), a redrawn bar would write
// hundreds of carriage-return updates into the log, so it is a plain line
// on stdout every c.logEvery instead (and the epoch's summary line).
type progress struct {
	bar   *progressbar.ProgressBar
	w     io.Writer // plain lines, when there is no bar
	every time.Duration
	last  time.Time
	epoch string // "epoch 3/20"
	total int    // steps in the epoch
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress starts the report of one epoch of total steps, or returns nil
// if c asks for none.
func newProgress(c config, stdout, stderr io.Writer, epoch, total int) *progress {
	if !c.progress {
		return nil
	}
	p := &progress{epoch: fmt.Sprintf("epoch %d/%d", epoch+1, c.epochs), total: total, every: c.logEvery, last: time.Now()}
	if isTerminal(stdout) && isTerminal(stderr) {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(p.epoch),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		return p
	}
	p.w = stdout
	return p
}

// step reports that step steps of the epoch are done, with the running
// loss, accuracy and examples per second.
func (p *progress) step(step int, loss, acc, exPerSec float64) {
	if p == nil {
		return
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%s loss %.4f acc %.4f %5.0f ex/s", p.epoch, loss, acc, exPerSec))
		p.bar.Add(1)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= p.every && step < p.total {
		p.last = now
		fmt.Fprintf(p.w, "%s: step %d/%d loss %.4f acc %.4f %.0f examples/s\n", p.epoch, step, p.total, loss, acc, exPerSec)
	}
}

// finish ends the epoch's report (the caller prints the summary line).
func (p *progress) finish() {
	if p != nil && p.bar != nil {
		p.bar.Finish()
	}
}
