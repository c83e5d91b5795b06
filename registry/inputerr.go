package registry

import (
	"errors"
	"fmt"
)

// inputError is an error about one input of an op (InputErrorf).
type inputError struct {
	kindError
	input int
}

// InputErrorf is Errorf for an error about input number input of the op (in
// the op's declared order, counting from 0): a wrong dtype, rank or shape.
// Callers that report op errors (the tape's autodiff.OpError) take the
// input's index from it (see ErrorInput).
func InputErrorf(kind error, input int, format string, args ...any) error {
	return &inputError{kindError: kindError{kind: kind, msg: fmt.Sprintf(format, args...)}, input: input}
}

// ErrorInput returns the index of the input that err (made by InputErrorf,
// possibly wrapped) is about, or -1 if err names no input.
func ErrorInput(err error) int {
	var ie *inputError
	if errors.As(err, &ie) {
		return ie.input
	}
	return -1
}

// NamedInputErrorf is InputErrorf for the input of the op named op whose
// declared name (OpDef.Inputs, TensorFlow's argument name) is name. If op
// is not registered or has no such input, the error names no input.
func NamedInputErrorf(kind error, op, name string, format string, args ...any) error {
	return InputErrorf(kind, inputIndex(op, name), format, args...)
}

// inputIndex returns the index of op's input called name, or -1.
func inputIndex(op, name string) int {
	d, err := Lookup(op)
	if err != nil {
		return -1
	}
	for i, a := range d.Inputs {
		if a.Name == name {
			return i
		}
	}
	return -1
}
