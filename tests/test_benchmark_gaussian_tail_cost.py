"""benchmarks/gaussian_tail_cost.py runs on a small pass and writes every figure."""

import json
import subprocess
import sys

from benchmark_helpers import BENCHMARKS


def test_a_small_run_writes_every_figure(tmp_path):
    out = tmp_path / "figures.json"
    command = [sys.executable, str(BENCHMARKS / "gaussian_tail_cost.py"), "--draws", "64", "--repeats", "2"]
    result = subprocess.run([*command, "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())["figures"]
    assert (figures["draws"], figures["pixels"]) == (64, 784)
    for key in ("randn_ms", "exact_tails_ms", "mlp_forward_ms", "exact_tails_over_randn", "pass_exact_over_randn"):
        assert figures[key] > 0, key
