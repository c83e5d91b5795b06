package dist

import (
	"fmt"
	"os"
	"sync"
)

// NewGroup returns the n communicators of an in-process group: n ranks
// that are goroutines of this process, one Comm each (comms[r] is rank r).
// It behaves as an MPI communicator of n processes, for tests and for
// trying data parallelism without MPI: the collectives meet in shared
// memory, reductions add the ranks' buffers in rank order (so every rank
// gets the same bits), and mismatched collectives return ErrMismatch on
// every rank instead of hanging. Abort exits the process.
func NewGroup(n int) ([]Comm, error) {
	if n < 1 {
		return nil, fmt.Errorf("dist.NewGroup: %d ranks, want at least 1", n)
	}
	g := &group{n: n, slots: make([]slot, n)}
	g.cond = sync.NewCond(&g.mu)
	comms := make([]Comm, n)
	for r := range comms {
		comms[r] = &member{g: g, rank: r}
	}
	return comms, nil
}

type group struct {
	n       int
	mu      sync.Mutex
	cond    *sync.Cond
	slots   []slot
	arrived int
	gen     uint64
	err     error // result of the last completed collective
	closed  int
	f32     []float32
	f64     []float64
}

// slot is one rank's contribution to the collective in progress.
type slot struct {
	kind string
	op   Op
	root int
	f32  []float32
	f64  []float64
	b    []byte
}

type member struct {
	g      *group
	rank   int
	mu     sync.Mutex // one collective at a time per rank
	closed bool
}

func (m *member) Rank() int { return m.rank }
func (m *member) Size() int { return m.g.n }

// collective deposits s and waits for every rank; the last to arrive
// checks that all slots agree and runs the collective for everyone.
func (m *member) collective(s slot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	g := m.g
	g.mu.Lock()
	defer g.mu.Unlock()
	g.slots[m.rank] = s
	g.arrived++
	if g.arrived < g.n {
		gen := g.gen
		for g.gen == gen {
			g.cond.Wait()
		}
		return g.err
	}
	g.err = g.run()
	clear(g.slots)
	g.arrived = 0
	g.gen++
	g.cond.Broadcast()
	return g.err
}

// run executes the collective in g.slots (all ranks present, g.mu held).
func (g *group) run() error {
	s0 := &g.slots[0]
	for r := range g.slots {
		s := &g.slots[r]
		if s.kind != s0.kind || s.op != s0.op || s.root != s0.root ||
			len(s.f32) != len(s0.f32) || len(s.f64) != len(s0.f64) || len(s.b) != len(s0.b) {
			return fmt.Errorf("%w: rank 0 called %s, rank %d %s", ErrMismatch, s0.describe(), r, s.describe())
		}
	}
	switch s0.kind {
	case "AllReduce/float32":
		g.f32 = reduce(g.f32, g.slots, func(s *slot) []float32 { return s.f32 }, s0.op, g.n)
	case "AllReduce/float64":
		g.f64 = reduce(g.f64, g.slots, func(s *slot) []float64 { return s.f64 }, s0.op, g.n)
	case "Broadcast/float32":
		for r := range g.slots {
			copy(g.slots[r].f32, g.slots[s0.root].f32)
		}
	case "Broadcast/float64":
		for r := range g.slots {
			copy(g.slots[r].f64, g.slots[s0.root].f64)
		}
	case "Broadcast/bytes":
		for r := range g.slots {
			copy(g.slots[r].b, g.slots[s0.root].b)
		}
	}
	return nil
}

func (s *slot) describe() string {
	return fmt.Sprintf("%s(len %d, op %v, root %d)", s.kind, max(len(s.f32), len(s.f64), len(s.b)), s.op, s.root)
}

// reduce adds the ranks' buffers in rank order into scratch, divides for
// Avg, and copies the result to every rank.
func reduce[T float32 | float64](scratch []T, slots []slot, buf func(*slot) []T, op Op, n int) []T {
	b0 := buf(&slots[0])
	if cap(scratch) < len(b0) {
		scratch = make([]T, len(b0))
	}
	acc := scratch[:len(b0)]
	copy(acc, b0)
	for r := 1; r < len(slots); r++ {
		for i, v := range buf(&slots[r]) {
			acc[i] += v
		}
	}
	if op == Avg {
		divide(acc, n)
	}
	for r := range slots {
		copy(buf(&slots[r]), acc)
	}
	return scratch
}

func (m *member) AllReduceFloat32(buf []float32, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	return m.collective(slot{kind: "AllReduce/float32", op: op, f32: buf})
}

func (m *member) AllReduceFloat64(buf []float64, op Op) error {
	if err := checkOp(op); err != nil {
		return err
	}
	return m.collective(slot{kind: "AllReduce/float64", op: op, f64: buf})
}

func (m *member) BroadcastFloat32(buf []float32, root int) error {
	if err := checkRoot(root, m.g.n); err != nil {
		return err
	}
	return m.collective(slot{kind: "Broadcast/float32", root: root, f32: buf})
}

func (m *member) BroadcastFloat64(buf []float64, root int) error {
	if err := checkRoot(root, m.g.n); err != nil {
		return err
	}
	return m.collective(slot{kind: "Broadcast/float64", root: root, f64: buf})
}

func (m *member) BroadcastBytes(buf []byte, root int) error {
	if err := checkRoot(root, m.g.n); err != nil {
		return err
	}
	return m.collective(slot{kind: "Broadcast/bytes", root: root, b: buf})
}

func (m *member) Barrier() error { return m.collective(slot{kind: "Barrier"}) }

func (m *member) Abort(code int) { os.Exit(code) }

func (m *member) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	return nil
}
