// Package dist is tapegrad's data-parallel training across processes and
// hosts: a small communicator interface (Comm: Rank, Size, AllReduce,
// Broadcast, Barrier, Abort) with three implementations, and DDP,
// synchronous data parallelism for nn models in the design of PyTorch's
// DistributedDataParallel.
//
// Communicators:
//
//   - MPI (build tag mpi; cgo over the MPI C API, Open MPI by pkg-config
//     "ompi"): Init returns MPI_COMM_WORLD. Programs are started with
//     mpirun -np N.
//   - Local, the default build's Init: one process, rank 0 of 1. The
//     default build is pure Go (no cgo).
//   - NewGroup: ranks as goroutines of one process, for tests.
//
// A training loop (every rank runs it on its own shard of the data, see
// data.LoaderOptions.Rank):
//
//	comm, err := dist.Init(dist.Options{})
//	defer comm.Close()
//	ddp, err := dist.NewDDP(comm, model, dist.DDPOptions{}) // rank 0's weights everywhere
//	ddp.Attach(tape)
//	for loader.Next() {
//		tape.Reset()
//		loss := ...
//		if err := tape.Backward(loss); err != nil { comm.Abort(1) }
//		if err := ddp.Wait(); err != nil { comm.Abort(1) } // gradients averaged
//		opt.Step()
//	}
//
// Failures: a rank that fails must call Abort, which ends every rank;
// a rank that dies is noticed by mpirun, which ends the others; a
// collective that does not complete within Options.Timeout aborts the job.
// No rank waits forever.
package dist
