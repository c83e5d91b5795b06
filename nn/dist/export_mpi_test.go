//go:build mpi

package dist

import "unsafe"

// BcastUnchecked is BroadcastBytes without the root check in Go, so that
// a test can make the MPI library itself report an error.
func BcastUnchecked(c Comm, buf []byte, root int) error {
	return c.(*mpiComm).call(mpiReq{call: callBcast, ptr: unsafe.Pointer(unsafe.SliceData(buf)), n: len(buf), dt: 2, root: root})
}
