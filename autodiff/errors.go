package autodiff

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/tapegrad/tapegrad/registry"
)

// The sentinel errors of the registry, re-exported for convenience; every
// OpError wraps one of them.
var (
	ErrInvalidArgument = registry.ErrInvalidArgument
	ErrShape           = registry.ErrShape
	ErrDtype           = registry.ErrDtype
	ErrUnimplemented   = registry.ErrUnimplemented
	ErrNotFound        = registry.ErrNotFound
	ErrNoGradient      = registry.ErrNoGradient
	ErrInternal        = registry.ErrInternal
	// ErrInvalidValue: a zero Value, a Value of another tape, or a Value used
	// after its tape was Reset.
	ErrInvalidValue = errors.New("invalid value")
	// ErrModified: a parameter was changed after it was used on a tape.
	ErrModified = errors.New("parameter modified after use")
)

// OpError is the error type of the tape: the first error of a tape wins and
// is reported by every later call that returns an error.
type OpError struct {
	// Op is the op type, or "" for errors of the tape itself.
	Op string
	// Input is the index of the input concerned, or -1.
	Input int
	// Phase is "forward", "backward" or "tape"; for an error of anomaly
	// detection in a backward pass, "gradient of <op>" (see DetectAnomaly).
	Phase string
	// Loc is the file:line of the user code that applied the op.
	Loc string
	// Err is the underlying error; it wraps one of the sentinel errors.
	Err error
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString("tapegrad: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		if e.Input >= 0 {
			fmt.Fprintf(&b, " input %d", e.Input)
		}
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "(%s", e.Phase)
	if e.Loc != "" {
		fmt.Fprintf(&b, " at %s", e.Loc)
	}
	b.WriteString("): ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// internalPrefixes are the packages whose frames are skipped when finding
// the user's file:line for an error.
var internalPrefixes = []string{
	"github.com/tapegrad/tapegrad/autodiff.",
	"github.com/tapegrad/tapegrad/autodiff/gradcheck.",
	"github.com/tapegrad/tapegrad/registry.",
	"github.com/tapegrad/tapegrad/forward.",
	"github.com/tapegrad/tapegrad/backward.",
	"github.com/tapegrad/tapegrad/nn.",
	"github.com/tapegrad/tapegrad/optim.",
	"runtime.",
}

// callerLoc returns the file:line of the first frame outside tapegrad's
// library packages.
func callerLoc() string {
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	return locOf(pcs[:n])
}

// locOf returns the file:line of the first frame of the stack pcs (from
// runtime.Callers; zero entries end it) outside tapegrad's library
// packages, or "".
func locOf(pcs []uintptr) string {
	for i, pc := range pcs {
		if pc == 0 {
			pcs = pcs[:i]
			break
		}
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		internal := false
		for _, p := range internalPrefixes {
			if strings.HasPrefix(f.Function, p) {
				internal = true
				break
			}
		}
		if !internal && f.File != "" {
			file := f.File
			if i := strings.LastIndexByte(file, '/'); i >= 0 {
				if j := strings.LastIndexByte(file[:i], '/'); j >= 0 {
					file = file[j+1:]
				}
			}
			return fmt.Sprintf("%s:%d", file, f.Line)
		}
		if !more {
			return ""
		}
	}
}
