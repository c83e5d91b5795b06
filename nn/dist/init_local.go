//go:build !mpi

package dist

import "fmt"

// WithMPI reports whether the package was built with MPI (build tag mpi).
const WithMPI = false

// Init returns the communicator of the job this process belongs to. This
// build has no MPI (it is pure Go, without cgo): Init returns a Local
// communicator (rank 0 of 1), or an error if a launcher such as mpirun
// started this process as one of several ranks, since every rank would
// then train alone and write the same files. Build with -tags mpi for
// MPI.
func Init(opts Options) (Comm, error) {
	if n := launchedRanks(); n > 1 {
		return nil, fmt.Errorf("dist.Init: started as one of %d ranks (mpirun?), but built without MPI: build with -tags mpi", n)
	}
	return &Local{}, nil
}
