"""``ddrs table`` and ``ddrs plot`` end to end, in process, on hand-written Cohen-format logs."""

from __future__ import annotations

import pandas as pd
import pytest

from ddrs.analysis import plots
from ddrs.analysis.log_record import labelled_logs
from ddrs.cli import main

HEADER = "idx\tlabel\tpredict\tradius\tcorrect\ttime"
# Cohen et al.'s published format: time as H:MM:SS.ffffff
PUBLISHED = [
    "0\t3\t3\t0.612\t1\t0:00:01.532781",
    "1\t8\t8\t0.108\t1\t0:00:01.498277",
    "2\t8\t1\t0.901\t0\t0:00:01.501002",
    "3\t0\t-1\t0.0\t0\t0:00:01.600000",
]
OURS = [
    "0\t3\t3\t0.3\t1\t2.0",
    "1\t8\t8\t0.7\t1\t2.0",
    "2\t8\t8\t0.26\t1\t2.0",
    "3\t0\t-1\t0.0\t0\t2.0",
]


@pytest.fixture
def logs(tmp_path):
    published, ours = tmp_path / "noise_0.25.tsv", tmp_path / "ds.tsv"
    published.write_text("\n".join([HEADER, *PUBLISHED]) + "\n")
    ours.write_text("\n".join([HEADER, *OURS]) + "\n")
    return published, ours


def test_table_writes_rows_envelope_and_prints_markdown(logs, tmp_path, capsys):
    out = tmp_path / "tables" / "table.csv"
    code = main(
        ["table", *map(str, logs), "--radii", "0", "0.25", "0.5", "--label", "Cohen", "Cohen-DS", "--out", str(out)]
    )
    assert code == 0
    table = pd.read_csv(out)
    assert table["log"].tolist() == ["Cohen", "Cohen-DS", "envelope"]
    assert table[["0.00", "0.25", "0.50"]].to_numpy().tolist() == [[50, 25, 25], [75, 75, 25], [75, 75, 25]]
    assert table["ACR_per_log"].tolist() == pytest.approx([0.72 / 4, 1.26 / 4, 1.26 / 4])
    # per input best of the two: 0.612, 0.7, 0.26, 0 (input 2 is wrong in the published log)
    assert table["ACR_per_input_best"].tolist() == pytest.approx([0.72 / 4, 1.26 / 4, 1.572 / 4])
    # exact 95% Clopper–Pearson of 2 of 4 inputs, and a bootstrap interval around each ACR
    assert (table.loc[0, "0.00_low"], table.loc[0, "0.00_high"]) == pytest.approx((6.7585, 93.2414), abs=1e-3)
    assert (table["ACR_per_log_low"] <= table["ACR_per_log"]).all()
    assert (table["ACR_per_log"] <= table["ACR_per_log_high"]).all()
    assert out.with_suffix(".md").exists() and out.with_suffix(".tex").exists()
    printed = capsys.readouterr().out
    assert printed == out.with_suffix(".md").read_text()
    assert "| envelope |" in printed and "0.315 [" in printed and "**" not in printed


def test_table_default_grid_and_stem_labels(logs, tmp_path):
    out = tmp_path / "t.csv"
    assert main(["table", *map(str, logs), "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["log"].tolist() == ["noise_0.25", "ds", "envelope"]
    radii = [f"{r:.2f}" for r in [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5]]
    metrics = [*radii, "ACR_per_log", "ACR_per_input_best"]
    assert list(table.columns)[1:] == metrics + [f"{c}_{end}" for c in metrics for end in ("low", "high")]


def test_logs_of_one_file_name_are_labelled_by_the_folders_that_tell_them_apart():
    logs = ["/runs/a/mnist/cohen/fs/sigma0.5/certify_fixed.tsv", "/runs/a/mnist/cohen/ds/sigma0.5/certify_fixed.tsv"]
    assert list(labelled_logs([*logs, "/runs/b/cohen.tsv"])) == [
        "fs/sigma0.5/certify_fixed",
        "ds/sigma0.5/certify_fixed",
        "cohen",
    ]
    assert list(labelled_logs(["x/certify_fixed.tsv", "certify_fixed.tsv"])) == ["x/certify_fixed", "certify_fixed"]
    with pytest.raises(ValueError, match="labels must be distinct"):
        labelled_logs(["same.tsv", "same.tsv"])


def test_table_radii_finer_than_two_decimals_keep_their_own_columns(logs, tmp_path):
    # ours certifies 0.3, 0.7 and 0.26: three of four inputs at 0.255 and 0.26, two at 0.3; with two
    # decimals alone 0.255 and 0.26 both named column "0.26", and one overwrote the other
    out = tmp_path / "t.csv"
    assert main(["table", str(logs[1]), "--radii", "0.255", "0.26", "0.3", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert table.loc[0, ["0.255", "0.26", "0.30"]].tolist() == [75, 75, 50]


def test_table_seed_alpha_and_bold_options(logs, tmp_path, capsys):
    run = lambda *options: main(["table", *map(str, logs), "--radii", "0", "--out", str(tmp_path / "t.csv"), *options])  # noqa: E731
    assert run("--seed", "1", "--n-boot", "200") == 0
    first = pd.read_csv(tmp_path / "t.csv")
    assert run("--seed", "1", "--n-boot", "200") == 0
    pd.testing.assert_frame_equal(first, pd.read_csv(tmp_path / "t.csv"))
    capsys.readouterr()
    assert run("--seed", "2", "--n-boot", "200", "--alpha", "0.5", "--bold") == 0
    narrow = pd.read_csv(tmp_path / "t.csv")
    assert (narrow["0.00_high"] - narrow["0.00_low"] < first["0.00_high"] - first["0.00_low"]).all()
    # four inputs reject nothing: both logs' cells of 0.00 and ACR_per_log are bold, the envelope never
    printed = capsys.readouterr().out
    assert printed == (tmp_path / "t.md").read_text()
    assert [line.count("**") for line in printed.splitlines()[2:]] == [4, 4, 0]
    assert "| **75.0 [" in printed and "\\textbf" in (tmp_path / "t.tex").read_text()
    assert run("--seed", "2", "--n-boot", "200", "--alpha", "0.5") == 0
    plain = capsys.readouterr().out
    cells = lambda text: [[c.strip() for c in line.split("|")] for line in text.splitlines()[2:]]  # noqa: E731
    assert cells(plain) == cells(printed.replace("**", ""))  # the same cells, none bold
    assert "**" not in plain and "**" not in (tmp_path / "t.md").read_text()
    assert "\\textbf" not in (tmp_path / "t.tex").read_text()
    assert run("--alpha", "1.5") == 2
    assert "alpha must lie in (0, 1), got 1.5" in capsys.readouterr().err


def test_table_missing_log_is_a_clear_error(logs, tmp_path, capsys):
    missing = tmp_path / "nowhere.tsv"
    assert main(["table", str(logs[0]), str(missing), "--out", str(tmp_path / "t.csv")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("ddrs table: error:") and "nowhere.tsv" in error
    assert not (tmp_path / "t.csv").exists()


def test_table_corrupt_log_is_a_clear_error(logs, tmp_path, capsys):
    corrupt = tmp_path / "corrupt.tsv"
    corrupt.write_text(HEADER + "\n0\t3\t3\tnot-a-radius\t1\t1.0\n")
    assert main(["table", str(corrupt), "--out", str(tmp_path / "t.csv")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("ddrs table: error:") and "corrupt.tsv" in error


def test_table_of_a_directory_or_a_header_only_log_names_it(logs, tmp_path, capsys):
    assert main(["table", str(tmp_path), "--out", str(tmp_path / "t.csv")]) == 2
    assert f"ddrs table: error: {tmp_path} is a directory, not a certification log" in capsys.readouterr().err
    empty = tmp_path / "empty.tsv"
    empty.write_text(HEADER + "\n")
    for extra in ([], ["--common-inputs"]):
        assert main(["table", str(logs[0]), str(empty), *extra, "--out", str(tmp_path / "t.csv")]) == 2
        assert f"ddrs table: error: {empty}: the log has no rows (a header only)" in capsys.readouterr().err
    assert not (tmp_path / "t.csv").exists()


def test_table_label_count_must_match(logs, tmp_path, capsys):
    assert main(["table", *map(str, logs), "--label", "only-one", "--out", str(tmp_path / "t.csv")]) == 2
    assert "1 label(s) for 2 log(s)" in capsys.readouterr().err


def test_plot_writes_png_and_pdf(logs, tmp_path, capsys, monkeypatch):
    drawn = []  # every figure the command saves, through the real save_figure
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda figure, path: drawn.append(figure) or save(figure, path))
    out = tmp_path / "figs" / "curves.png"
    assert main(["plot", *map(str, logs), "--label", "Cohen", "Cohen-DS", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert out.with_suffix(".pdf").read_bytes()[:4] == b"%PDF"
    assert capsys.readouterr().out.split() == [str(out), str(out.with_suffix(".pdf"))]
    banded = out.read_bytes()
    assert main(["plot", *map(str, logs), "--label", "Cohen", "Cohen-DS", "--no-bands", "--out", str(out)]) == 0
    # one Clopper–Pearson band per log, then none: the same three curves (two logs and the envelope)
    (with_bands,), (without,) = (figure.axes for figure in drawn)
    assert len(with_bands.collections) == 2 and len(without.collections) == 0
    assert [line.get_ydata().tolist() for line in without.get_lines()] == [
        line.get_ydata().tolist() for line in with_bands.get_lines()
    ]
    assert len(without.get_lines()) == 3 and out.read_bytes() != banded


def test_plot_corrupt_log_is_a_clear_error(tmp_path, capsys):
    corrupt = tmp_path / "half.tsv"
    corrupt.write_text("idx\tlabel\tpredict\n0\t1\t1\n")
    assert main(["plot", str(corrupt), "--out", str(tmp_path / "c.png")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("ddrs plot: error:") and "half.tsv" in error and "missing column" in error
    assert not (tmp_path / "c.png").exists()


def test_table_compares_every_log_with_a_baseline(logs, tmp_path, capsys):
    out = tmp_path / "t.csv"
    code = main(["table", *map(str, logs), "--radii", "0", "0.25", "--baseline", "noise_0.25", "--out", str(out)])
    assert code == 0
    comparisons = pd.read_csv(tmp_path / "t_comparisons.csv")
    assert comparisons[["log", "baseline"]].values.tolist() == [["ds", "noise_0.25"]]
    # at r=0.25 ds certifies inputs 0, 1, 2, the published log only input 0: 2 discordant pairs, p = 0.5
    row = comparisons.iloc[0]
    assert (row["0.25"], row["0.25_better"], row["0.25_worse"], row["0.25_p"]) == (50.0, 2, 0, 0.5)
    assert row["0.25_p_holm"] == 1.0  # Holm over the two radii: 2 · 0.5
    assert "McNemar" in capsys.readouterr().out
    assert main(["table", *map(str, logs), "--baseline", "nope", "--out", str(out)]) == 2
    assert "baseline 'nope' is not one of the logs" in capsys.readouterr().err
