"""benchmarks/sequential_streams.py: every test reads the same streams, so the rows differ by the test alone."""

import json
import subprocess
import sys

from benchmark_helpers import BENCHMARKS


def test_a_quick_run_writes_every_row_and_the_draw_checks_never_cost_more_than_the_looks(tmp_path):
    out = tmp_path / "figures.json"
    command = [sys.executable, str(BENCHMARKS / "sequential_streams.py"), "--quick", "--json", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())["figures"]
    assert figures.pop("replicates") == 20
    assert set(figures) == {"p0.9_r1sigma", "p0.99_r2sigma", "p0.9999_r3sigma", "p1_r3sigma"}
    for case in figures.values():
        # the same blocks checked at every draw stop no later than at their ends, on every stream
        assert case["grid"] <= case["grid, at the looks"]
        assert case["wald"] < case["grid"] <= case["betting_cp"]
        assert case["grid, futility 0.001"] <= case["grid"]  # futility stops no later, stream by stream
        assert case["voracek, 1/(2α)"] <= case["voracek, 2/α"]  # the published level is the looser one
    assert figures["p0.9_r1sigma"]["grid"] < figures["p0.9_r1sigma"]["grid, at the looks"]  # misses: a peak inside
    assert figures["p1_r3sigma"]["grid"] == figures["p1_r3sigma"]["grid, at the looks"]  # no miss, nothing between
