package dist_test

import (
	"fmt"
	"math/rand"
	"sync"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/data"
	"github.com/tapegrad/tapegrad/nn/dist"
	"github.com/tapegrad/tapegrad/optim"
)

// ExampleNewDDP trains a small model on two ranks. The ranks are
// goroutines here (NewGroup); under mpirun, each process would take its
// communicator from dist.Init instead, and run the same code.
func ExampleNewDDP() {
	xs := make([]float32, 64*4)
	ys := make([]int32, 64)
	r := rand.New(rand.NewSource(1))
	for i := range ys {
		for k := range 4 {
			xs[4*i+k] = float32(r.NormFloat64())
		}
		if xs[4*i] > 0 {
			ys[i] = 1
		}
	}
	x, _ := tensorx.New([]int{64, 4}, xs)
	y, _ := tensorx.New([]int{64}, ys)

	train := func(c dist.Comm) ([]float32, error) {
		// Each rank may initialise differently: NewDDP copies rank 0's
		// parameters.
		model := nn.NewSequential(nn.NewDense(4, 2, nn.DenseOpts{Rand: rand.New(rand.NewSource(int64(c.Rank())))}))
		ddp, err := dist.NewDDP(c, model, dist.DDPOptions{})
		if err != nil {
			return nil, err
		}
		defer ddp.Close()
		opt, err := optim.NewSGD(model.Params(), optim.SGDSettings{LR: 0.1})
		if err != nil {
			return nil, err
		}
		// Rank r gets the r-th half of every batch of 16.
		loader, err := data.NewLoader(x, y, data.LoaderOptions{BatchSize: 8, Shuffle: true, Seed: 1, DropLast: true, Rank: c.Rank(), Ranks: c.Size()})
		if err != nil {
			return nil, err
		}
		tape := autodiff.NewTape(autodiff.Threads(1))
		ddp.Attach(tape) // all-reduce gradients as Backward finishes them
		for epoch := 0; epoch < 3; epoch++ {
			for loader.Next() {
				b := loader.Batch()
				tape.Reset()
				loss := nn.SparseSoftmaxCrossEntropy(model.Forward(tape, tape.Constant(b.X)), tape.Constant(b.Y))
				if err := tape.Backward(loss); err != nil {
					return nil, err
				}
				if err := ddp.Wait(); err != nil { // averaged over the ranks
					return nil, err
				}
				if err := opt.Step(); err != nil {
					return nil, err
				}
			}
		}
		return model.Params()[0].Data.Float32s(), nil
	}

	comms, _ := dist.NewGroup(2)
	weights := make([][]float32, 2)
	var wg sync.WaitGroup
	for rank, c := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := train(c)
			if err != nil {
				c.Abort(1) // never leave the other ranks waiting
			}
			weights[rank] = w
		}()
	}
	wg.Wait()
	fmt.Println("ranks hold the same weights:", fmt.Sprint(weights[0]) == fmt.Sprint(weights[1]))
	// Output:
	// ranks hold the same weights: true
}
