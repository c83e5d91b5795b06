//go:build !mpi

package dist_test

import (
	"strings"
	"testing"

	"github.com/tapegrad/tapegrad/nn/dist"
)

// TestInitWithoutMPI: the default build's Init is the single-process
// communicator, and refuses to run as one of several ranks.
func TestInitWithoutMPI(t *testing.T) {
	t.Setenv("OMPI_COMM_WORLD_SIZE", "")
	c, err := dist.Init(dist.Options{})
	if err != nil || c.Size() != 1 || c.Rank() != 0 || dist.WithMPI {
		t.Fatalf("Init: %v, %v", c, err)
	}
	t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
	if _, err := dist.Init(dist.Options{}); err == nil || !strings.Contains(err.Error(), "-tags mpi") {
		t.Errorf("Init as one of 2 ranks without MPI: %v", err)
	}
}
