package registry

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by kernels, the registry and the tape
// wrap one of them, so callers can test with errors.Is.
//
// ErrShape and ErrDtype are also what the module's internal tensor helpers
// (which sit below this package and cannot import it) report, and the
// internal test helpers recognise ErrInternal. They share these classes
// without an import by naming them: each of these sentinels has an
// ErrorKind method ("shape", "dtype", "internal"), and a sentinel's Is
// method reports a match with any error of the same kind. So errors.Is(err, ErrShape)
// holds for a shape error from those helpers, and errors.Is(err, h) for
// their sentinel h holds for an error wrapping ErrShape.
var (
	// ErrInvalidArgument: a bad attribute or input value (TF's InvalidArgument).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrShape: an input of the wrong rank or shape.
	ErrShape error = &kindSentinel{kind: "shape", msg: "shape error"}
	// ErrDtype: an input of the wrong dtype, or a dtype the op has no kernel for.
	ErrDtype error = &kindSentinel{kind: "dtype", msg: "dtype error"}
	// ErrUnimplemented: a valid request that tapegrad does not implement.
	ErrUnimplemented = errors.New("unimplemented")
	// ErrNotFound: an op name that is not registered.
	ErrNotFound = errors.New("op not registered")
	// ErrNoGradient: a gradient was needed through an op that has none.
	ErrNoGradient = errors.New("no gradient")
	// ErrInternal: a kernel or gradient function panicked, or broke its
	// contract (wrong number of outputs, nil output). Always a bug.
	ErrInternal error = &kindSentinel{kind: "internal", msg: "internal error"}
)

// kindSentinel is a sentinel error with a kind shared across packages
// (see ErrShape).
type kindSentinel struct{ kind, msg string }

func (e *kindSentinel) Error() string { return e.msg }

// ErrorKind names the class of the error: "shape", "dtype" or "internal".
func (e *kindSentinel) ErrorKind() string { return e.kind }

// Is reports whether target is a sentinel of the same kind.
func (e *kindSentinel) Is(target error) bool {
	k, ok := target.(interface{ ErrorKind() string })
	return ok && k.ErrorKind() == e.kind
}

type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

// Errorf formats an error message that wraps kind (one of the sentinels
// above), e.g. Errorf(ErrShape, "Conv2D: input must be 4-D, got shape %v", s).
func Errorf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}
