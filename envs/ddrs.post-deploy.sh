#!/usr/bin/env bash
# Snakemake runs this inside the freshly created conda environment, from the workflow's working
# directory (the repository root): install this checkout's ddrs library into it.
set -euo pipefail
python -m pip install --no-deps "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
