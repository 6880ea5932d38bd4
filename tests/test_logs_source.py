"""A `source: logs` dataset: given Cohen-format certification logs (e.g. published ones) go through
the same table rules, with no training or certification job."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from workflow_helpers import REPO, job_counts, load_config, snakemake, write_config

from ddrs.analysis.plots import sigma_panels_figure
from ddrs.analysis.tables import best_table
from ddrs.cli import main
from ddrs.pipeline import Experiment

#: two published-style logs (Cohen's `time` as H:MM:SS), certifying the same four inputs
FIXED = {
    0.25: [(0, 3, 3, 0.9, 1), (100, 1, 1, 0.3, 1), (200, 7, 2, 0.5, 0), (300, 5, -1, 0.0, 0)],
    0.5: [(0, 3, 3, 1.4, 1), (100, 1, 1, 0.2, 1), (200, 7, 7, 0.6, 1), (300, 5, 5, 0.1, 1)],
}


def write_logs(root, method="cohen"):
    for sigma, rows in FIXED.items():
        folder = root / method / "fs" / f"sigma{sigma:g}"
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
    records = exp.records.table_records("table1")
    assert [(r.name, r.sigma0) for r in records] == [("Cohen", 0.25), ("Cohen", 0.5)]  # no σ = 1 log given
    assert records[0].log == f"{tmp_path}/published/cohen/fs/sigma0.25/certify_fixed.tsv"
    assert exp.runs() == [] and exp.figures() == []
    issue19 = ["table1_held_out", "comparisons_table1", "comparisons_table1_held_out", "selection_optimism_table1"]
    assert sorted(path.rsplit("/", 1)[1] for path in exp.tables()) == sorted(
        f"{name}.csv" for name in ["table1", "appendix_h_cohen", *issue19]
    )


def test_the_table_rules_tabulate_given_logs(tmp_path):
    write_logs(tmp_path / "published")
    config = write_config(tmp_path, logs_config(tmp_path / "published"))
    result = snakemake(tmp_path, "--cores", "1", config=config)
    assert result.returncode == 0, result.stderr
    per_table = ("best_table", "best_table_held_out", "comparisons_table", "comparisons_held_out_table")
    expected = {**dict.fromkeys((*per_table, "selection_optimism_table", "appendix_h_table"), 1), "all": 1}
    assert job_counts(result.stdout + result.stderr) == {**expected, "total": 7}
    table = pd.read_csv(tmp_path / "results" / "tables" / "table1.csv")
    # envelope over σ: at r = 0.5, σ = 0.25 certifies idx 0 and 200 (wrong) → 25%; σ = 0.5: idx 0, 200 → 50%
    assert table[["variant", "0.00", "0.50", "1.00"]].values.tolist() == [["Cohen", 100.0, 50.0, 25.0]]
    assert table["ACR_per_log"].item() == (1.4 + 0.2 + 0.6 + 0.1) / 4


# --- logs that certify different inputs: an error unless the config or the command opts in -------


def short_log(root):
    """Cohen's published ImageNet σ = 0.25 log stops early (427 of 500): here σ = 0.25 lacks idx 300."""
    write_logs(root)
    log = root / "cohen" / "fs" / "sigma0.25" / "certify_fixed.tsv"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:-1]))
    return log


def test_logs_of_different_inputs_are_an_error_by_default(tmp_path):
    short_log(tmp_path / "published")
    exp = Experiment(logs_config(tmp_path / "published"))
    with pytest.raises(ValueError, match=r"certify different test inputs \(4 vs 3 rows\).*common_inputs: true"):
        best_table(exp.records.table_records("table1"), {"cifar10": [0.0, 0.5]})


def test_common_inputs_cuts_every_log_to_the_shared_inputs_with_a_warning(tmp_path):
    short = short_log(tmp_path / "published")
    config = logs_config(tmp_path / "published")
    config["datasets"]["cifar10"]["common_inputs"] = True
    records = Experiment(config).records.table_records("table1")
    with pytest.warns(
        UserWarning, match=r"cifar10: every log is restricted to the 3 test inputs all 2 logs certify"
    ) as w:
        table = best_table(records, {"cifar10": [0.0, 0.5]}).table
    assert f"{short} 3" in str(w[0].message) and "sigma0.5/certify_fixed.tsv 4" in str(w[0].message)
    # on idx 0, 100, 200: r = 0, σ = 0.5 certifies all three; r = 0.5, σ = 0.5 certifies idx 0 and 200
    assert table[["0.00", "0.50"]].values.tolist() == [[100.0, 200 / 3]]
    # Figure 3's envelope panel counts the same inputs as the table
    with pytest.warns(UserWarning, match="restricted to the 3 test inputs"):
        figure = sigma_panels_figure(records, radii=[0.0, 0.5])
    (envelope,) = [line for line in figure.axes[-1].lines if line.get_label() == "Cohen"]
    assert envelope.get_ydata().tolist() == pytest.approx([100.0, 200 / 3])


def test_ddrs_table_common_inputs_flag(tmp_path, capsys):
    short = short_log(tmp_path)
    full = tmp_path / "cohen" / "fs" / "sigma0.5" / "certify_fixed.tsv"
    out = tmp_path / "t.csv"
    assert main(["table", str(short), str(full), "--label", "a", "b", "--radii", "0", "--out", str(out)]) == 2
    assert f"{full} and {short} certify different test inputs" in capsys.readouterr().err
    with pytest.warns(UserWarning, match=r"^every log is restricted to the 3 test inputs all 2 logs certify"):
        code = main(
            ["table", str(short), str(full), "--label", "a", "b", "--radii", "0", "--common-inputs"]
            + ["--out", str(out)]
        )
    assert code == 0
    assert pd.read_csv(out).set_index("log").loc[["a", "b"], "0.00"].tolist() == [200 / 3, 100.0]


def test_ddrs_plot_refuses_logs_of_different_inputs_unless_cut_to_the_common_ones(tmp_path, capsys):
    """Curves and their envelope compare only on one test set, as the table's rows do."""
    short = short_log(tmp_path)
    full = tmp_path / "cohen" / "fs" / "sigma0.5" / "certify_fixed.tsv"
    out = tmp_path / "curves.png"
    assert main(["plot", str(short), str(full), "--out", str(out)]) == 2
    assert f"{full} and {short} certify different test inputs" in capsys.readouterr().err
    assert not out.exists()
    with pytest.warns(UserWarning, match="restricted to the 3 test inputs") as caught:
        assert main(["plot", str(short), str(full), "--common-inputs", "--out", str(out)]) == 0
    assert out.exists()
    # both logs are certify_fixed.tsv: their legend names the folder that tells them apart, not the
    # whole path, which had been wider than the figure (matplotlib collapsed the axes to nothing)
    assert [str(w.message) for w in caught if "restricted" not in str(w.message)] == []


# --- a logs-only config leaves out what only computing reads ---------------------------------------


def test_the_published_logs_config_validates_and_dry_runs_on_a_log_tree(tmp_path):
    shipped = yaml.safe_load((REPO / "config" / "published_logs.yaml").read_text())
    assert set(shipped) == {"results", "seed", "datasets", "methods"}
    missing = snakemake(tmp_path, "-n", config=REPO / "config" / "published_logs.yaml")
    assert missing.returncode != 0  # not a DAG of nothing
    assert f"datasets.imagenet.logs: {shipped['datasets']['imagenet']['logs']}" in missing.stdout + missing.stderr
    tree = tmp_path / shipped["datasets"]["imagenet"]["logs"]
    for method in ("cohen", "smoothadv"):
        write_logs(tree, method)
    result = snakemake(tmp_path, "-n", config=REPO / "config" / "published_logs.yaml")
    assert result.returncode == 0, result.stderr
    counts = job_counts(result.stdout + result.stderr)
    per_table = ("best_table", "best_table_held_out", "comparisons_table", "comparisons_held_out_table")
    expected = {**dict.fromkeys((*per_table, "selection_optimism_table", "appendix_h_table"), 2), "all": 1}
    assert counts == {**expected, "total": 13}
