package nn

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/safetensors"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn/data"
)

// A data loader's position is saved and restored with the model by one
// SaveCheckpoint / LoadCheckpoint call.
var _ CheckpointState = (*data.Loader)(nil)

// csLoader returns a shuffling loader over 10 examples in batches of bs.
func csLoader(t *testing.T, bs int, name string) *data.Loader {
	t.Helper()
	v := make([]float64, 10)
	for i := range v {
		v[i] = float64(i)
	}
	x, _ := tensorx.New([]int{10, 1}, v)
	l, err := data.NewLoader(x, nil, data.LoaderOptions{BatchSize: bs, Shuffle: true, Seed: 5, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// csNext returns the rows of the loader's next batch (false at an epoch's
// end).
func csNext(l *data.Loader) (string, bool) {
	if !l.Next() {
		return "end", false
	}
	return fmt.Sprint(l.Batch().Indices), true
}

func TestCheckpointLoaderState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	l := csLoader(t, 3, "")
	for range 6 { // into the second epoch: 4 batches, the end, 1 batch
		csNext(l)
	}
	m := NewDense(2, 2, DenseOpts{Rand: rnd(1)})
	if err := SaveCheckpoint(path, m, nil, map[string]string{"step": "5"}, l); err != nil {
		t.Fatal(err)
	}
	var want []string
	for range 6 {
		s, _ := csNext(l)
		want = append(want, s)
	}

	// A fresh loader over the same data resumes where l was.
	l2 := csLoader(t, 3, "")
	m2 := NewDense(2, 2, DenseOpts{Rand: rnd(2)})
	meta, err := LoadCheckpoint(path, m2, nil, l2)
	if err != nil {
		t.Fatal(err)
	}
	if len(meta) != 1 || meta["step"] != "5" {
		t.Fatalf("user metadata %v: the state entries must not be in it", meta)
	}
	var got []string
	for range 6 {
		s, _ := csNext(l2)
		got = append(got, s)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("resumed batches %v, want %v", got, want)
	}
	if !slices.Equal(f32(t, m2.Weight.Data), f32(t, m.Weight.Data)) {
		t.Fatal("weights not restored")
	}
	_, md, err := safetensors.ReadFile(path)
	if err != nil || md["tapegrad.state/loader/epoch"] != "1" || md["tapegrad.state/loader/pos"] != "3" {
		t.Fatalf("stored entries %v %v", md, err)
	}
	// Without the state argument the checkpoint loads too (inference).
	if _, err := LoadCheckpoint(path, m2, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointLoaderStateErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	m := NewDense(2, 2, DenseOpts{Rand: rnd(1)})
	l := csLoader(t, 3, "train")
	csNext(l)
	if err := SaveCheckpoint(path, m, nil, nil, l); err != nil {
		t.Fatal(err)
	}
	before := f32(t, m.Weight.Data)
	m.Weight.Data.Float32s()[0] += 1 // the checkpoint must not overwrite on error
	changed := f32(t, m.Weight.Data)
	for _, c := range []struct {
		states []CheckpointState
		frag   string
	}{
		{[]CheckpointState{csLoader(t, 3, "")}, `holds no state "loader"`},
		{[]CheckpointState{csLoader(t, 4, "train")}, "batches of 3; this one has 10 in batches of 4"},
		{[]CheckpointState{csLoader(t, 3, "train"), csLoader(t, 3, "train")}, `two states are named "train"`},
		{[]CheckpointState{csLoader(t, 3, "a/b")}, "invalid name"},
		{[]CheckpointState{nil}, "state 0 is nil"},
	} {
		_, err := LoadCheckpoint(path, m, nil, c.states...)
		if err == nil || !strings.Contains(err.Error(), c.frag) {
			t.Fatalf("%s: err = %v", c.frag, err)
		}
		if !slices.Equal(f32(t, m.Weight.Data), changed) {
			t.Fatalf("%s: the model was changed by a failed load", c.frag)
		}
	}
	if slices.Equal(before, changed) {
		t.Fatal("test setup: the weight did not change")
	}
	err := SaveCheckpoint(path, m, nil, nil, csLoader(t, 3, "x"), csLoader(t, 3, "x"))
	if err == nil || !strings.Contains(err.Error(), `two states are named "x"`) {
		t.Fatalf("duplicate names on save: %v", err)
	}
}

// f32 returns a copy of a float32 tensor's elements.
func f32(t *testing.T, d *tensor.Dense) []float32 {
	t.Helper()
	s, err := tensorx.Slice[float32](d)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(s)
}
