"""benchmarks/sequential_power.py: paired streams, so fixed n and every grid variant are judged on the same draws."""

import json
import subprocess
import sys

from benchmark_helpers import BENCHMARKS


def test_a_quick_run_pairs_every_variant_with_fixed_n_on_the_same_streams(tmp_path):
    out = tmp_path / "figures.json"
    command = [sys.executable, str(BENCHMARKS / "sequential_power.py"), "--quick", "--json", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS)
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())["figures"]
    assert figures.pop("replicates") == 50
    assert set(figures) == {"r1sigma_plus3.5se", "r3sigma_plus3.5se"}
    for case in figures.values():
        fixed = case["fixed n"]
        assert fixed["lost"] == fixed["gained"] == 0 and fixed["draws_mean"] == 100_000
        assert fixed["power_low"] <= case["fixed n, exact"] <= fixed["power_high"]  # the streams are Bernoulli(p_A)
        for name in ("grid ½/½", "grid ¼/¾"):
            plain, futile = case[name], case[f"{name}, futility 0.001"]
            # the power is fixed n's on the same streams, less the streams lost, plus those gained
            assert abs(plain["power"] - (fixed["power"] - plain["lost"] + plain["gained"])) < 1e-12
            assert plain["power_low"] <= plain["power"] <= plain["power_high"]
            # futility never raises a radius on a stream, and stops no later
            assert futile["power"] <= plain["power"] and futile["draws_mean"] <= plain["draws_mean"]
