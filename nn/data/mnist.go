package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/tensorx"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// Fashion-MNIST (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// Dataset is a set of images with their labels.
type Dataset struct {
	// Images is float32 [N, H, W, 1] (NHWC), pixel values scaled to [0, 1].
	Images *tensor.Dense
	// Labels is int32 [N].
	Labels *tensor.Dense
}

// Len returns the number of examples.
func (d *Dataset) Len() int { return d.Labels.Shape()[0] }

// Loader returns a loader over the images and labels (see NewLoader).
func (d *Dataset) Loader(opts LoaderOptions) (*Loader, error) {
	return NewLoader(d.Images, d.Labels, opts)
}

// LoadMNIST reads an MNIST-style pair of IDX files: images (ubyte, 3
// dimensions [N, H, W]) and labels (ubyte, 1 dimension [N]), gzipped or
// not. Pixels become float32 v/255; the counts must match.
func LoadMNIST(imagesPath, labelsPath string) (*Dataset, error) {
	im, err := ReadIDX(imagesPath)
	if err != nil {
		return nil, err
	}
	lb, err := ReadIDX(labelsPath)
	if err != nil {
		return nil, err
	}
	if im.Type != IDXUint8 || len(im.Dims) != 3 {
		return nil, fmt.Errorf("%w: %s: images must be ubyte with 3 dimensions [N, H, W], got %v %v", ErrFormat, imagesPath, im.Type, im.Dims)
	}
	if lb.Type != IDXUint8 || len(lb.Dims) != 1 {
		return nil, fmt.Errorf("%w: %s: labels must be ubyte with 1 dimension [N], got %v %v", ErrFormat, labelsPath, lb.Type, lb.Dims)
	}
	n, h, w := im.Dims[0], im.Dims[1], im.Dims[2]
	if lb.Dims[0] != n {
		return nil, fmt.Errorf("%w: %d images in %s but %d labels in %s", ErrFormat, n, imagesPath, lb.Dims[0], labelsPath)
	}
	px := make([]float32, len(im.Data))
	for i, v := range im.Data {
		px[i] = float32(v) / 255
	}
	labels := make([]int32, n)
	for i, v := range lb.Data {
		labels[i] = int32(v)
	}
	images, err := tensorx.New([]int{n, h, w, 1}, px)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", imagesPath, err)
	}
	lt, err := tensorx.New([]int{n}, labels)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", labelsPath, err)
	}
	return &Dataset{Images: images, Labels: lt}, nil
}

// LoadMNISTDir loads split "train" or "test" (alias "t10k") of an
// MNIST-style directory holding the standard file names
// (train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte), each plain or with a .gz suffix, such as
// FashionMNISTDir.
func LoadMNISTDir(dir, split string) (*Dataset, error) {
	var prefix string
	switch split {
	case "train":
		prefix = "train"
	case "test", "t10k":
		prefix = "t10k"
	default:
		return nil, fmt.Errorf("LoadMNISTDir: unknown split %q (want train or test)", split)
	}
	images, err := findFile(dir, prefix+"-images-idx3-ubyte")
	if err != nil {
		return nil, err
	}
	labels, err := findFile(dir, prefix+"-labels-idx1-ubyte")
	if err != nil {
		return nil, err
	}
	return LoadMNIST(images, labels)
}

// findFile returns dir/name or dir/name.gz, whichever exists (the plain
// file first).
func findFile(dir, name string) (string, error) {
	for _, n := range []string{name, name + ".gz"} {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("LoadMNISTDir: %w", err)
		}
	}
	return "", fmt.Errorf("LoadMNISTDir: neither %s nor %s.gz in %s: %w", name, name, dir, os.ErrNotExist)
}
