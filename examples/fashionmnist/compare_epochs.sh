#!/bin/sh
# Same-run epoch-time comparison of the example with its PyTorch twin.
#
#   examples/fashionmnist/compare_epochs.sh [THREADS] [EPOCHS] [ROUNDS] [EXTRA GO FLAGS...]
#
# Runs ROUNDS interleaved rounds of (tapegrad, PyTorch NCHW, PyTorch
# channels-last), each training EPOCHS epochs of the full Fashion-MNIST at
# THREADS threads, and prints every epoch's line and a summary of the
# median examples/s. Extra flags (e.g. -qat) go to the Go example only:
# the twin has no QAT mode. Needs the dataset (make data) and PyTorch
# (make bench-deps).
set -e
T=${1:-2}
E=${2:-1}
R=${3:-2}
shift 3 2>/dev/null || shift $#
DIR=$(cd "$(dirname "$0")" && pwd)
BIN=$(mktemp -d)/fashionmnist
(cd "$DIR" && go build -o "$BIN" .)
LOG=$(mktemp)
for r in $(seq 1 "$R"); do
	echo "== round $r tapegrad $(date +%T)"
	"$BIN" -threads "$T" -epochs "$E" -progress=false -plot '' -checkpoint "$(dirname "$BIN")/ck.safetensors" "$@" |
		grep '^epoch' | sed 's/^/tapegrad /' | tee -a "$LOG"
	echo "== round $r pytorch $(date +%T)"
	OMP_NUM_THREADS=$T OPENBLAS_NUM_THREADS=$T /usr/bin/python3 "$DIR/torch_twin.py" --threads "$T" --epochs "$E" |
		grep '^epoch' | sed 's/^/pytorch /' | tee -a "$LOG"
	echo "== round $r pytorch channels-last $(date +%T)"
	OMP_NUM_THREADS=$T OPENBLAS_NUM_THREADS=$T /usr/bin/python3 "$DIR/torch_twin.py" --threads "$T" --epochs "$E" --channels-last |
		grep '^epoch' | sed 's/^/pytorch-cl /' | tee -a "$LOG"
done
/usr/bin/python3 - "$LOG" <<'PY'
import re, statistics, sys
rates = {}
for line in open(sys.argv[1]):
    m = re.search(r'([0-9.]+) s \(([0-9]+) examples/s\)', line)
    if m:
        rates.setdefault(line.split()[0], []).append((float(m.group(1)), float(m.group(2))))
med = {k: (statistics.median(s for s, _ in v), statistics.median(r for _, r in v)) for k, v in rates.items()}
for k, (s, r) in med.items():
    print('%-11s median epoch %.1f s, %.0f examples/s over %d epochs' % (k, s, r, len(rates[k])))
if 'tapegrad' in med:
    best = min((med[k][0], k) for k in med if k != 'tapegrad')
    print('tapegrad epoch time / PyTorch (%s): %.2f' % (best[1], med['tapegrad'][0] / best[0]))
PY
