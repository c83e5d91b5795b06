// Package data loads training data: IDX files (the MNIST family's format),
// MNIST-style image/label datasets such as Fashion-MNIST, and a batch
// Loader with seeded, resumable per-epoch shuffling.
//
// ReadIDX reads an IDX file, gzip-compressed or not, and rejects malformed
// files with errors wrapping ErrFormat: a bad magic number or element type,
// a truncated header or data, dimensions whose size overflows, trailing
// bytes, a corrupt gzip stream.
//
// LoadMNISTDir(FashionMNISTDir, "train") returns the images as float32
// [N, 28, 28, 1] in [0, 1] and the labels as int32 [N].
//
// A Loader copies the rows of each batch into buffers it allocated once
// (the Batch is overwritten by the next call to Next), in an order that
// depends only on the seed and the epoch, so that State and SetState
// resume an interrupted run on exactly the same batches (a *Loader is an
// nn.CheckpointState: nn.SaveCheckpoint and nn.LoadCheckpoint save and
// restore its position with the model, in one call):
//
//	ds, err := data.LoadMNISTDir(data.FashionMNISTDir, "train")
//	l, err := ds.Loader(data.LoaderOptions{BatchSize: 64, Shuffle: true, Seed: 1})
//	for l.Next() {
//		b := l.Batch() // b.X [64, 28, 28, 1] float32, b.Y [64] int32
//	}
//
// LoaderOptions.Augment makes the loader augment training images as it
// copies them: random crops of the zero-padded image and horizontal flips,
// chosen from the seed, the epoch and the example's row (so resuming
// delivers the same augmented batches), without allocating.
package data
