# Set-up and entry points. Everything runs inside .venv, built from this repo's own files.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CORES  ?= all
# pytest-xdist workers of the test targets (auto: one per CPU), each running a test file at a time
TEST_WORKERS ?= auto
# more pytest options for the test targets (CI: --durations=25, each tier's slowest tests)
PYTEST_ARGS ?=
# the full-size runs make test-slow runs (TEST_SLOW="slow and not seed_miniature" leaves the seed papers' out)
TEST_SLOW ?= slow

# Workflow jobs call the `ddrs` command: keep the venv first on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

# torch/torchvision builds that install on this machine kind (README, "Installation").
ARCH := $(shell uname -m)
ifeq ($(ARCH),aarch64)
TORCH := torch==2.9.1 torchvision==0.24.1
else
TORCH := torch==2.14.1 torchvision==0.29.1
endif

.PHONY: setup table1 readme-figure all test test-slow test-bench test-paper-miniature test-seed-miniature test-slurm slurm lint bench clean

$(BIN)/ddrs: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/ddrs

# --rerun-incomplete: the jobs a kill interrupted start again and resume from their partial files;
# then the table's path and the table as the README shows it (five of its eleven radii)
table1: setup
	$(BIN)/snakemake --cores $(CORES) --rerun-incomplete results/tables/table1.csv
	$(BIN)/ddrs show results/tables/table1.csv --radii 0 0.5 1 1.5 2

# The README's figure: the embedded default's Cohen curves (beside table1), copied into docs/figures/
readme-figure: setup
	$(BIN)/snakemake --cores $(CORES) --rerun-incomplete results/tables/table1.csv results/figures/certified_cohen_mnist5k.png
	mkdir -p docs/figures && cp results/figures/certified_cohen_mnist5k.png docs/figures/

all: setup
	$(BIN)/snakemake --cores $(CORES) --rerun-incomplete

# The tests in tiers (README, "Tests"): make test runs the unit tests, the dry-run DAG tests and
# every rule of every configuration's DAG on an overlay sized for the test (tests/configs/tiny/), and
# touches nothing outside the checkout; make test-bench the benchmark scripts' quick runs on the CPU
# (their GPU measurements' code at tiny sizes); make test-slow the full-size runs (the digits DAG at
# its size, the paper miniatures); make test-slurm the SLURM profile on a one-node cluster it starts
# (installs slurm-wlm and munge as root: CI's throw-away machine). Where the cluster cannot start
# the SLURM test is skipped, except in CI (CI=true). Each paper configuration's miniature alone: make
# test-paper-miniature (which CI runs), make test-seed-miniature.
test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not slow and not slurm and not bench" $(PYTEST_ARGS)

test-slow: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "$(TEST_SLOW)" $(PYTEST_ARGS)

test-bench: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m bench $(PYTEST_ARGS)

test-paper-miniature: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "slow and not seed_miniature" tests/test_miniature.py $(PYTEST_ARGS)

test-seed-miniature: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m seed_miniature tests/test_miniature.py $(PYTEST_ARGS)

test-slurm: setup slurm
	$(BIN)/python -m pytest -m slurm $(PYTEST_ARGS)

slurm:
	scripts/slurm_local.sh start || test -z "$$CI"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile rules

bench: setup
	for script in benchmarks/[!_]*.py; do $(BIN)/python $$script; done

clean:
	rm -rf results .snakemake
