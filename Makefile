# tapegrad — developer entry points. `make test` is the quick developer
# check; `make ci` (what CI runs, via .ci/run) adds -race, noasm and fuzzing.
GO ?= go
# Golden-case families whose ops are registered (see testdata/golden/).
GOLDEN_FAMILIES ?= conv2d depthwise_conv2d fake_quant fused_batch_norm fractional_avg_pool cwise array pool fused_batch_norm_ex
GOLDEN_FILES := $(foreach f,$(GOLDEN_FAMILIES),testdata/golden/$(f).json)
# Cases generated in this repository from independent references (testdata/golden-tapegrad/).
GOLDEN_FILES += testdata/golden-tapegrad/conv2d_int32.json
FUZZTIME ?= 20s

.PHONY: all test ci race noasm fuzz-check vet gen-check fmt-check unit gradcheck gradcheck-quick conformance bench bench-deps bench-compare train-compare fuzz demo train export data help test-mpi train-mpi mpi-deps

all: test

help:
	@echo "make test        vet, gofmt check, generated files current, unit tests, gradient sweep (-quick), golden cases"
	@echo "make ci          what CI runs: make test, then make race, make noasm and make fuzz FUZZTIME=$(CI_FUZZTIME)"
	@echo "make race        go test -race on the packages with goroutines or shared state ($(RACE_PKGS))"
	@echo "make noasm       go test -tags noasm on the kernel packages and forward, backward (portable Go only)"
	@echo "make gradcheck   full gradient sweep over every registered op"
	@echo "make conformance golden cases of the implemented op families"
	@echo "make bench       workload benchmarks (cmd/bench)"
	@echo "make fuzz        short fuzzing runs of the validation paths (FUZZTIME=$(FUZZTIME))"
	@echo "make demo        train the example model on the bundled subset (about a minute)"
	@echo "make data        install the full Fashion-MNIST (Debian package dataset-fashion-mnist)"
	@echo "make train       the full training run (QAT=1 for quantisation-aware training)"
	@echo "make export      the model make train trained, as ONNX: out/model.onnx (QAT=1: out/model-qat.onnx, int8 QDQ)"
	@echo "make bench-compare  same-run comparison with PyTorch (THREADS=1|2; make bench-deps first)"
	@echo "make train-compare  same-run epoch times of the example and its PyTorch twin (TRAIN_THREADS=2, EPOCHS_CMP=1, ROUNDS=2)"
	@echo "make test-mpi    the data-parallel tests under mpirun (-tags mpi; needs OpenMPI: make mpi-deps)"
	@echo "make train-mpi   the full run data-parallel on NP=$(NP) MPI ranks (NP_THREADS threads each)"

test: vet fmt-check gen-check unit gradcheck-quick conformance

# CI: the quick check, then the data-race detector, the portable (noasm)
# kernels, and every fuzz target for a short fixed time (each finding is
# written to testdata/fuzz/ and fails the run; nothing is written otherwise).
CI_FUZZTIME ?= 10s
ci: test race noasm
	$(MAKE) fuzz FUZZTIME=$(CI_FUZZTIME)

RACE_PKGS ?= ./autodiff/ ./registry/ ./internal/parallel/ ./internal/gemm/ ./nn/ ./nn/dist/ ./optim/
race:
	$(GO) test -count=1 -race $(RACE_PKGS)

NOASM_PKGS ?= ./internal/... ./forward/ ./backward/
noasm:
	$(GO) test -count=1 -tags noasm $(NOASM_PKGS)

vet:
	$(GO) vet ./...

# The generated files (typed op builders, avo assembly) must be what
# `go generate ./...` makes of the current sources.
gen-check:
	@state() { git status --porcelain -- '*.go' '*.s'; git diff -- '*.go' '*.s' | cksum; }; \
	before=$$(state); $(GO) generate ./... || exit 1; after=$$(state); \
	if [ "$$before" != "$$after" ]; then \
		echo "go generate changed files (commit its output):"; git status --porcelain -- '*.go' '*.s'; exit 1; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

unit:
	$(GO) test -count=1 ./...

gradcheck-quick:
	$(GO) run ./cmd/gradcheck -quick

gradcheck:
	$(GO) run ./cmd/gradcheck

conformance:
	@if [ -n "$(GOLDEN_FILES)" ]; then $(GO) run ./cmd/opcheck $(GOLDEN_FILES); \
	else echo "conformance: no op family with golden cases is registered yet"; fi

bench:
	$(GO) run ./cmd/bench

# Every Fuzz function of the module, as package:Function (fuzz-check
# fails when one is missing here).
FUZZ_TARGETS ?= autodiff:FuzzTapeOps registry:FuzzParseAttrs internal/safetensors:FuzzRead backward:FuzzConv2D

fuzz-check:
	@missing=$$(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | while read f; do \
		d=$$(dirname $$f | sed 's|^\./||'); \
		for fn in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' $$f); do \
			case " $(FUZZ_TARGETS) " in *" $$d:$$fn "*) ;; *) echo "$$d:$$fn";; esac; done; done); \
	if [ -n "$$missing" ]; then echo "fuzz targets missing from FUZZ_TARGETS in the Makefile:"; echo "$$missing"; exit 1; fi

fuzz: fuzz-check
	@for t in $(FUZZ_TARGETS); do \
		echo "$(GO) test ./$${t%%:*}/ -run '^$$' -fuzz '^$${t##*:}$$' -fuzztime $(FUZZTIME)"; \
		$(GO) test ./$${t%%:*}/ -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) || exit 1; done

OUT ?= out
EPOCHS ?= 20

# Trains the example CNN on the bundled 6000/1000 Fashion-MNIST subset.
demo:
	@mkdir -p $(OUT)
	$(GO) run ./examples/fashionmnist -data examples/fashionmnist/data -epochs 6 \
		-checkpoint $(OUT)/demo.safetensors -plot $(OUT)/demo.png

# The full run (needs `make data`); QAT=1 for quantisation-aware training.
train:
	@mkdir -p $(OUT)
	$(GO) run ./examples/fashionmnist -data /usr/share/datasets/fashion-mnist -epochs $(EPOCHS) \
		$(if $(QAT),-qat) -checkpoint $(OUT)/train$(if $(QAT),-qat).safetensors -plot $(OUT)/train$(if $(QAT),-qat).png

# The model `make train` trained (QAT=1: the QAT one) as ONNX, float32 or
# int8 QDQ: input [N,28,28,1] "input", output logits [N,10] "logits".
# (-resume with -stop-after 1 loads the checkpoint and trains no further.)
export:
	@test -f $(OUT)/train$(if $(QAT),-qat).safetensors || { \
		echo "make export: no $(OUT)/train$(if $(QAT),-qat).safetensors: run make train$(if $(QAT), QAT=1) first"; exit 1; }
	$(GO) run ./examples/fashionmnist -data /usr/share/datasets/fashion-mnist -epochs $(EPOCHS) $(if $(QAT),-qat) \
		-resume -stop-after 1 -checkpoint $(OUT)/train$(if $(QAT),-qat).safetensors -plot '' -progress=false -export $(OUT)/model$(if $(QAT),-qat).onnx

data:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist

# Same-run comparison with PyTorch (needs python3-torch and OpenBLAS:
# `make bench-deps`). THREADS=1|2, WORKLOADS=W1,W2,...,GEMM1024 (default: all).
# Both sides read their workloads from cmd/bench/workloads.json
# (cmd/bench/README.md); the PyTorch side runs in both of its layouts.
THREADS ?= 1
WORKLOADS ?=
BENCH_DIR ?= /tmp/tapegrad-bench
bench-deps:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch libopenblas0-pthread

bench-compare:
	mkdir -p $(BENCH_DIR)
	$(GO) run ./cmd/bench -json -threads $(THREADS) $(if $(WORKLOADS),-workload $(WORKLOADS)) > $(BENCH_DIR)/go.jsonl
	/usr/bin/python3 cmd/bench/torch/bench_torch.py --threads $(THREADS) $(if $(WORKLOADS),--only $(WORKLOADS)) > $(BENCH_DIR)/torch.jsonl
	/usr/bin/python3 cmd/bench/torch/bench_torch.py --threads $(THREADS) --channels-last $(if $(WORKLOADS),--only $(WORKLOADS)) > $(BENCH_DIR)/torch_cl.jsonl
	/usr/bin/python3 cmd/bench/compare.py $(BENCH_DIR)/go.jsonl $(BENCH_DIR)/torch.jsonl $(BENCH_DIR)/torch_cl.jsonl

TRAIN_THREADS ?= 2
EPOCHS_CMP ?= 1
ROUNDS ?= 2
train-compare:
	sh examples/fashionmnist/compare_epochs.sh $(TRAIN_THREADS) $(EPOCHS_CMP) $(ROUNDS)

# Data parallelism on MPI (nn/dist; docs/DISTRIBUTED.md). The MPI code is
# built only with -tags mpi (cgo, OpenMPI found by pkg-config); the tests
# start 2 ranks with mpirun on this machine.
MPIRUN ?= mpirun --allow-run-as-root --oversubscribe
NP ?= 2
NP_THREADS ?= 1
mpi-deps:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev pkg-config gcc

test-mpi:
	$(GO) test -count=1 -tags mpi ./nn/dist/
	$(GO) test -count=1 -tags mpi -run MPI ./examples/fashionmnist/

# The full run (needs `make data`) on NP ranks, global batch 64 as `make train`.
train-mpi:
	@mkdir -p $(OUT)
	$(GO) build -tags mpi -o $(OUT)/fashionmnist-mpi ./examples/fashionmnist
	$(MPIRUN) -np $(NP) $(OUT)/fashionmnist-mpi -dist -threads $(NP_THREADS) -data /usr/share/datasets/fashion-mnist -epochs $(EPOCHS) \
		$(if $(QAT),-qat) -checkpoint $(OUT)/train-mpi$(if $(QAT),-qat).safetensors -plot $(OUT)/train-mpi$(if $(QAT),-qat).png
