package autodiff

import (
	"errors"
	"testing"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

func TestSmokeAddN(t *testing.T) {
	tp := NewTape()
	d, _ := tensorx.New([]int{2}, []float64{1, 2})
	x := tp.Watch(d)
	y := tp.Apply("AddN", nil, x, x, tp.Apply("Identity", nil, x)[0])[0]
	g, err := tp.Grad([]Value{y}, []Value{x}, nil, GradOpts{CreateGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := g[0].Float64s()
	if err != nil || s[0] != 3 || s[1] != 3 {
		t.Fatalf("grad = %v, %v; want [3 3]", s, err)
	}
	tp.Reset()
	if _, err := y.Float64s(); !errors.Is(err, ErrInvalidValue) {
		t.Fatalf("use after reset: err = %v", err)
	}
}
