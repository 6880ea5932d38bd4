"""Run the Snakemake workflow of this repository from tests, in a scratch working directory."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEFILE = REPO / "Snakefile"


def load_config(name: str = "digits.yaml") -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def write_config(directory: Path, config: dict, name: str = "config.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(copy.deepcopy(config), sort_keys=False))
    return path


def snakemake(
    workdir: Path, *args: str, config: Path | None = None, timeout: float = 3000, snakefile: Path = SNAKEFILE
) -> subprocess.CompletedProcess:
    """``snakemake -s <repo>/Snakefile -d <workdir> ...`` with this interpreter's venv on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir)]
    if config is not None:
        command += ["--configfile", str(config)]
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=workdir)


def job_counts(output: str) -> dict[str, int]:
    """The "Job stats" table of a Snakemake run or dry-run, as {rule: count}."""
    block = output.split("Job stats:", 1)[1]
    counts = {}
    for line in block.splitlines()[3:]:
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if not match:
            break
        counts[match[1]] = int(match[2])
    return counts
