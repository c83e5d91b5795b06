package nn

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/tapegrad/tapegrad/internal/safetensors"
	"github.com/tapegrad/tapegrad/internal/tensorx"
	"github.com/tapegrad/tapegrad/registry"
)

// Checkpoint layout: one safetensors file (readable by
// safetensors.torch.load_file and NumPy) holding
//
//   - "param/NAME": every parameter of the model, by Param.Name;
//   - "buffer/NAME": every buffer (batch-norm statistics, fake-quant
//     ranges), by Buffer.Name;
//   - "optim/KEY": the optimizer's state tensors (the tensors of
//     OptimizerState.StateDict);
//
// and, in the file's string metadata:
//
//   - "tapegrad.version": the checkpoint format version, CheckpointVersion;
//   - "tapegrad.optim/KEY": the optimizer's scalars (the scalars of
//     OptimizerState.StateDict),
//     formatted with strconv.FormatFloat(v, 'g', -1, 64), which round-trips
//     exactly;
//   - "tapegrad.state/NAME/KEY": the entries of the CheckpointStates
//     saved with it (a data loader's position), by state name;
//   - the caller's own entries (epoch, step, seeds), under keys that do
//     not start with "tapegrad.".
const (
	// CheckpointVersion is the format version SaveCheckpoint writes and
	// LoadCheckpoint reads.
	CheckpointVersion = "1"
	// VersionKey is the metadata key of the format version.
	VersionKey = "tapegrad.version"

	paramPrefix  = "param/"
	bufferPrefix = "buffer/"
	optimPrefix  = "optim/"
	scalarPrefix = "tapegrad.optim/"
	hasOptimKey  = "tapegrad.optimizer"
	statePrefix  = "tapegrad.state/"
)

// OptimizerState is what a checkpoint needs of an optimizer: its complete
// state as named tensors and scalars, and a way to restore it. Package
// optim's optimizers implement it (see optim.State for the names); a
// checkpoint stores the tensors and scalars under those names.
type OptimizerState interface {
	// StateDict returns a deep copy of the optimizer's state: tensors and
	// scalars by name.
	StateDict() (tensors map[string]*tensor.Dense, scalars map[string]float64, err error)
	// LoadStateDict replaces the optimizer's state by a copy of the given
	// one, after checking it completely: on error nothing has changed.
	LoadStateDict(tensors map[string]*tensor.Dense, scalars map[string]float64) error
}

// CheckpointState is training state that a checkpoint saves besides the
// model and the optimizer, as named strings in its metadata: a data
// loader's position (*data.Loader implements it), so that one
// SaveCheckpoint call saves everything a resumed run needs, and one
// LoadCheckpoint call restores it.
type CheckpointState interface {
	// StateName names the state in the checkpoint: non-empty, without
	// '/', distinct among the states of one checkpoint ("loader").
	StateName() string
	// SaveState returns the state's entries (keys without '/').
	SaveState() (map[string]string, error)
	// CheckState reports whether LoadState would accept the entries,
	// changing nothing.
	CheckState(entries map[string]string) error
	// LoadState restores the state from entries SaveState returned.
	LoadState(entries map[string]string) error
}

// stateNames validates the names of the states of one checkpoint.
func stateNames(op string, states []CheckpointState) error {
	seen := map[string]bool{}
	for i, st := range states {
		if st == nil {
			return configError("%s: state %d is nil", op, i)
		}
		n := st.StateName()
		if n == "" || strings.Contains(n, "/") {
			return configError("%s: state %d has an invalid name %q (non-empty, without '/')", op, i, n)
		}
		if seen[n] {
			return configError("%s: two states are named %q", op, n)
		}
		seen[n] = true
	}
	return nil
}

// SaveCheckpoint writes m's parameters and buffers, the state of opt (nil
// for none), the entries of states (data loaders' positions; see
// CheckpointState) and the caller's metadata meta (may be nil; keys must
// not start with "tapegrad.") to path, atomically: a crash leaves the old
// file or the new one, never a torn one. Gradients are not saved.
//
// The file is written to a temporary file in path's directory, synced,
// renamed over path, and the directory synced. On error (a full disk, a
// read-only directory, …) the error names path, the old file is left as it
// was and the temporary file is removed; a process killed while saving
// leaves its temporary file (".NAME.tmp" and digits, next to path), which
// is safe to delete.
func SaveCheckpoint(path string, m Module, opt OptimizerState, meta map[string]string, states ...CheckpointState) error {
	if m == nil {
		return configError("nn.SaveCheckpoint: nil Module")
	}
	if err := moduleErr(m); err != nil {
		return wrapf(err, "nn.SaveCheckpoint")
	}
	tensors := map[string]*tensor.Dense{}
	md := map[string]string{VersionKey: CheckpointVersion}
	for k, v := range meta {
		if strings.HasPrefix(k, "tapegrad.") {
			return configError("nn.SaveCheckpoint: metadata key %q is reserved (prefix \"tapegrad.\")", k)
		}
		md[k] = v
	}
	if err := stateNames("nn.SaveCheckpoint", states); err != nil {
		return err
	}
	for _, st := range states {
		entries, err := st.SaveState()
		if err != nil {
			return wrapf(err, "nn.SaveCheckpoint: state %q", st.StateName())
		}
		for k, v := range entries {
			if k == "" || strings.Contains(k, "/") {
				return configError("nn.SaveCheckpoint: state %q has an invalid key %q (non-empty, without '/')", st.StateName(), k)
			}
			md[statePrefix+st.StateName()+"/"+k] = v
		}
	}
	add := func(name string, d *tensor.Dense) error {
		if _, dup := tensors[name]; dup {
			return configError("nn.SaveCheckpoint: two tensors are named %q (give the layers distinct names)", name)
		}
		tensors[name] = d
		return nil
	}
	for _, p := range m.Params() {
		if err := add(paramPrefix+p.Name, p.Data); err != nil {
			return err
		}
	}
	for _, b := range m.Buffers() {
		if err := add(bufferPrefix+b.Name, b.Data); err != nil {
			return err
		}
	}
	if opt != nil {
		st, sc, err := opt.StateDict()
		if err != nil {
			return wrapf(err, "nn.SaveCheckpoint: optimizer state")
		}
		for k, d := range st {
			if err := add(optimPrefix+k, d); err != nil {
				return err
			}
		}
		for k, v := range sc {
			md[scalarPrefix+k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		md[hasOptimKey] = "1"
	}
	if err := safetensors.WriteFile(path, tensors, md); err != nil {
		return fmt.Errorf("nn.SaveCheckpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint restores m's parameters and buffers and, if opt is not
// nil, the optimizer's state from the checkpoint at path, and returns the
// caller's metadata saved with it (the "tapegrad." entries removed).
//
// m must have exactly the parameters and buffers of the checkpoint, by
// name, shape and dtype; opt must be an optimizer of the same kind over
// parameters of the same names. Every mismatch is reported (the error
// lists the names), and nothing is changed unless everything matches. The
// parameters are overwritten in place (their MarkModified is called);
// their gradients are left alone. A checkpoint without optimizer state
// can be loaded with opt nil only; one with optimizer state can be loaded
// with opt nil too (for inference).
//
// Each of states is restored from the entries saved under its name (see
// CheckpointState); a state the checkpoint does not hold is an error.
// Every state is checked (CheckState) before anything is changed.
func LoadCheckpoint(path string, m Module, opt OptimizerState, states ...CheckpointState) (map[string]string, error) {
	if m == nil {
		return nil, configError("nn.LoadCheckpoint: nil Module")
	}
	if err := moduleErr(m); err != nil {
		return nil, wrapf(err, "nn.LoadCheckpoint")
	}
	if err := stateNames("nn.LoadCheckpoint", states); err != nil {
		return nil, err
	}
	tensors, md, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("nn.LoadCheckpoint: %w", err)
	}
	switch v, ok := md[VersionKey]; {
	case !ok:
		return nil, configError("nn.LoadCheckpoint: %s is not a tapegrad checkpoint (no %q metadata)", path, VersionKey)
	case v != CheckpointVersion:
		return nil, registry.Errorf(registry.ErrUnimplemented, "nn.LoadCheckpoint: %s has checkpoint version %q; this build reads version %s", path, v, CheckpointVersion)
	}

	// Match the model's tensors with the file's, without changing anything.
	type copyOp struct{ dst, src *tensor.Dense }
	var copies []copyOp
	var problems []string
	seen := map[string]bool{}
	match := func(kind, name string, dst *tensor.Dense) {
		key := kind + name
		if seen[key] {
			problems = append(problems, fmt.Sprintf("two model tensors are named %q", key))
			return
		}
		seen[key] = true
		src, ok := tensors[key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing %s %q", strings.TrimSuffix(kind, "/"), name))
		case src.Dtype() != dst.Dtype() || !tensorx.SameShape(src.Shape(), dst.Shape()):
			problems = append(problems, fmt.Sprintf("%s %q is %v %v in the checkpoint, %v %v in the model",
				strings.TrimSuffix(kind, "/"), name, src.Dtype(), src.Shape(), dst.Dtype(), dst.Shape()))
		default:
			copies = append(copies, copyOp{dst, src})
		}
	}
	params := m.Params()
	for _, p := range params {
		match(paramPrefix, p.Name, p.Data)
	}
	for _, b := range m.Buffers() {
		match(bufferPrefix, b.Name, b.Data)
	}
	stateTensors, stateScalars := map[string]*tensor.Dense{}, map[string]float64{}
	var unexpected []string
	for k, d := range tensors {
		switch {
		case strings.HasPrefix(k, optimPrefix):
			stateTensors[strings.TrimPrefix(k, optimPrefix)] = d
		case !seen[k]:
			unexpected = append(unexpected, strconv.Quote(k))
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		problems = append(problems, "unexpected tensors "+strings.Join(unexpected, ", "))
	}
	if len(problems) > 0 {
		return nil, registry.Errorf(registry.ErrShape, "nn.LoadCheckpoint: %s does not match the model: %s", path, strings.Join(problems, "; "))
	}
	user := map[string]string{}
	for k, v := range md {
		if rest, ok := strings.CutPrefix(k, scalarPrefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, configError("nn.LoadCheckpoint: %s: optimizer scalar %q = %q: %v", path, rest, v, err)
			}
			stateScalars[rest] = f
		} else if !strings.HasPrefix(k, "tapegrad.") {
			user[k] = v
		}
	}
	stateEntries := make([]map[string]string, len(states))
	for i, st := range states {
		prefix := statePrefix + st.StateName() + "/"
		entries := map[string]string{}
		for k, v := range md {
			if rest, ok := strings.CutPrefix(k, prefix); ok {
				entries[rest] = v
			}
		}
		if len(entries) == 0 {
			return nil, configError("nn.LoadCheckpoint: %s holds no state %q", path, st.StateName())
		}
		if err := st.CheckState(entries); err != nil {
			return nil, fmt.Errorf("nn.LoadCheckpoint: %s: state %q: %w", path, st.StateName(), err)
		}
		stateEntries[i] = entries
	}
	if opt != nil {
		if md[hasOptimKey] != "1" {
			return nil, configError("nn.LoadCheckpoint: %s holds no optimizer state", path)
		}
		if err := opt.LoadStateDict(stateTensors, stateScalars); err != nil { // checks everything before changing anything
			return nil, fmt.Errorf("nn.LoadCheckpoint: %s: optimizer state: %w", path, err)
		}
	}
	for i, st := range states {
		if err := st.LoadState(stateEntries[i]); err != nil { // checked above: a failure here is the state's bug
			return nil, fmt.Errorf("nn.LoadCheckpoint: %s: state %q: %w", path, st.StateName(), err)
		}
	}
	for _, c := range copies {
		tensorx.CopyData(c.dst, c.src)
	}
	for _, p := range params {
		p.MarkModified()
	}
	return user, nil
}
