"""A `source: logs` dataset: given Cohen-format certification logs (e.g. published ones) go through
the same table rules, with no training or certification job."""

from __future__ import annotations

import pandas as pd
from workflow_helpers import job_counts, load_config, snakemake, write_config

from ddrs.experiments import Experiment

#: two published-style logs (Cohen's `time` as H:MM:SS), certifying the same four inputs
FIXED = {
    0.25: [(0, 3, 3, 0.9, 1), (100, 1, 1, 0.3, 1), (200, 7, 2, 0.5, 0), (300, 5, -1, 0.0, 0)],
    0.5: [(0, 3, 3, 1.4, 1), (100, 1, 1, 0.2, 1), (200, 7, 7, 0.6, 1), (300, 5, 5, 0.1, 1)],
}


def write_logs(root):
    for sigma, rows in FIXED.items():
        folder = root / "cohen" / "fs" / f"sigma{sigma:g}"
        folder.mkdir(parents=True)
        lines = ["idx\tlabel\tpredict\tradius\tcorrect\ttime"]
        lines += [f"{i}\t{y}\t{p}\t{r}\t{c}\t0:00:02.5" for i, y, p, r, c in rows]
        (folder / "certify_fixed.tsv").write_text("\n".join(lines) + "\n")


def logs_config(root) -> dict:
    config = load_config()
    config["methods"] = ["cohen"]
    config["grid_search"]["enabled"] = False
    config["datasets"] = {
        "cifar10": {"source": "logs", "logs": str(root), "sigmas": [0.25, 0.5, 1.0], "radii": [0.0, 0.5, 1.0]}
    }
    return config


def test_only_the_logs_that_exist_are_records_and_nothing_is_computed(tmp_path):
    write_logs(tmp_path / "published")
    exp = Experiment(logs_config(tmp_path / "published"))
    records = exp.table_records("table1")
    assert [(r.name, r.sigma0) for r in records] == [("Cohen", 0.25), ("Cohen", 0.5)]  # no σ = 1 log given
    assert records[0].log == f"{tmp_path}/published/cohen/fs/sigma0.25/certify_fixed.tsv"
    assert exp.runs() == [] and exp.figures() == []
    assert [path.rsplit("/", 1)[1] for path in exp.tables()] == ["table1.csv", "appendix_h_cohen.csv"]


def test_the_table_rules_tabulate_given_logs(tmp_path):
    write_logs(tmp_path / "published")
    config = write_config(tmp_path, logs_config(tmp_path / "published"))
    result = snakemake(tmp_path, "--cores", "1", config=config)
    assert result.returncode == 0, result.stderr
    assert job_counts(result.stdout + result.stderr) == {"best_table": 1, "appendix_h_table": 1, "all": 1, "total": 3}
    table = pd.read_csv(tmp_path / "results" / "tables" / "table1.csv")
    # envelope over σ: at r = 0.5, σ = 0.25 certifies idx 0 and 200 (wrong) → 25%; σ = 0.5: idx 0, 200 → 50%
    assert table[["variant", "0.00", "0.50", "1.00"]].values.tolist() == [["Cohen", 100.0, 50.0, 25.0]]
    assert table["ACR_per_log"].item() == (1.4 + 0.2 + 0.6 + 0.1) / 4
