"""The seed papers' printed tables against their recomputation from published logs (ddrs.published.paper_tables)."""

from __future__ import annotations

import pandas as pd
import pytest

from ddrs.errors import FetchError
from ddrs.published import builders
from ddrs.published import paper_tables as pt
from ddrs.published.log_registry import REGISTRY_PATH, load_registry

REPO = "someone/smoothing"


def write_log(path, rows):
    """A Cohen-format log of ``(correct, radius)`` rows (label 3; a wrong row predicts 5)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["idx\tlabel\tpredict\tradius\tcorrect\ttime"]
    for idx, (correct, radius) in enumerate(rows):
        lines.append(f"{idx}\t3\t{3 if correct else 5}\t{radius}\t{correct}\t0:00:01.5")
    path.write_text("\n".join(lines) + "\n")
    return path


def cell(row, sigma, radius, metric, printed, unit="percent", table="T"):
    value = float(printed) * (100 if unit == "fraction" else 1)
    return dict(
        paper="p",
        table=table,
        dataset="cifar10",
        row=row,
        sigma=sigma,
        radius=radius,
        metric=metric,
        value=str(value),
        printed=printed,
        unit=unit,
        source=f"p {table} row {row} col {radius or metric}",
    )


def entry(row, sigma, path, combine="single", role="primary", log_sigma=None, table="T"):
    return dict(
        paper="p",
        table=table,
        row=row,
        sigma=sigma,
        combine=combine,
        role=role,
        repository=REPO,
        path=path,
        log_sigma=log_sigma or sigma,
        note="test",
    )


def frames(cells, entries):
    return pd.DataFrame(cells).astype(str), pd.DataFrame(entries).astype(str)


@pytest.mark.parametrize(
    ("recomputed", "printed", "unit", "convention", "expected"),
    [
        (42.8, "0.43", "fraction", "half-up", "exact"),  # 0.428 printed as a share
        (42.8, "0.42", "fraction", "half-up", "mismatch"),  # truncated: not the table's convention
        (42.8, "0.42", "fraction", "truncation", "exact"),  # ... unless it is
        (13 / 40 * 100, "33", "percent", "half-up", "exact"),  # 32.5 half-up, despite the binary noise of 13/40·100
        (32.5, "32", "percent", "half-even", "exact"),
        (64.6, "64.7", "percent", "ceiling", "mismatch"),  # one unit off, but no rounding of 64.60 gives 64.7
        (0.5, "0.50", "sigma", "half-up", "exact"),
        (1.0, "0.50", "sigma", "half-up", "mismatch"),
    ],
)
def test_verdict_follows_the_printed_precision_and_the_convention(recomputed, printed, unit, convention, expected):
    assert pt.verdict(recomputed, printed, unit, convention) == expected


def test_a_tables_convention_is_the_papers_statement_or_half_up_and_takes_no_cells(monkeypatch):
    assert pt.table_convention("p", "T") == (
        "half-up",
        "half-up: the paper states no rounding convention; fixed before any comparison",
    )
    monkeypatch.setitem(pt.STATED_CONVENTIONS, ("p", "T"), ("truncation", "§5: 'we truncate'"))
    assert pt.table_convention("p", "T")[0] == "truncation"
    assert "as the paper states (§5: 'we truncate')" in pt.table_convention("p", "T")[1]
    assert pt.table_convention("p", "U")[0] == "half-up"


def test_single_log_cells_are_exact_or_mismatch_under_the_tables_convention(tmp_path):
    # 8 inputs: 5 correct with radii 0.1, 0.6, 0.7, 0.9, 0.0 → accuracy 62.5 at r=0, 37.5 at r=0.5, ACR 0.2875
    log = write_log(tmp_path / "a.tsv", [(1, 0.1), (1, 0.6), (1, 0.7), (1, 0.9), (1, 0.0), (0, 0.0), (0, 0.0), (0, 0)])
    transcription, mapping = frames(
        [
            cell("Gaussian", "0.25", "0.0", "certified_accuracy", "62.5"),
            cell("Gaussian", "0.25", "0.5", "certified_accuracy", "37"),  # 37.5 truncated
            cell("Gaussian", "0.25", "0.75", "certified_accuracy", "30.0"),  # 12.5 in the data
            cell("Gaussian", "0.25", "", "ACR", "0.288", unit="radius"),  # 0.2875 half-up
        ],
        [entry("Gaussian", "0.25", "a.tsv")],
    )
    diff = pt.recompute_tables({(REPO, "a.tsv"): log}, transcription, mapping, settings={})
    assert (diff["convention"] == "half-up").all()  # truncation would lose the ACR cell
    assert diff["verdict"].tolist() == ["exact", "mismatch", "mismatch", "exact"]
    assert diff["recomputed"].tolist() == [62.5, 37.5, 12.5, 0.2875]
    assert diff["recomputed_rounded"].tolist() == ["62.5", "38", "12.5", "0.288"]
    assert diff.loc[1, "tried"].startswith("half-down, truncation would give the printed value (the table's convention")
    assert "radius > r (strict) → 12.5" in diff.loc[2, "tried"]
    assert diff.loc[2, "difference"] == pytest.approx(12.5 - 30.0)
    assert (diff["logs"] == f"{REPO}:a.tsv").all() and (diff["source"] != "").all()
    assert diff["best_run_verdict"].eq("").all() and diff["log_choice"].eq("as mapped").all()


def test_the_convention_cannot_see_the_matches(tmp_path):
    """One table, its logs giving values every printed cell shows truncated, or values no convention
    prints so: the convention is the same (half-up, no paper statement), so the truncated cells mismatch."""
    printed = [
        cell("A", "0.25", "0.0", "certified_accuracy", "42"),
        cell("B", "0.25", "0.0", "certified_accuracy", "85"),
    ]
    mapping = [entry("A", "0.25", "a"), entry("B", "0.25", "b")]
    conventions, verdicts = [], []
    for name, (a, b) in {"truncated": (3, 6), "other": (1, 2)}.items():
        files = {
            (REPO, "a"): write_log(tmp_path / name / "a", [(1, 0.3)] * a + [(0, 0.0)] * (7 - a)),
            (REPO, "b"): write_log(tmp_path / name / "b", [(1, 0.3)] * b + [(0, 0.0)] * (7 - b)),
        }
        diff = pt.recompute_tables(files, *frames(printed, mapping), settings={})
        conventions.append(diff[["convention", "convention_evidence"]].drop_duplicates().values.tolist())
        verdicts.append(diff["verdict"].tolist())
    assert conventions[0] == conventions[1] == [[*pt.table_convention("p", "T")]]
    # 3/7 = 42.86 and 6/7 = 85.71 print as 42 and 85 only truncated: not the table's convention
    assert verdicts[0] == ["mismatch", "mismatch"]
    assert verdicts[1] == ["mismatch", "mismatch"]


def test_a_zero_beyond_the_radius_cap_is_trivial(tmp_path):
    # σ = 0.25, n = 100,000, α = 0.001: no radius above 0.25·Φ⁻¹(0.001^(1/100,000)) = 0.9529
    files = {
        (REPO, "capped"): write_log(tmp_path / "capped", [(1, 0.95), (1, 0.4), (0, 0.0), (0, 0.0)]),
        (REPO, "beyond"): write_log(tmp_path / "beyond", [(1, 1.2), (1, 0.4), (0, 0.0), (0, 0.0)]),  # breaks its cap
    }
    transcription, mapping = frames(
        [
            cell("capped", "0.25", "0.5", "certified_accuracy", "25.0"),
            cell("capped", "0.25", "0.75", "certified_accuracy", "25.0"),
            cell("capped", "0.25", "1.0", "certified_accuracy", "0.0"),  # beyond the cap: cannot miss
            cell("capped", "0.25", "1.25", "certified_accuracy", "0.0"),
            cell("beyond", "0.25", "1.0", "certified_accuracy", "0.0"),  # its log gives 25: judged as usual
        ],
        [entry("capped", "0.25", "capped"), entry("beyond", "0.25", "beyond")],
    )
    settings = {(REPO, "capped"): (100_000, 0.001), (REPO, "beyond"): (100_000, 0.001)}
    diff = pt.recompute_tables(files, transcription, mapping, settings=settings)
    assert diff["verdict"].tolist() == ["exact", "exact", "trivial", "trivial", "mismatch"]
    # without the logs' n and α there is no cap, and a 0 is judged like any other cell
    unknown = pt.recompute_tables(files, transcription, mapping, settings={})
    assert unknown["verdict"].tolist() == ["exact", "exact", "exact", "exact", "mismatch"]


def test_mean_and_std_over_seeds_use_sample_std_and_report_ddof0(tmp_path):
    files = {}
    for seed, radius in zip((1, 2, 3), (1.0, 1.2, 1.4), strict=True):  # ACR = radius (one correct input each)
        files[REPO, f"s{seed}"] = write_log(tmp_path / f"s{seed}", [(1, radius)])
    transcription, mapping = frames(
        [
            cell("Ours", "0.5", "", "ACR", "1.200", unit="radius"),
            cell("Ours", "0.5", "", "ACR_std", "0.200", unit="radius"),  # ddof=1
            cell("Theirs", "0.5", "", "ACR_std", "0.163", unit="radius"),  # ddof=0: a different convention
        ],
        [entry("Ours", "0.5", f"s{i}", "mean_std") for i in (1, 2, 3)]
        + [entry("Theirs", "0.5", f"s{i}", "mean_std") for i in (1, 2, 3)],
    )
    diff = pt.recompute_tables(files, transcription, mapping)
    assert diff["verdict"].tolist() == ["exact", "exact", "mismatch"]
    assert diff["recomputed"].tolist() == pytest.approx([1.2, 0.2, 0.2])
    assert "ddof=0 → 0.163299" in diff.loc[2, "tried"]


def test_one_of_cells_are_judged_under_the_run_fixed_in_advance_and_the_best_run_is_only_reported(tmp_path):
    files = {
        (REPO, "run_a"): write_log(tmp_path / "run_a", [(1, 0.3), (0, 0.0)]),  # 50 % at r=0, ACR 0.15
        (REPO, "run_b"): write_log(tmp_path / "run_b", [(1, 0.3), (1, 0.1)]),  # 100 % at r=0, ACR 0.2
        (REPO, "run_c"): write_log(tmp_path / "run_c", [(1, 0.3), (1, 0.0)]),  # 100 % at r=0, ACR 0.15
    }
    transcription, mapping = frames(
        [
            cell("Gaussian", "1.0", "", "ACR", "0.200", unit="radius"),
            cell("Gaussian", "1.0", "0.0", "certified_accuracy", "100.0"),
            cell("Gaussian", "1.0", "0.25", "certified_accuracy", "50.0"),  # run_a gives it, run_b does not
            cell("Gaussian", "1.0", "5.0", "certified_accuracy", "0.0"),  # beyond the cap: trivial
        ],
        [entry("Gaussian", "1.0", p, "one_of") for p in ("run_a", "run_b", "run_c")],
    )
    settings = {(REPO, p): (100_000, 0.001) for p in ("run_a", "run_b", "run_c")}
    diff = pt.recompute_tables(files, transcription, mapping, settings=settings)
    assert (diff["logs"] == f"{REPO}:run_a").all()  # the mapping's first, not the best match (run_b)
    assert diff["verdict"].tolist() == ["mismatch", "mismatch", "exact", "trivial"]
    assert diff["recomputed"].tolist() == [0.15, 50.0, 50.0, 0.0]
    assert diff["best_run_recomputed"].tolist()[:3] == [0.2, 100.0, 50.0]  # run_b: two cells of three
    assert diff["best_run_verdict"].tolist() == ["exact", "exact", "exact", ""]
    assert diff["candidates_exact"].tolist() == ["010", "011", "111", ""]
    assert diff["log_choice"].iloc[0] == (
        "judged under the run fixed in advance (the mapping's first of 3 candidate runs, run_a): 1/3 cells exact "
        "under half-up; chosen by matching, not a verdict: the best run run_b 3/3; over the candidates best 3, "
        "average 2.0, worst 1"
    )
    assert "candidate run_b → 0.2; candidate run_c → 0.15" in diff.loc[0, "tried"]
    path = tmp_path / "diff.csv"
    pt.write_diff(diff, path)
    summary = builders.seed_table_verdicts([path])
    assert summary.iloc[0][["paper", "exact", "mismatch", "trivial", "no_log", "cells"]].tolist() == [
        "all",
        1,
        2,
        1,
        0,
        4,
    ]
    assert summary.iloc[1][
        [
            "convention",
            "several_runs",
            "several_runs_exact",
            "candidates_best_exact",
            "candidates_average_exact",
            "candidates_worst_exact",
        ]
    ].tolist() == ["half-up", 3, 1, 3, 2.0, 1]


def test_the_summary_counts_cells_fixed_in_advance_first_and_names_the_mismatches(tmp_path):
    log = write_log(tmp_path / "a.tsv", [(1, 0.6), (1, 0.2), (0, 0.0), (0, 0.0)])  # 50 % at r=0, 25 % at r=0.5
    transcription, mapping = frames(
        [
            cell("G", "0.25", "0.0", "certified_accuracy", "50.0"),
            cell("G", "0.25", "0.5", "certified_accuracy", "30.0", table="U"),
            cell("G", "0.25", "0.25", "certified_accuracy", "25.0", table="U"),
            cell("Stability", "0.25", "0.0", "certified_accuracy", "60.0", table="U"),
        ],
        [entry("G", "0.25", "a.tsv"), entry("G", "0.25", "a.tsv", table="U")],
    )
    paths = []
    for table in ("T", "U"):
        diff = pt.recompute_tables(
            {(REPO, "a.tsv"): log}, transcription[transcription["table"] == table], mapping, settings={}
        )
        pt.write_diff(diff, tmp_path / f"{table}.csv")
        paths.append(tmp_path / f"{table}.csv")
    summary = builders.seed_table_verdicts(paths).set_index("table")
    assert list(summary.columns[:7]) == ["paper", "convention", *pt.VERDICTS, "cells"]
    assert summary.iloc[0]["paper"] == "all" and summary.index[0] == ""
    assert summary.loc["", ["exact", "mismatch", "no_log", "cells"]].tolist() == [2, 1, 1, 4]
    assert summary.loc["U", ["exact", "mismatch", "no_log"]].tolist() == [1, 1, 1]
    assert summary.loc["U", "mismatched"] == "G σ=0.25 r=0.5: printed 30.0 → 25.0"
    assert summary.loc["U", "convention_evidence"] == pt.table_convention("p", "U")[1]


def test_envelope_gives_best_sigma_and_its_standard_accuracy(tmp_path):
    files = {
        (REPO, "s25"): write_log(tmp_path / "s25", [(1, 0.6), (1, 0.6), (1, 0.2), (0, 0.0)]),
        (REPO, "s50"): write_log(tmp_path / "s50", [(1, 1.6), (1, 0.9), (0, 0.0), (0, 0.0)]),
    }
    rows = [
        cell("best", "", "0.5", "certified_accuracy", "50"),  # σ=0.25: 50, σ=0.5: 50 → first (0.25)
        cell("best", "", "0.5", "best_sigma", "0.25", unit="sigma"),
        cell("best", "", "0.5", "standard_accuracy", "75"),
        cell("best", "", "1.0", "certified_accuracy", "25"),
        cell("best", "", "1.0", "best_sigma", "0.25", unit="sigma"),  # a misprint: σ=0.5 wins at r=1
        cell("best", "", "1.0", "standard_accuracy", "75"),  # ... and its standard accuracy is 50
    ]
    transcription, mapping = frames(
        rows,
        [
            entry("best", "", "s25", "envelope", log_sigma="0.25"),
            entry("best", "", "s50", "envelope", log_sigma="0.50"),
        ],
    )
    diff = pt.recompute_tables(files, transcription, mapping)
    assert diff["recomputed"].tolist() == [50.0, 0.25, 75.0, 25.0, 0.5, 50.0]
    assert diff["verdict"].tolist() == ["exact", "exact", "exact", "exact", "mismatch", "mismatch"]


def test_rows_without_logs_and_missing_files(tmp_path):
    transcription, mapping = frames(
        [
            cell("Stability", "0.5", "0.0", "certified_accuracy", "60.6"),
            cell("G", "0.5", "0.0", "certified_accuracy", "60.6"),
        ],
        [entry("G", "0.5", "absent.tsv")],
    )
    with pytest.raises(FetchError, match="absent.tsv"):
        pt.recompute_tables({}, transcription, mapping)
    diff = pt.recompute_tables({}, transcription, mapping.iloc[:0])
    assert diff["verdict"].tolist() == ["no_log", "no_log"]


def test_contract_violations_are_refused(tmp_path):
    transcription, mapping = frames(
        [cell("G", "0.5", "0.0", "certified_accuracy", "60.6")],
        [entry("G", "0.5", "a.tsv"), entry("G", "0.5", "b.tsv")],  # two logs for a single-log row
    )
    transcription.loc[0, "source"] = " "
    transcription.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(pt.TranscriptionError, match="no source"):
        pt.load_transcription(tmp_path / "t.csv")
    mapping.to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(pt.TranscriptionError, match=r"\(single\) has 2 primary"):
        pt.load_mapping(tmp_path / "m.csv")
    mapping.iloc[:1].assign(repository="not a repository").to_csv(tmp_path / "m.csv", index=False)
    with pytest.raises(pt.TranscriptionError, match="not owner/name"):
        pt.load_mapping(tmp_path / "m.csv")


def test_shipped_transcription_is_complete_and_sourced():
    transcription = pt.load_transcription()
    sizes = transcription.groupby(["paper", "table"]).size().to_dict()
    assert sizes == {
        ("cohen2019", "Table 1"): 4 * 3,  # 4 radii × (best σ, certified, standard accuracy)
        ("cohen2019", "Table 2"): 3 * 7,  # σ × radii
        ("cohen2019", "Table 3"): 4 * 7,
        ("jeong2020", "Table 2"): 6 * 3 * 12,  # rows × σ × (ACR + 11 radii)
        ("jeong2020", "Table 3"): 6 * 3 * 2,  # rows × σ × (mean, std)
        ("jeong2020", "CIFAR-10 supplement table"): 5 * 3 * 11,
        ("sun2024", "Table 2"): 7 * 3 * 12,
    }
    assert transcription["source"].str.contains(r"\.txt line \d+$").all()


def test_shipped_mapping_is_well_formed_and_in_the_registry():
    transcription = pt.load_transcription()
    mapping = pt.load_mapping(transcription=transcription)
    assert set(mapping["paper"]) == {"cohen2019", "jeong2020", "sun2024"}
    if not REGISTRY_PATH.exists():
        pytest.skip(f"{REGISTRY_PATH} not written yet")
    registry = load_registry()
    known = set(zip(registry["repository"], registry["path"], strict=True))
    unknown = sorted(set(zip(mapping["repository"], mapping["path"], strict=True)) - known)
    assert not unknown, f"mapped logs missing from the registry: {unknown[:5]}"
