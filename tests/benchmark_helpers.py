"""Run a benchmark script of this repository from tests, in its quick mode on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"


def quick_cpu_record(script: str, out: Path) -> dict:
    """The JSON record ``benchmarks/<script> --quick --device cpu`` writes to ``out``; the run must succeed."""
    command = [sys.executable, str(BENCHMARKS / script), "--quick", "--device", "cpu", "--json", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text())
