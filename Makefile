# Thin wrappers over the reprokit CLI. Set-up on a fresh machine is two commands:
#   make bundle GPU=h100      # run the suite on every stack, one bundle each under bundles/
#   make test                 # the test suite (what CI runs)

# PYTHON: the interpreter reprokit's host venv is made with. With EXECUTOR=local it is the one
# whose triton and torch run the suite (system Python, venv or conda env alike), and the host venv
# sees its packages (reprokit/hostvenv.py), so that nothing it has is installed again.
PYTHON ?= python3
GPU    ?= h100
STACKS ?= all
EXECUTOR ?= auto
LOCAL  := $(filter local,$(EXECUTOR))
VENV   ?= $(if $(LOCAL),.reprokit/host-local,.reprokit/host)
# A GPU host with no network installs the host side from a wheelhouse (reprokit wheelhouse,
# made on a connected machine; docs/offline.md): make bundle GPU=h100 EXECUTOR=local WHEELHOUSE=wheels
WHEELHOUSE ?=
# The extras installed beside the host side: those the wheelhouse was made with (its extras.txt),
# so that the two always agree; without a wheelhouse, docker, gpu, html and test (pyproject.toml:
# the base is what verify, show, diff and report need; docker runs stacks as images, gpu reads
# NVML, html draws report plots, test runs pytest).
EXTRAS ?= $(if $(WHEELHOUSE),$(shell cat $(WHEELHOUSE)/extras.txt 2>/dev/null || echo docker,gpu,html,test),docker,gpu,html,test)
WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
# SHARE=1: bundles fit to send (no hostnames, user names, home paths or GPU serials).
SHARE ?=
# Offline image builds: a local base image and no torch (compile-only stacks).
BASE_IMAGE ?=
WITH_TORCH ?=
BUNDLE ?=

RK := $(VENV)/bin/reprokit
export REPROKIT_BASE_IMAGE := $(BASE_IMAGE)
export REPROKIT_WITH_TORCH := $(WITH_TORCH)

.PHONY: bundle replay verify show images lint test test-unit test-gpu bench-capture bench-stacks bench-trace help

help:
	@echo "make bundle GPU=h100 [STACKS=a,b] [EXECUTOR=auto|docker|venv|local] [BASE_IMAGE=...] [WITH_TORCH=0]"
	@echo "make replay BUNDLE=bundles/x.tgz [REPLAY_STACKS=a,b] | make verify BUNDLE=... | make show BUNDLE=..."
	@echo "make lint: ruff and mypy on reprokit/ (pyproject.toml; docs/lint.md)"
	@echo "make images [STACKS=...] [EXECUTOR=docker|venv] | make test | make test-gpu | make bench-capture | bench-bundle | bench-stacks | bench-replay | bench-trace"

# The host CLI in its own venv: light (no triton, no torch); stacks bring their own compilers.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m reprokit.hostvenv $(VENV) $(if $(LOCAL),--see-this-python)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check \
		$(if $(WHEELHOUSE),--no-index --find-links $(WHEELHOUSE)) -e '.$(if $(strip $(EXTRAS)),[$(strip $(EXTRAS))])'
	touch $@

bundle: $(VENV)/.installed
	$(RK) run --gpu $(GPU) --stacks $(STACKS) --executor $(EXECUTOR) --workers $(WORKERS) --out bundles $(if $(SHARE),--share)

# Rerun a bundle's own plan and kernels: on its own stack, or on REPLAY_STACKS=a,b to compare.
REPLAY_STACKS ?=
replay: $(VENV)/.installed
	$(RK) replay $(BUNDLE) --executor $(EXECUTOR) --workers $(WORKERS) --out bundles $(if $(REPLAY_STACKS),--stacks $(REPLAY_STACKS)) $(if $(SHARE),--share)

# Build stack images (or venvs, EXECUTOR=venv) ahead of a run.
images: $(VENV)/.installed
	$(RK) prepare --stacks $(STACKS) --executor $(EXECUTOR)

verify: $(VENV)/.installed
	$(RK) verify $(BUNDLE)

show: $(VENV)/.installed
	$(RK) show $(BUNDLE)

# -rs: every skip is listed with its reason (CI sets REPROKIT_REQUIRE_* so that none may hide).
# Static gates (docs/lint.md): ruff's chosen rules, then mypy (strict on records and the spine).
# The versions are pinned so that a new release's rules do not fail an unchanged tree.
LINT_TOOLS := ruff==0.17.6 mypy==2.4.1
lint: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check $(LINT_TOOLS)
	$(VENV)/bin/python -m ruff check reprokit
	$(VENV)/bin/python -m mypy

test: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -rs tests

test-unit: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -rs tests/unit

# The GPU tier, on a GPU host: under PYTHON's own triton and torch (the EXECUTOR=local venv sees
# them; WHEELHOUSE=... where there is no network), failing, not skipping, when the GPU, torch or
# triton is missing.
test-gpu:
	$(MAKE) .reprokit/host-local/.installed EXECUTOR=local VENV=.reprokit/host-local
	REPROKIT_REQUIRE_GPU=1 .reprokit/host-local/bin/python -m pytest -q -rs -p no:randomly tests/gpu

bench-capture: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_capture.py --gpu $(GPU)

# Docker executor cost over local for the same suite on a warm image (target <= 1.15x), e.g.
#   make bench-stacks BASE_IMAGE=reprokit-base:bookworm WITH_TORCH=0
BENCH_STACK ?= triton-3.5-cu130
bench-stacks: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_stacks.py --stack $(BENCH_STACK) --gpu $(GPU) --workers $(WORKERS)

# Pack + verify a ~500 MB synthetic capture against `tar czf` + `sha256sum` (target <= 1.2x).
# Kill run, capture, bundle, prepare, replay, sweep and trace at random moments (COUNT each, default
# 50) and count what is left: partial files, mixed outputs, orphan processes (a traced program and
# its children included), next runs that failed, bytes in TMPDIR and in the user's folders. All must be 0.
COUNT ?= 50
.PHONY: bench-faults
bench-faults: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_faults.py --count $(COUNT)

# Replay on a warm stack over a fresh capture of the same plan (target <= 1.1x), and a bisect's
# cost in captures, e.g. make bench-replay BENCH_STACK=triton-3.6-cu130 VERSIONS=3.0.0..3.9.0.
# On a GPU host with no index: make bench-replay EXECUTOR=local WHEELHOUSE=wheels (this python's
# triton and torch, default options, the suite's run timed cold and warm; no venv, no bisect).
VERSIONS ?= 3.0.0..3.9.0
.PHONY: bench-replay
bench-replay: $(VENV)/.installed
	$(if $(LOCAL),$(VENV)/bin/python benchmarks/bench_replay.py --executor local --gpu $(GPU),$(VENV)/bin/python benchmarks/bench_replay.py --stack $(if $(filter command line,$(origin BENCH_STACK)),$(BENCH_STACK),triton-3.6-cu130) --gpu $(GPU) --workers $(WORKERS) --versions $(VERSIONS))

# reduce: the 3.0 crash case and the persistent matmul's register move, each from an empty cache:
# compiles/s against a bare triton.compile of the same candidates in the same run, the reduction
# ratio and the wall time; and bisect --scan one release at a time against several at once
# (REDUCE_CASES=crash,metric,scan; REDUCE_TIME_LIMIT=S caps each reduction).
REDUCE_CASES ?= crash,metric,scan
REDUCE_TIME_LIMIT ?=
.PHONY: bench-reduce
bench-reduce: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_reduce.py --cases $(REDUCE_CASES) --workers $(WORKERS) $(if $(REDUCE_TIME_LIMIT),--time-limit $(REDUCE_TIME_LIMIT))

# Remake every committed example bundle a CPU can make (pinned venv stacks; ONLY='glob,...' for
# some), and list the GPU ones with the device command that remakes each (scripts/examples.py;
# tests/unit/test_examples_current.py fails while a CPU example is stale).
# SLOW=1 adds the 810-point gemm-configs sweeps (about 20 minutes each on two cores).
ONLY ?=
SLOW ?=
.PHONY: examples
examples: $(VENV)/.installed
	$(VENV)/bin/python scripts/examples.py --make $(if $(ONLY),--only '$(ONLY)') $(if $(SLOW),--slow)

.PHONY: bench-bundle
bench-bundle: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_bundle.py

# Slurm's cost for one small run: a one-task fleet against the same replay run directly
# (starts a one-host Slurm with scripts/slurm-local.sh when SLURM_CONF is unset; needs root).
.PHONY: bench-fleet
bench-fleet: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_fleet.py --stack $(BENCH_STACK)

# On a GPU host (triton >= 3.4 and torch beside reprokit): Triton TMA copy configs against
# torch's copy at 4096^2 and 8192^2 (target: the best at least 0.90 of torch's copy).
.PHONY: bench-gpu-copy
bench-gpu-copy:
	$(PYTHON) benchmarks/bench_gpu_copy.py

# A program traced by `reprokit trace --tensors none` over the same program plain (target <= 1.2x);
# the capture that follows is timed apart. Without a GPU both run under Triton's interpreter.
.PHONY: bench-trace
bench-trace: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_trace.py
	$(VENV)/bin/python benchmarks/bench_trace_side.py $(if $(TRACE_PYTHON),--python $(TRACE_PYTHON)) \
		$(if $(BENCH_OUT),--out $(BENCH_OUT)) -- $(or $(TRACE_PROGRAM),benchmarks/trace_program.py)

# On a GPU host: each suite baseline timed with the L2 flush on and off and the idle gap at 0 and
# 3x, to see where each changes the answer (docs/performance.md has the H100's table).
.PHONY: bench-gpu-method
bench-gpu-method:
	$(PYTHON) benchmarks/bench_gpu_method.py

# `reprokit sweep` over 1,200 points vs bare triton.compile of them in 2 processes (target <= 1.25x).
.PHONY: bench-sweep
bench-sweep: $(VENV)/.installed
	$(VENV)/bin/python benchmarks/bench_sweep.py --stack $(BENCH_STACK)
