package registry

import (
	"errors"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// TestSentinelKinds: shape and dtype errors of the internal tensor helpers
// match this package's sentinels and the other way round, and the kinds
// stay apart.
func TestSentinelKinds(t *testing.T) {
	_, shapeErr := tensorx.Numel([]int{-1})
	_, dtypeErr := tensorx.Zeros(tensor.Complex128, []int{1})
	if !errors.Is(shapeErr, ErrShape) || errors.Is(shapeErr, ErrDtype) {
		t.Errorf("tensorx shape error %v: Is(ErrShape) false or Is(ErrDtype) true", shapeErr)
	}
	if !errors.Is(dtypeErr, ErrDtype) || errors.Is(dtypeErr, ErrShape) {
		t.Errorf("tensorx dtype error %v: Is(ErrDtype) false or Is(ErrShape) true", dtypeErr)
	}
	own := Errorf(ErrShape, "Op: bad shape")
	if !errors.Is(own, tensorx.ErrShape) || errors.Is(own, tensorx.ErrDtype) || errors.Is(own, ErrInvalidArgument) {
		t.Errorf("registry shape error: kinds do not match tensorx's")
	}
	if _, err := zeros(tensor.Complex128, nil); !errors.Is(err, tensorx.ErrDtype) {
		t.Errorf("registry dtype error %v does not match tensorx.ErrDtype", err)
	}
}
