#!/usr/bin/python3
"""Makes the bundled Fashion-MNIST subset used by `make demo`: the first
NTRAIN training and NTEST test examples of the full dataset (Debian package
dataset-fashion-mnist), as gzipped IDX files with the same layout.

usage: make_subset.py [SRC_DIR] [NTRAIN] [NTEST]
"""
import gzip, struct, sys

src = sys.argv[1] if len(sys.argv) > 1 else '/usr/share/datasets/fashion-mnist'
ntrain = int(sys.argv[2]) if len(sys.argv) > 2 else 6000
ntest = int(sys.argv[3]) if len(sys.argv) > 3 else 1000

def subset(name, n, out):
    with gzip.open('%s/%s' % (src, name), 'rb') as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack('>HBB', data[:4])
    dims = list(struct.unpack('>' + 'I' * ndim, data[4:4 + 4 * ndim]))
    item = 1
    for d in dims[1:]:
        item *= d
    body = data[4 + 4 * ndim:4 + 4 * ndim + n * item]
    dims[0] = n
    header = struct.pack('>HBB', zero, dtype, ndim) + struct.pack('>' + 'I' * ndim, *dims)
    # mtime=0: the same bytes on every run.
    with open(out, 'wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', mtime=0, filename='') as g:
        g.write(header + body)

subset('train-images-idx3-ubyte.gz', ntrain, 'train-images-idx3-ubyte.gz')
subset('train-labels-idx1-ubyte.gz', ntrain, 'train-labels-idx1-ubyte.gz')
subset('t10k-images-idx3-ubyte.gz', ntest, 't10k-images-idx3-ubyte.gz')
subset('t10k-labels-idx1-ubyte.gz', ntest, 't10k-labels-idx1-ubyte.gz')
