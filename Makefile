# Set-up and entry points. Everything runs inside .venv, built from this repo's own files.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CORES  ?= all

# torch/torchvision builds that install on this machine kind (see docs/install.md).
ARCH := $(shell uname -m)
ifeq ($(ARCH),aarch64)
TORCH := torch==2.9.1 torchvision==0.24.1
else
TORCH := torch==2.14.1 torchvision==0.29.1
endif

.PHONY: setup table1 all test lint bench clean

$(BIN)/ddrs: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(BIN)/ddrs

table1: setup
	$(BIN)/snakemake --cores $(CORES) results/tables/table1.csv

all: setup
	$(BIN)/snakemake --cores $(CORES)

test: setup
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile rules

clean:
	rm -rf results .snakemake
