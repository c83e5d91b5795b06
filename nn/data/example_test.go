package data_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/nn/data"
)

func ExampleLoader() {
	x := tensor.New(tensor.WithShape(5, 1), tensor.WithBacking([]float32{0, 10, 20, 30, 40}))
	y := tensor.New(tensor.WithShape(5), tensor.WithBacking([]int32{0, 1, 2, 3, 4}))
	l, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: 2})
	if err != nil {
		panic(err)
	}
	for l.Next() {
		b := l.Batch() // reused: copy what must outlive the next call
		fmt.Println(b.Size, b.X.Float32s(), b.Y.Int32s())
	}
	fmt.Println("epochs done:", l.Epoch())
	// Output:
	// 2 [0 10] [0 1]
	// 2 [20 30] [2 3]
	// 1 [40] [4]
	// epochs done: 1
}

// Resume a shuffled loader where an interrupted run stopped.
func ExampleLoader_SetState() {
	x := tensor.New(tensor.WithShape(6), tensor.WithBacking([]int64{0, 1, 2, 3, 4, 5}))
	opts := data.LoaderOptions{BatchSize: 2, Shuffle: true, Seed: 7}
	first, _ := data.NewLoader(x, nil, opts)
	first.Next()
	saved := first.State() // store it in the checkpoint
	first.Next()
	want := append([]int(nil), first.Batch().Indices...)

	resumed, _ := data.NewLoader(x, nil, opts)
	if err := resumed.SetState(saved); err != nil {
		panic(err)
	}
	resumed.Next()
	fmt.Println(saved.Epoch, saved.Pos, fmt.Sprint(resumed.Batch().Indices) == fmt.Sprint(want))
	// Output: 0 2 true
}

// Augment training images with random padded crops and horizontal flips:
// each example's shift and flip depend on the seed, the epoch and its row.
func ExampleAugment() {
	// one 3×3 image [N, H, W]
	x := tensor.New(tensor.WithShape(1, 3, 3), tensor.WithBacking([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9}))
	l, err := data.NewLoader(x, nil, data.LoaderOptions{
		BatchSize: 1, Seed: 1,
		Augment: &data.Augment{Pad: 1, FlipHorizontal: true},
	})
	if err != nil {
		panic(err)
	}
	for epoch := 0; epoch < 4; epoch++ {
		for l.Next() {
			px := l.Batch().X.Float32s()
			fmt.Println(px[0:3], px[3:6], px[6:9])
		}
	}
	// Output:
	// [2 3 0] [5 6 0] [8 9 0]
	// [0 0 0] [2 3 0] [5 6 0]
	// [0 0 0] [2 1 0] [5 4 0]
	// [0 0 0] [2 1 0] [5 4 0]
}
