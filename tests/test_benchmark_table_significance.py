"""benchmarks/table_significance.py runs in its quick mode and writes every figure."""

import json
import subprocess
import sys

from benchmark_helpers import BENCHMARKS


def test_quick_run_writes_every_figure(tmp_path):
    out = tmp_path / "figures.json"
    command = [sys.executable, str(BENCHMARKS / "table_significance.py"), "--quick", "--json", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    record = json.loads(out.read_text())
    figures = record["figures"]
    assert record["benchmark"] == "table_significance"
    assert (figures["rows"], figures["pairs"], figures["inputs"]) == (6, 15, 300)
    assert figures["family_patterns"] == 72_000  # ⌈20 · 15 pairs · 12 columns / 0.05⌉
    for key in ("per_row_s_per_million", "per_pair_s_per_million", "per_pair_over_per_row", "family_s_projected"):
        assert figures[key] > 0, key
