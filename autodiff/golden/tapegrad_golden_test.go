package golden

import (
	"path/filepath"
	"testing"
)

// TestProjectGolden runs the golden cases generated in this repository
// (testdata/golden-tapegrad/, from independent references): every case
// must pass, with no warning (an error case's message must contain its
// substring), on one and two threads.
func TestProjectGolden(t *testing.T) {
	files, err := filepath.Glob("../../testdata/golden-tapegrad/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden files: %v, %v", files, err)
	}
	total := 0
	for _, f := range files {
		cases, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			total++
			for _, threads := range []int{1, 2} {
				res := Run(c, Options{Threads: threads})
				if !res.Passed() || len(res.Warnings) > 0 {
					t.Errorf("%s (%d threads): failures %v, warnings %v", c, threads, res.Failures, res.Warnings)
				}
			}
		}
	}
	if total < 70 {
		t.Errorf("%d cases; conv2d_int32.json alone has 71", total)
	}
}
