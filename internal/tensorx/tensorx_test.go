package tensorx

import (
	"errors"
	"testing"
)

func TestAppendInts(t *testing.T) {
	i32, _ := New([]int{3}, []int32{4, -1, 7})
	i64, _ := New([]int{2, 1}, []int64{1 << 40, -2})
	var buf [4]int
	got, err := AppendInts(buf[:1], i32)
	if err != nil || !SameShape(got, []int{0, 4, -1, 7}) || &got[0] != &buf[0] {
		t.Fatalf("int32: %v, %v (in the caller's buffer: %v)", got, err, &got[0] == &buf[0])
	}
	if got, err := AppendInts(buf[:0], i64); err != nil || !SameShape(got, []int{1 << 40, -2}) {
		t.Fatalf("int64: %v, %v", got, err)
	}
	if got, err := Ints(i32); err != nil || !SameShape(got, []int{4, -1, 7}) {
		t.Fatalf("Ints: %v, %v", got, err)
	}
	f, _ := New([]int{1}, []float32{1})
	if _, err := AppendInts(nil, f); !errors.Is(err, ErrDtype) {
		t.Fatalf("float32 tensor: %v", err)
	}
}

// TestShapesDoNotEscape checks that Numel and Zeros leave the caller's
// shape on its stack (their error messages format a copy).
func TestShapesDoNotEscape(t *testing.T) {
	rows, cols := 2, 3
	n := testing.AllocsPerRun(20, func() {
		shape := [2]int{rows, cols}
		if _, err := Numel(shape[:]); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Numel: %v allocations", n)
	}
	bad := []int{2, -1}
	if _, err := Numel(bad); !errors.Is(err, ErrShape) {
		t.Fatalf("negative dimension: %v", err)
	}
}
