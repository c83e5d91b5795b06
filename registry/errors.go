package registry

import (
	"errors"
	"fmt"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// Sentinel errors. Errors returned by kernels, the registry and the tape
// wrap one of them, so callers can test with errors.Is.
var (
	// ErrInvalidArgument: a bad attribute or input value (TF's InvalidArgument).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrShape: an input of the wrong rank or shape.
	ErrShape = tensorx.ErrShape
	// ErrDtype: an input of the wrong dtype, or a dtype the op has no kernel for.
	ErrDtype = tensorx.ErrDtype
	// ErrUnimplemented: a valid request that tapegrad does not implement.
	ErrUnimplemented = errors.New("unimplemented")
	// ErrNotFound: an op name that is not registered.
	ErrNotFound = errors.New("op not registered")
	// ErrNoGradient: a gradient was needed through an op that has none.
	ErrNoGradient = errors.New("no gradient")
	// ErrInternal: a kernel or gradient function panicked, or broke its
	// contract (wrong number of outputs, nil output). Always a bug.
	ErrInternal = errors.New("internal error")
)

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
