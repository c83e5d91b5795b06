package safetensors

import (
	"testing"
)

// FuzzRead feeds arbitrary bytes to the reader: it must return an error or
// tensors, never panic; whatever it accepts must survive a write and a
// second read unchanged. The committed corpus (testdata/fuzz/FuzzRead)
// holds valid files and near misses of every validation rule.
func FuzzRead(f *testing.F) {
	f.Add(file(`{}      `, nil))
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32bytes(1, 2)))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, md, err := Unmarshal(b)
		if err != nil {
			return
		}
		again, err := Marshal(ts, md)
		if err != nil {
			t.Fatalf("accepted input cannot be written back: %v", err)
		}
		ts2, md2, err := Unmarshal(again)
		if err != nil {
			t.Fatalf("rewritten input rejected: %v", err)
		}
		if len(ts2) != len(ts) || len(md2) != len(md) || (md == nil) != (md2 == nil) {
			t.Fatalf("round trip changed the content: %d/%d tensors, metadata %v/%v", len(ts), len(ts2), md, md2)
		}
		for name, x := range ts {
			if y, ok := ts2[name]; !ok || !sameBits(x, y) {
				t.Fatalf("tensor %q changed in the round trip", name)
			}
		}
		for k, v := range md {
			if md2[k] != v {
				t.Fatalf("metadata %q changed in the round trip", k)
			}
		}
	})
}
