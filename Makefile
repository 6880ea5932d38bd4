# Set-up and entry points. Everything runs inside .venv, built from this repo's own files.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CORES  ?= all
# pytest-xdist workers of make test (auto: one per CPU), each running a test file at a time
TEST_WORKERS ?= auto

# Workflow jobs call the `ddrs` command: keep the venv first on PATH.
export PATH := $(abspath $(BIN)):$(PATH)

# torch/torchvision builds that install on this machine kind (README, "Installation").
ARCH := $(shell uname -m)
ifeq ($(ARCH),aarch64)
TORCH := torch==2.9.1 torchvision==0.24.1
else
TORCH := torch==2.14.1 torchvision==0.29.1
endif

.PHONY: setup table1 readme-figure all test test-seed-miniature slurm lint bench clean

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

# The tests include a real SLURM run on a one-node cluster started here (needs root). Where it
# cannot start, the SLURM test is skipped, except in CI (CI=true), where it must run. The seed
# papers' miniature run (31 min of 2 CPU cores: it would take CI past its 90 minutes) has a target
# of its own; make test still checks its overlay and its DAG's job counts.
test: setup slurm
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not seed_miniature"

test-seed-miniature: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m seed_miniature tests/test_miniature.py

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
