"""benchmarks/audit_cost.py runs on a small model and writes every figure: seconds per certificate of each
attack beside the certification's, and their ratios."""

import json
import subprocess
import sys

from benchmark_helpers import BENCHMARKS


def test_a_small_run_writes_every_figure(tmp_path):
    out = tmp_path / "figures.json"
    sizes = ["--inputs", "4", "--n", "200", "--k", "5", "--steps", "2", "--draws", "2", "--line-points", "2"]
    command = [sys.executable, str(BENCHMARKS / "audit_cost.py"), "--arch", "mlp", "--dataset", "digits", *sizes]
    command += ["--predict-n", "50", "--rounds", "2", "--json", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    figures = json.loads(out.read_text())["figures"]
    assert (figures["arch"], figures["inputs"], figures["k"], figures["rounds"]) == ("mlp", 4, 5, 2)
    parts = [f"{part}{suffix}_s" for part in ("pgd", "line", "predict") for suffix in ("", "_ds")]
    ratios = ("audit_fixed_over_certify_fixed", "audit_ds_over_certify_ds")
    for key in (*parts, "certify_fixed_s", "certify_ds_s", *ratios):
        assert figures[key] > 0, key
    low, high = figures["audit_ds_ratio_range"]
    assert low <= figures["audit_ds_over_certify_ds"] <= high
    assert "x certify_fixed" in result.stdout and "x certify_ds" in result.stdout
