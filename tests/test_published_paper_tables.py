"""The seed papers' printed tables against their recomputation from published logs (ddrs.published.paper_tables)."""

from __future__ import annotations

import pandas as pd
import pytest

from ddrs.errors import FetchError
from ddrs.published import paper_tables as pt
from ddrs.published.registry import REGISTRY_PATH, load_registry

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
    ("recomputed", "printed", "unit", "expected"),
    [
        (42.8, "0.43", "fraction", "exact"),  # 0.428 printed as a share
        (42.8, "0.42", "fraction", "rounding"),  # truncated
        (13 / 40 * 100, "33", "percent", "exact"),  # 32.5 half-up, despite the binary noise of 13/40·100
        (32.5, "32", "percent", "rounding"),  # half-even
        (64.6, "64.7", "percent", "mismatch"),  # one unit off, but no rounding of 64.60 gives 64.7
        (0.5, "0.50", "sigma", "exact"),
        (1.0, "0.50", "sigma", "mismatch"),
    ],
)
def test_verdict_follows_the_printed_precision(recomputed, printed, unit, expected):
    assert pt.verdict(recomputed, printed, unit)[0] == expected


def test_single_log_cells_exact_rounding_and_mismatch(tmp_path):
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
    diff = pt.recompute_tables({(REPO, "a.tsv"): log}, transcription, mapping)
    assert diff["verdict"].tolist() == ["exact", "rounding", "mismatch", "exact"]
    assert diff["recomputed"].tolist() == [62.5, 37.5, 12.5, 0.2875]
    assert diff.loc[1, "tried"].startswith("half-up gives 38; half-down, truncation")
    assert "radius > r (strict) → 12.5" in diff.loc[2, "tried"]
    assert diff.loc[2, "difference"] == pytest.approx(12.5 - 30.0)
    assert (diff["logs"] == f"{REPO}:a.tsv").all() and (diff["source"] != "").all()


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


def test_one_of_identifies_the_printed_run_and_lists_the_others(tmp_path):
    files = {
        (REPO, "run_a"): write_log(tmp_path / "run_a", [(1, 0.3), (0, 0.0)]),  # 50 % at r=0, ACR 0.15
        (REPO, "run_b"): write_log(tmp_path / "run_b", [(1, 0.3), (1, 0.1)]),  # 100 % at r=0, ACR 0.2
    }
    transcription, mapping = frames(
        [
            cell("Gaussian", "1.0", "", "ACR", "0.200", unit="radius"),
            cell("Gaussian", "1.0", "0.0", "certified_accuracy", "100.0"),
            cell("Gaussian", "1.0", "0.25", "certified_accuracy", "75.0"),  # no run has this
        ],
        [entry("Gaussian", "1.0", p, "one_of") for p in ("run_a", "run_b")],
    )
    diff = pt.recompute_tables(files, transcription, mapping)
    assert (diff["logs"] == f"{REPO}:run_b").all()
    assert diff["log_choice"].iloc[0] == "identified among 2 candidate runs: 2/3 cells exact"
    assert diff["verdict"].tolist() == ["exact", "exact", "mismatch"]
    assert "candidate run_a → 50" in diff.loc[2, "tried"]


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
