"""Tables from small hand-written certification logs: every number below is computed by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ddrs.analysis import (
    RADII_CIFAR10,
    RADII_IMAGENET,
    RADII_L1,
    LogRecord,
    acr,
    best_table,
    best_table_caption,
    certified_accuracy,
    easy_inputs,
    envelope,
    grid_search_table,
    log_table,
    memory_table,
    per_setting_table,
    per_sigma_table,
    runtime_table,
    to_latex,
    to_markdown,
    write_table,
)
from ddrs.analysis.render import comparisons_caption
from ddrs.errors import LogFormatError
from ddrs.logs.certification_log import read_log

HEADER = ["idx", "label", "predict", "radius", "correct", "time"]
RADII = [0.0, 0.25, 0.5, 0.75]
COLUMNS = ["0.00", "0.25", "0.50", "0.75"]

# Five test inputs per log: idx label predict radius correct (time 1.0 s unless given).
FS_025 = """0 1 1 0.30 1
1 2 2 0.10 1
2 3 3 0.60 1
3 4 5 0.40 0
4 5 -1 0.00 0"""  # 60 40 20 0, ACR 1.0/5 = 0.2
FS_050 = """0 1 1 0.80 1
1 2 2 0.25 1
2 3 7 0.90 0
3 4 -1 0.00 0
4 5 5 0.50 1"""  # 60 60 40 20, ACR 1.55/5 = 0.31
DS_025_K100 = """0 1 1 0.50 1
1 2 2 0.20 1
2 3 3 0.70 1
3 4 4 0.30 1
4 5 -1 0.00 0"""  # 80 60 40 0, ACR 1.7/5 = 0.34
DS_025_K200 = """0 1 1 0.60 1
1 2 3 0.20 0
2 3 3 0.80 1
3 4 4 0.35 1
4 5 -1 0.00 0"""  # 60 60 40 20, ACR 1.75/5 = 0.35
DS_050_K100 = """0 1 1 1.00 1
1 2 2 0.25 1
2 3 9 0.50 0
3 4 -1 0.00 0
4 5 5 0.75 1"""  # 60 60 40 40, ACR 2.0/5 = 0.4


def write_log(directory, name: str, rows: str, extra: tuple[str, ...] = (), time: str = "1.0"):
    """Write a TSV log from whitespace-separated rows (``time`` appended when not in ``extra``)."""
    lines = ["\t".join([*HEADER, *extra])]
    for row in rows.strip().splitlines():
        values = row.split()
        lines.append("\t".join([*values[:5], time, *values[5:]]))
    path = directory / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def cohen_records(tmp_path):
    """Cohen (σ 0.25, 0.5), Cohen-DS (σ₀ 0.25 K 100/200, σ₀ 0.5 K 100), Cohen-DS² (σ₀ 0.5 K 100)."""
    log = lambda name, rows: write_log(tmp_path, name, rows)  # noqa: E731
    return [
        LogRecord(log("fs050.tsv", FS_050), "cifar10", "cohen", "fs", "fs", 0.5),
        LogRecord(log("fs025.tsv", FS_025), "cifar10", "cohen", "fs", "fs", 0.25),
        LogRecord(log("ds025_200.tsv", DS_025_K200), "cifar10", "cohen", "fs", "ds", 0.25, K=200),
        LogRecord(log("ds025_100.tsv", DS_025_K100), "cifar10", "cohen", "fs", "ds", 0.25, K=100),
        LogRecord(log("ds050_100.tsv", DS_050_K100), "cifar10", "cohen", "fs", "ds", 0.5, K=100),
        LogRecord(log("ds2_050_100.tsv", FS_050), "cifar10", "cohen", "ds", "ds", 0.5, K=100),
    ]


def test_certified_accuracy_counts_correct_rows_with_radius_at_least_r(tmp_path):
    log = read_log(write_log(tmp_path, "a.tsv", FS_025))
    curve = certified_accuracy(log, [0.0, 0.3, 0.31, 0.6, 0.61])
    # the wrong prediction with radius 0.4 and the abstention never count; r == radius counts
    assert curve.tolist() == [0.6, 0.4, 0.2, 0.2, 0.0]
    assert curve.index.name == "radius"
    assert acr(log) == pytest.approx(1.0 / 5)


def test_envelope_takes_the_best_curve_per_radius_and_first_on_ties():
    a = pd.Series([0.6, 0.4, 0.0], index=[0.0, 0.5, 1.0])
    b = pd.Series([0.6, 0.5, 0.1], index=[0.0, 0.5, 1.0])
    best, winner = envelope({"a": a, "b": b})
    assert best.tolist() == [0.6, 0.5, 0.1]
    assert winner.tolist() == ["a", "b", "b"]


def test_best_table_rows_are_envelopes_over_sigma_and_k(cohen_records):
    result = best_table(cohen_records, radii=RADII)
    table = result.table.set_index("variant")
    acrs = ["ACR_per_log", "ACR_per_input_best"]
    bounds = [f"{c}_{end}" for c in [*COLUMNS, *acrs] for end in ("low", "high")]
    assert list(result.table.columns) == ["dataset", "variant", "train", "certify", *COLUMNS, *acrs, *bounds]
    assert list(table.index) == ["Cohen", "Cohen-DS", "Cohen-DS²"]
    assert table.loc["Cohen", ["train", "certify"]].tolist() == ["FS", "FS"]
    assert table.loc["Cohen-DS", ["train", "certify"]].tolist() == ["FS", "DS"]
    assert table.loc["Cohen-DS²", ["train", "certify"]].tolist() == ["DS", "DS"]
    assert table.loc["Cohen", COLUMNS].tolist() == pytest.approx([60, 60, 40, 20])
    assert table.loc["Cohen-DS", COLUMNS].tolist() == pytest.approx([80, 60, 40, 40])
    assert table.loc["Cohen-DS²", COLUMNS].tolist() == pytest.approx([60, 60, 40, 20])
    # per-log ACR of a row: the best ACR over its candidate logs
    assert table["ACR_per_log"].tolist() == pytest.approx([0.31, 0.40, 0.31])
    # per-input-best ACR: each input's best radius over the same logs, averaged. Cohen:
    # max(0.30, 0.80), max(0.10, 0.25), max(0.60, wrong), 0, max(abstain, 0.50) → 2.15 / 5
    # Cohen-DS: 1.00, 0.25, 0.80, 0.35, 0.75 → 3.15 / 5; Cohen-DS² has one log: both conventions agree
    assert table["ACR_per_input_best"].tolist() == pytest.approx([0.43, 0.63, 0.31])


def test_winner_table_names_the_setting_of_each_cell(cohen_records):
    winners = best_table(cohen_records, radii=RADII).winners
    assert list(winners.columns) == ["dataset", "variant", "metric", "radius", "sigma0", "K", "value"]
    ds = winners[winners["variant"] == "Cohen-DS"]
    cells = ds[ds["metric"] == "certified_accuracy"]
    assert cells["radius"].tolist() == RADII
    # r=0: σ₀ 0.25 K 100 alone reaches 80; r=0.25, 0.5: three-way tie, first by (σ₀, K) wins;
    # r=0.75: only σ₀ 0.5 K 100 reaches 40
    assert list(zip(cells["sigma0"], cells["K"], strict=True)) == [(0.25, 100), (0.25, 100), (0.25, 100), (0.5, 100)]
    assert cells["value"].tolist() == pytest.approx([80, 60, 40, 40])
    best_acr = ds[ds["metric"] == "ACR_per_log"].iloc[0]
    assert (best_acr["sigma0"], best_acr["K"], best_acr["value"]) == (0.5, 100, pytest.approx(0.4))
    fs = winners[(winners["variant"] == "Cohen") & (winners["metric"] == "certified_accuracy")]
    assert fs["sigma0"].tolist() == [0.25, 0.5, 0.5, 0.5]
    assert fs["K"].isna().all()


def test_best_over_k_at_one_sigma(tmp_path):
    records = [
        LogRecord(write_log(tmp_path, "k100.tsv", DS_025_K100), "mnist", "macer", "fs", "ds", 0.25, K=100),
        LogRecord(write_log(tmp_path, "k200.tsv", DS_025_K200), "mnist", "macer", "fs", "ds", 0.25, K=200),
    ]
    result = best_table(records, radii=RADII)
    assert result.table["variant"].tolist() == ["MACER-DS"]
    assert result.table[COLUMNS].iloc[0].tolist() == pytest.approx([80, 60, 40, 20])
    assert result.table["ACR_per_log"].iloc[0] == pytest.approx(0.35)
    assert result.winners["K"].tolist() == [100, 100, 100, 200, 200]


def test_default_radius_grids_follow_the_paper(tmp_path):
    cifar = LogRecord(write_log(tmp_path, "c.tsv", FS_025), "cifar10", "cohen")
    imagenet = LogRecord(write_log(tmp_path, "i.tsv", FS_050), "imagenet", "cohen")
    yang = LogRecord(write_log(tmp_path, "y.tsv", FS_050), "cifar10", "uniform", sigma0=0.5)
    assert RADII_CIFAR10 == (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5)
    assert RADII_IMAGENET == (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
    table = best_table([cifar, imagenet]).table
    radius_columns = [c for c in table.columns if c[0].isdigit() and "_" not in c]
    assert radius_columns == sorted({f"{r:.2f}" for r in RADII_CIFAR10 + RADII_IMAGENET}, key=float)
    # ImageNet has no 1.25 column of its own, CIFAR-10 no 3.00
    assert math.isnan(table.set_index("dataset").loc["imagenet", "1.25"])
    l1 = best_table([yang]).table
    assert [c for c in l1.columns if c[0].isdigit() and "_" not in c] == [f"{r:.2f}" for r in RADII_L1]


def test_table4_names_and_caption_state_the_uniform_convention(tmp_path):
    records = [
        LogRecord(write_log(tmp_path, "y.tsv", FS_050), "cifar10", "uniform", "fs", "fs", 0.5),
        LogRecord(write_log(tmp_path, "yds.tsv", DS_050_K100), "cifar10", "uniform", "fs", "ds", 0.5, K=100),
    ]
    table = best_table(records).table
    assert table["variant"].tolist() == ["YANG", "YANG-DS"]
    assert table.loc[1, ["0.00", "0.75", "1.00", "1.50"]].tolist() == pytest.approx([60, 40, 20, 0])
    caption = best_table_caption("YANG", norm=1, uniform_conventions={"cifar10": "yang_std"})
    assert "Yang et al.'s σ" in caption and "λ = σ√3" in caption
    assert "half-width λ" in best_table_caption("YANG", norm=1, uniform_conventions={"imagenet": "half_width"})
    both = best_table_caption("YANG", norm=1, uniform_conventions={"cifar10": "yang_std", "imagenet": "half_width"})
    assert "on cifar10, Yang et al.'s σ" in both and "on imagenet, the half-width λ" in both
    with pytest.raises(ValueError, match="uniform conventions"):
        best_table_caption("YANG", norm=1, uniform_conventions={"cifar10": "std"})


def test_per_setting_table_lists_every_sigma_and_k(cohen_records):
    table = per_setting_table(cohen_records, radii=RADII)
    ks = table["K"].astype(object).where(table["K"].notna(), None)
    keys = list(zip(table["variant"], table["sigma0"], ks, strict=True))
    assert keys == [
        ("Cohen", 0.25, None),
        ("Cohen", 0.5, None),
        ("Cohen-DS", 0.25, 100),
        ("Cohen-DS", 0.25, 200),
        ("Cohen-DS", 0.5, 100),
        ("Cohen-DS²", 0.5, 100),
    ]
    assert table.loc[3, COLUMNS].tolist() == pytest.approx([60, 60, 40, 20])
    assert table.loc[3, "ACR"] == pytest.approx(0.35)


def test_grid_search_table_compares_at_each_sigma_then_envelopes(tmp_path):
    log = lambda name, rows: write_log(tmp_path, name, rows)  # noqa: E731
    records = [
        LogRecord(log("f25.tsv", FS_025), "cifar10", "smoothadv", "fs", "fs", 0.25),
        LogRecord(log("g25.tsv", DS_025_K200), "cifar10", "smoothadv", "fs", "gds", 0.25, samples=4),
        LogRecord(log("d25.tsv", DS_025_K100), "cifar10", "smoothadv", "fs", "ds", 0.25, K=100),
        LogRecord(log("f50.tsv", FS_050), "cifar10", "smoothadv", "fs", "fs", 0.5),
        LogRecord(log("d50.tsv", DS_050_K100), "cifar10", "smoothadv", "fs", "ds", 0.5, K=100),
    ]
    table = grid_search_table(records, radii=RADII)
    assert list(zip(table["sigma0"], table["variant"], strict=True)) == [
        ("0.25", "SmoothAdv"),
        ("0.25", "SmoothAdv-DS"),
        ("0.25", "SmoothAdv-GDS-n-4"),
        ("0.5", "SmoothAdv"),
        ("0.5", "SmoothAdv-DS"),
        ("envelope", "SmoothAdv"),
        ("envelope", "SmoothAdv-DS"),
        ("envelope", "SmoothAdv-GDS-n-4"),
    ]
    assert table.loc[2, COLUMNS].tolist() == pytest.approx([60, 60, 40, 20])
    assert table.loc[6, COLUMNS].tolist() == pytest.approx([80, 60, 40, 40])


def test_published_cohen_log_time_format_and_runtime_table(tmp_path):
    published = write_log(tmp_path, "noise_0.25.tsv", FS_025, time="0:00:01.500000")
    tailored = write_log(tmp_path, "ds.tsv", DS_025_K100, time="2.0")
    sigma_log = tmp_path / "sigma_opt.tsv"  # inputs 0-4 and 9, which the certification log leaves out
    times = [1.0, 2.0, 3.0, 4.0, 5.0, 100.0]
    sigma_log.write_text(
        "idx\tc_a\tsigma_K100\ttime\n"
        + "".join(f"{i}\t1\t0.3\t{t}\n" for i, t in zip([0, 1, 2, 3, 4, 9], times, strict=True))
    )
    records = [
        LogRecord(published, "cifar10", "cohen", sigma0=0.25),
        LogRecord(tailored, "cifar10", "cohen", "fs", "ds", 0.25, K=100, sigma_log=sigma_log),
    ]
    assert read_log(published)["time"].tolist() == [1.5] * 5
    table = runtime_table(records)
    assert table["certify_s"].tolist() == pytest.approx([1.5, 2.0])
    # the σ log's mean time over the certified inputs 0-4
    assert table["extra_s"].tolist() == pytest.approx([0.0, 3.0])
    assert table["total_s"].tolist() == pytest.approx([1.5, 5.0])
    summary = runtime_table([*records, records[0]], per_variant=True)
    assert summary["variant"].tolist() == ["Cohen", "Cohen-DS"]
    assert summary["total_s"].tolist() == pytest.approx([1.5, 5.0])
    assert best_table(records[:1], radii=RADII).table[COLUMNS].iloc[0].tolist() == pytest.approx([60, 40, 20, 0])


def test_memory_table_counts_actions(tmp_path):
    rows = """0 1 1 0.5 1 kept 0.5
1 2 2 0.2 1 moved_in 0.4
2 3 3 0.1 1 shrunk 0.3
3 4 4 0.3 1 kept 0.3
4 5 -1 0.0 0 kept 0.0"""
    path = write_log(tmp_path, "mem.tsv", rows, extra=("memory_action", "radius_before"))
    table = memory_table([LogRecord(path, "digits", "cohen", "fs", "ds", 0.25, K=10)])
    assert table[["inputs", "kept", "moved_in", "shrunk"]].iloc[0].tolist() == [5, 3, 1, 1]
    plain = LogRecord(write_log(tmp_path, "plain.tsv", FS_025), "digits", "cohen")
    with pytest.raises(LogFormatError, match="plain.tsv"):
        memory_table([plain])


def test_log_table_has_envelope_row_and_winners(tmp_path):
    logs = {"a": write_log(tmp_path, "a.tsv", FS_025), "b": write_log(tmp_path, "b.tsv", FS_050)}
    result = log_table(logs, RADII)
    assert result.table["log"].tolist() == ["a", "b", "envelope"]
    # a: 0.30, 0.10, 0.60, 0, 0; b: 0.80, 0.25, wrong, 0, 0.50 → per input best 2.15 / 5
    assert result.table["ACR_per_input_best"].tolist() == pytest.approx([0.2, 0.31, 0.43])
    assert result.table.loc[2, COLUMNS].tolist() == pytest.approx([60, 60, 40, 20])
    assert result.winners["log"].tolist() == ["a", "b", "b", "b", "b"]


def test_logs_of_different_test_inputs_are_refused(tmp_path):
    short = "\n".join(FS_050.splitlines()[:3])
    records = [
        LogRecord(write_log(tmp_path, "full.tsv", FS_025), "cifar10", "cohen", sigma0=0.25),
        LogRecord(write_log(tmp_path, "short.tsv", short), "cifar10", "cohen", sigma0=0.5),
    ]
    with pytest.raises(ValueError, match="short.tsv"):
        best_table(records, radii=RADII)


def test_one_row_cannot_mix_modes(tmp_path):
    path = write_log(tmp_path, "a.tsv", FS_025)
    records = [
        LogRecord(path, "cifar10", "cohen", "fs", "fs", 0.25, variant="Mine"),
        LogRecord(path, "cifar10", "cohen", "fs", "ds", 0.25, K=1, variant="Mine"),
    ]
    with pytest.raises(ValueError, match="mixes"):
        best_table(records, radii=RADII)
    with pytest.raises(ValueError, match="certify_mode"):
        LogRecord(path, "cifar10", "cohen", "fs", "dds")


def test_easy_inputs_are_those_whose_true_class_p_a_is_above_one_half(tmp_path):
    # Sun et al. Table 1: easy p_A > 0.5, hard p_A < 0.5. Four of seven inputs saturate at the same
    # p̲A (every draw correct), so a median split would call every input hard
    rows = """0 1 1 0.5 1 0.99993
1 2 2 0.1 1 0.50
2 3 4 0.3 0 0.80
3 4 4 0.9 1 0.99993
4 5 5 0.7 1 0.99993
5 6 6 0.2 1 0.52
6 7 7 0.8 1 0.99993"""
    reference = read_log(write_log(tmp_path, "ref.tsv", rows, extra=("p_a_lower",)))
    # true-class p̲A: 0.99993, 0.50 (radius 0), 0 (wrong), 0.99993, 0.99993, 0.52, 0.99993
    expected = {0: True, 1: False, 2: False, 3: True, 4: True, 5: True, 6: True}
    assert easy_inputs(reference).to_dict() == expected


def test_write_table_renders_csv_markdown_latex_with_best_in_bold(cohen_records, tmp_path):
    table = best_table(cohen_records, radii=RADII).table
    caption = best_table_caption("Cohen", selection="test")
    paths = write_table(table, tmp_path / "out" / "table1.csv", caption=caption, label="tab:cohen")
    assert sorted(p.name for p in paths.values()) == ["table1.csv", "table1.md", "table1.tex"]
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]  # no temp files left
    back = pd.read_csv(paths["csv"])
    pd.testing.assert_frame_equal(back, table, check_dtype=False)
    markdown = paths["md"].read_text()
    # each cell reads value [95% interval]; under test selection Cohen (two logs) and Cohen-DS (three)
    # were chosen on the inputs they report, so they are not tested and Cohen-DS² (one log) has no
    # tested rival: nothing is bold, and the caption says why
    assert "| 80.0 [28.4, 99.5] |" in markdown and "**" not in markdown
    assert "| 60.0 [14.7, 94.7] | 40.0 [5.3, 85.3] |" in markdown
    assert "0.400 [" in markdown and "ACR_per_input_best" in markdown and "_low" not in markdown
    assert "oracle" in markdown  # the caption says what the paper's ACR convention is
    assert "_held_out tables carry the tests" in markdown
    assert markdown == to_markdown(table, caption=caption)
    latex = paths["tex"].read_text()
    assert r"\textbf" not in latex and r"\caption{" in latex and r"ACR\_per\_log" in latex
    assert r"Cohen-DS\textsuperscript{2}" in latex and r"(\%)" in latex and "tab:cohen" in latex
    assert latex == to_latex(table, caption=caption, label="tab:cohen")
    assert latex.isascii(), "pdflatex's utf8 input stops at a Unicode symbol it does not define (α)"
    assert to_latex(table, caption=comparisons_caption()).isascii()
    # rows of one log are tested: on 5 inputs none is significantly better than another, so every
    # row is bold where the values differ and none where all tie
    settings = per_setting_table(cohen_records, radii=RADII)
    markdown = to_markdown(settings)
    assert "| **80.0 [28.4, 99.5]** |" in markdown and "| **60.0 [14.7, 94.7]** |" in markdown
    assert r"\textbf{80.0 [28.4, 99.5]}" in to_latex(settings)


def test_per_sigma_table_groups_methods_under_each_sigma_in_the_given_order(tmp_path):
    """Jeong & Shin (2020) Table 2's layout: per σ, one row per method, in the study's order."""
    records = [
        LogRecord(write_log(tmp_path, "c050.tsv", FS_050), "mnist5k", "cohen", sigma0=0.5),
        LogRecord(write_log(tmp_path, "c025.tsv", FS_025), "mnist5k", "cohen", sigma0=0.25),
        LogRecord(write_log(tmp_path, "k050.tsv", DS_050_K100), "mnist5k", "consistency", sigma0=0.5),
        LogRecord(write_log(tmp_path, "e050.tsv", FS_025), "mnist5k", "easy_focus.discard+attack", sigma0=0.5),
    ]
    table = per_sigma_table(records, radii=RADII)
    assert table[["sigma0", "variant"]].values.tolist() == [
        [0.25, "Cohen"],
        [0.5, "Cohen"],
        [0.5, "Consistency"],
        [0.5, "EasyFocus (discard+attack)"],
    ]
    assert table.loc[1, ["0.00", "0.25", "0.50", "0.75"]].tolist() == pytest.approx([60, 60, 40, 20])
    assert table.loc[2, "ACR"] == pytest.approx(0.4)
    # one log per row: one ACR column, no per-log / per-input-best split
    assert "ACR_per_log" not in table.columns and {"ACR_low", "ACR_high"} <= set(table.columns)


def test_runtime_table_names_a_sigma_log_without_time(tmp_path):
    tailored = write_log(tmp_path, "ds.tsv", DS_025_K100)
    old = tmp_path / "sigma_opt.tsv"
    old.write_text("idx\tc_a\tsigma_K100\n" + "".join(f"{i}\t1\t0.3\n" for i in range(5)))
    record = LogRecord(tailored, "cifar10", "cohen", "fs", "ds", 0.25, K=100, sigma_log=old)
    with pytest.raises(LogFormatError, match=r"sigma_opt.tsv: no idx and time columns .*rerun the job"):
        runtime_table([record])
    old.write_text("idx\tc_a\tsigma_K100\ttime\n" + "".join(f"{i}\t1\t0.3\t1.0\n" for i in range(4)))
    with pytest.raises(LogFormatError, match="sigma_opt.tsv: no time for input idx 4"):
        runtime_table([record])


def test_a_header_only_log_is_refused_naming_its_file(cohen_records, tmp_path):
    empty = tmp_path / "empty.tsv"
    empty.write_text("\t".join(HEADER) + "\n")
    for common in (False, True):
        records = [*cohen_records, LogRecord(empty, "cifar10", "cohen", "fs", "fs", 1.0, common_inputs=common)]
        with pytest.raises(ValueError, match=f"{empty}: the log has no rows"):
            best_table(records, radii=RADII)
    with pytest.raises(ValueError, match=f"{empty}: the log has no rows"):
        per_setting_table([LogRecord(empty, "cifar10", "cohen", sigma0=0.25)], radii=RADII)
    with pytest.raises(ValueError, match=f"{empty}: the log has no rows"):
        log_table({"a": cohen_records[0].log, "b": empty}, RADII)
