package dist_test

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/autodiff"
	"github.com/tapegrad/tapegrad/nn"
	"github.com/tapegrad/tapegrad/nn/dist"
)

// The scenarios on in-process groups of 1 to 3 ranks (mpi_test.go runs
// them on MPI under mpirun).

func TestDDPIdentical(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		if err := runRanks(n, func(c dist.Comm) error { return scenarioIdentical(c, 6) }); err != nil {
			t.Errorf("%d ranks: %v", n, err)
		}
	}
}

func TestDDPEquivalentInferenceBN(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		if err := runRanks(n, func(c dist.Comm) error { return scenarioEquivalent(c, 5, true) }); err != nil {
			t.Errorf("%d ranks: %v", n, err)
		}
	}
}

func TestDDPEquivalentPerRankBN(t *testing.T) {
	for _, n := range []int{2, 3} {
		if err := runRanks(n, func(c dist.Comm) error { return scenarioEquivalent(c, 5, false) }); err != nil {
			t.Errorf("%d ranks: %v", n, err)
		}
	}
}

func TestDDPOverlap(t *testing.T) {
	if err := runRanks(2, func(c dist.Comm) error { return scenarioOverlap(c, 4) }); err != nil {
		t.Error(err)
	}
}

// TestGroupCollectives: sums and averages in rank order, broadcasts from
// any root, and mismatched calls reported on every rank.
func TestGroupCollectives(t *testing.T) {
	err := runRanks(3, func(c dist.Comm) error {
		r := float32(c.Rank())
		f32 := []float32{r, 1, 0.1 * (r + 1)}
		if err := dist.AllReduce(c, f32, dist.Sum); err != nil {
			return err
		}
		if want := []float32{3, 3, (0.1 + 0.2) + 0.3}; !slices.Equal(f32, want) {
			return errors.New("float32 sum: " + fmtv(f32) + " want " + fmtv(want))
		}
		f64 := []float64{float64(c.Rank()), 3}
		if err := dist.AllReduce(c, f64, dist.Avg); err != nil {
			return err
		}
		if want := []float64{1, 3}; !slices.Equal(f64, want) {
			return errors.New("float64 avg: " + fmtv(f64))
		}
		b := []float64{float64(c.Rank())}
		if err := dist.Broadcast(c, b, 2); err != nil {
			return err
		}
		by := []byte{byte(c.Rank())}
		if err := c.BroadcastBytes(by, 1); err != nil {
			return err
		}
		if b[0] != 2 || by[0] != 1 {
			return errors.New("broadcast: " + fmtv(b) + " " + fmtv(by))
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		// Rank 1 passes a longer buffer: everyone gets ErrMismatch.
		bad := make([]float32, 2+min(c.Rank(), 1))
		if err := c.AllReduceFloat32(bad, dist.Sum); !errors.Is(err, dist.ErrMismatch) {
			return errors.New("mismatched lengths: " + fmtv(err))
		}
		if err := c.BroadcastFloat32(bad, 3); err == nil {
			return errors.New("root 3 of 3 accepted")
		}
		if err := c.AllReduceFloat32(bad, dist.Op(7)); err == nil {
			return errors.New("Op(7) accepted")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

func fmtv(v any) string { return fmt.Sprint(v) }

// TestLocal: the single-process communicator and Init of the default
// build.
func TestLocal(t *testing.T) {
	var l dist.Local
	buf := []float32{1, 2}
	if l.Rank() != 0 || l.Size() != 1 {
		t.Fatalf("rank %d size %d", l.Rank(), l.Size())
	}
	if err := l.AllReduceFloat32(buf, dist.Avg); err != nil || !slices.Equal(buf, []float32{1, 2}) {
		t.Errorf("AllReduce: %v %v", buf, err)
	}
	if err := l.BroadcastFloat64(nil, 1); err == nil {
		t.Error("root 1 accepted")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Barrier(); !errors.Is(err, dist.ErrClosed) {
		t.Errorf("Barrier after Close: %v", err)
	}
}

// TestNewDDPChecks: ranks with different models all get an error (no
// rank is left waiting), and bad arguments are refused.
func TestNewDDPChecks(t *testing.T) {
	err := runRanks(2, func(c dist.Comm) error {
		m := testModel(1, -1, false)
		if _, err := dist.NewDDP(c, m, dist.DDPOptions{}); err != nil {
			return err
		}
		var other nn.Module = testModel(1, -1, false)
		if c.Rank() == 1 {
			other = nn.NewSequential(nn.NewDense(2, 2, nn.DenseOpts{Rand: rand.New(rand.NewSource(1))}))
		}
		_, err := dist.NewDDP(c, other, dist.DDPOptions{})
		if err == nil || !strings.Contains(err.Error(), "differ from rank 0's on 1 rank") {
			return errors.New("different models: " + fmtv(err))
		}
		if _, err := dist.NewDDP(c, m, dist.DDPOptions{BucketBytes: -1}); err == nil {
			return errors.New("negative BucketBytes accepted")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestDDPSecondBackward: two Backward calls before Wait are reported by
// Wait (on every rank, the collectives stay in step).
func TestDDPSecondBackward(t *testing.T) {
	err := runRanks(2, func(c dist.Comm) error {
		m := testModel(1, -1, false)
		ddp, err := dist.NewDDP(c, m, dist.DDPOptions{})
		if err != nil {
			return err
		}
		defer ddp.Close()
		x, y := dataset()
		xs, ys, err := rows(x, y, 0, 2)
		if err != nil {
			return err
		}
		tape := autodiff.NewTape(autodiff.Threads(1))
		ddp.Attach(tape)
		for range 2 {
			tape.Reset()
			loss := nn.SparseSoftmaxCrossEntropy(m.Forward(tape, tape.Constant(xs)), tape.Constant(ys))
			if err := tape.Backward(loss); err != nil {
				return err
			}
		}
		if err := ddp.Wait(); err == nil || !strings.Contains(err.Error(), "second gradient before Wait") {
			return errors.New("Wait after two Backward: " + fmtv(err))
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestDDPWithoutAttach: Wait alone averages the gradients (no overlap),
// including parameters that got no gradient (zeros).
func TestDDPWithoutAttach(t *testing.T) {
	err := runRanks(2, func(c dist.Comm) error {
		d, _ := tensorFromSlice([]float32{1, 2})
		p, err := autodiff.NewParam("p", d)
		if err != nil {
			return err
		}
		q, _ := autodiff.NewParam("q", d)
		m := paramsModule{p, q}
		ddp, err := dist.NewDDP(c, m, dist.DDPOptions{})
		if err != nil {
			return err
		}
		defer ddp.Close()
		if c.Rank() == 0 {
			p.Grad, _ = tensorFromSlice([]float32{2, 4})
		} else {
			p.Grad, _ = tensorFromSlice([]float32{0, 8})
		}
		if err := ddp.Wait(); err != nil {
			return err
		}
		if !slices.Equal(p.Grad.Float32s(), []float32{1, 6}) || !slices.Equal(q.Grad.Float32s(), []float32{0, 0}) {
			return errors.New("averaged gradients: " + fmtv(p.Grad.Float32s()) + fmtv(q.Grad.Float32s()))
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

type paramsModule []*autodiff.Param

func (m paramsModule) Forward(t *autodiff.Tape, x autodiff.Value) autodiff.Value { return x }
func (m paramsModule) Params() []*autodiff.Param                                 { return m }
func (m paramsModule) Buffers() []*nn.Buffer                                     { return nil }

func tensorFromSlice(xs []float32) (*tensor.Dense, error) {
	return tensor.New(tensor.WithShape(len(xs)), tensor.WithBacking(slices.Clone(xs))), nil
}
