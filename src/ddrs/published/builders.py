"""The published-logs tables and figures as catalogue builders (:mod:`ddrs.pipeline.catalogue`).

Each takes the manifests of the repositories it reads (:mod:`ddrs.published.manifest`: where every
fetched log lies) and, where a config names one, another registry than the shipped one; it returns
a DataFrame or a Figure that :func:`ddrs.pipeline.build.build` writes. One job reads many logs: the
audit reads them all; a dataset's logs are read once (:func:`dataset_entries`) into one file that
its leaderboard's jobs (table, comparisons with Gaussian, the replication table, two figures) read;
the headline and the margin figure read the comparisons and replication tables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference
from ddrs.published.manifest import local_file, local_files

Paths = Sequence[str | os.PathLike]


def _registry(registry: str | os.PathLike | None) -> pd.DataFrame:
    from ddrs.published.log_registry import load_registry

    return load_registry(registry)


def audit_table(manifests: Paths, registry: str | os.PathLike | None = None) -> pd.DataFrame:
    """``published_logs_audit``: every fetched log's audit (:func:`ddrs.published.audit.audit`), in registry order."""
    from ddrs.published.audit import audit
    from ddrs.published.log_registry import PublishedLog

    files = local_files(manifests)
    rows = _registry(registry)
    rows = rows[
        [(repository, path) in files for repository, path in zip(rows["repository"], rows["path"], strict=True)]
    ]
    logs = [PublishedLog.from_row(row) for _, row in rows.iterrows()]
    return audit(logs, [local_file(files, log.repository, log.path, log.sha256) for log in logs])


def seed_table(
    manifests: Paths,
    paper: str,
    table: str,
    transcription: str | os.PathLike | None = None,
    mapping: str | os.PathLike | None = None,
    registry: str | os.PathLike | None = None,
) -> pd.DataFrame:
    """One seed paper's table recomputed from its authors' logs, cell by cell against the printed numbers
    (:func:`ddrs.published.paper_tables.recompute_tables`; the registry gives each log's n and α)."""
    from ddrs.published.paper_tables import load_mapping, load_transcription, recompute_tables, registry_settings

    printed = load_transcription(transcription)
    logs = load_mapping(mapping, transcription=printed)
    printed = printed[(printed["paper"] == paper) & (printed["table"] == table)]
    if printed.empty:
        raise ValueError(f"the transcription has no cell of {paper} {table}")
    logs = logs[(logs["paper"] == paper) & (logs["table"] == table)]
    return recompute_tables(local_files(manifests), printed, logs, settings=registry_settings(_registry(registry)))


def seed_table_verdicts(diffs: Paths) -> pd.DataFrame:
    """Per seed table (their diff CSVs), its rounding convention and where it comes from, its cells per
    verdict under the run fixed in advance, what matching among candidate runs would give (extra columns,
    labelled), and its mismatched cells named; the total over every table first
    (:func:`ddrs.published.paper_tables.table_counts`)."""
    from ddrs.published.paper_tables import table_counts

    diff = pd.concat([pd.read_csv(path, dtype=str, keep_default_na=False) for path in diffs], ignore_index=True)
    tables = [
        {
            "paper": paper,
            "table": table,
            "convention": cells["convention"].iloc[0],
            **table_counts(cells),
            "convention_evidence": cells["convention_evidence"].iloc[0],
            "mismatched": _named_cells(cells[cells["verdict"] == "mismatch"]),
        }
        for (paper, table), cells in diff.groupby(["paper", "table"], sort=False)
    ]
    frame = pd.DataFrame(tables)
    words = ("paper", "table", "convention", "convention_evidence", "mismatched")
    total = {column: "" if column in words else frame[column].sum() for column in frame.columns} | {"paper": "all"}
    frame = pd.concat([pd.DataFrame([total]), frame], ignore_index=True)
    return frame.round({"candidates_average_exact": 1})


def _named_cells(cells: pd.DataFrame) -> str:
    """``row σ=0.25 r=0.50: printed 57.0 → 56.8``, each mismatched cell of a table."""
    names = []
    for cell in cells.itertuples(index=False):
        where = " ".join(
            part
            for part in (
                cell.row,
                f"σ={cell.sigma}" if cell.sigma else "",
                f"r={cell.radius}" if cell.radius else "",
                cell.metric if cell.metric != "certified_accuracy" else "",
            )
            if part
        )
        names.append(f"{where}: printed {cell.printed} → {cell.recomputed_rounded}")
    return "; ".join(names)


def dataset_entries(
    manifests: Paths,
    dataset: str,
    out: str | os.PathLike,
    registry: str | os.PathLike | None = None,
    families: str | os.PathLike | None = None,
    own: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Read a leaderboard dataset's logs once (:func:`ddrs.published.leaderboard.load_entries`: those of
    the repositories the ``manifests`` list, the config's selection, each checked against its sha256 and
    validated by :func:`ddrs.logs.certification_log.read_log`, with its family from ``families``, default
    the shipped table), and the user's ``own`` logs of the dataset
    (:func:`ddrs.published.own_logs.own_entries`), into ``out``, which its jobs read."""
    from ddrs.published.families import read_families
    from ddrs.published.leaderboard import load_entries, save_entries
    from ddrs.published.own_logs import own_entries

    files = local_files(manifests)
    rows = _registry(registry)
    rows = rows[rows["repository"].isin({repository for repository, _ in files})]  # the selected repositories'
    entries = load_entries(rows, dataset, files, read_families(families))
    save_entries([*entries, *own_entries(own or {}, dataset, entries)], out)


def _entries(entries: str | os.PathLike):
    from ddrs.published.leaderboard import read_entries

    return read_entries(entries)


def leaderboard(
    entries: str | os.PathLike, dataset: str, radii: Sequence[float], inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """``published_leaderboard_<dataset>`` (:func:`ddrs.published.leaderboard.leaderboard_table`)."""
    from ddrs.published.leaderboard import leaderboard_table

    return leaderboard_table(_entries(entries), dataset, radii, inference=inference)


def leaderboard_vs_gaussian(
    entries: str | os.PathLike, dataset: str, radii: Sequence[float], inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """``published_vs_gaussian_<dataset>`` (:func:`ddrs.published.gaussian_comparisons.gaussian_comparisons_table`)."""
    from ddrs.published.gaussian_comparisons import gaussian_comparisons_table

    return gaussian_comparisons_table(_entries(entries), dataset, radii, inference=inference)


def leaderboard_replication(entries: str | os.PathLike, dataset: str, alpha: float = 0.05) -> pd.DataFrame:
    """``published_replication_<dataset>`` (:func:`ddrs.published.run_margin.replication_table`)."""
    from ddrs.published.run_margin import replication_table

    return replication_table(_entries(entries), dataset, alpha)


def leaderboard_headline(
    comparisons: str | os.PathLike, replication: str | os.PathLike, alpha: float = 0.05
) -> pd.DataFrame:
    """``published_headline_<dataset>`` from its ``published_vs_gaussian_<dataset>`` and
    ``published_replication_<dataset>`` CSVs (:func:`ddrs.published.headline.headline`)."""
    from ddrs.published.headline import headline

    return headline(pd.read_csv(comparisons), pd.read_csv(replication), alpha)


def leaderboard_margin(
    comparisons: str | os.PathLike, replication: str | os.PathLike, dataset: str, alpha: float = 0.05
) -> Figure:
    """``published_margin_<dataset>`` (:func:`ddrs.published.margin_figures.margin_figure`)."""
    from ddrs.published.margin_figures import margin_figure

    return margin_figure(pd.read_csv(comparisons), pd.read_csv(replication), dataset, alpha)


def leaderboard_curves(entries: str | os.PathLike, dataset: str, alpha: float = 0.05) -> Figure:
    """``published_curves_<dataset>`` (:func:`ddrs.published.leaderboard_figures.curves_figure`)."""
    from ddrs.published.leaderboard_figures import curves_figure

    return curves_figure(_entries(entries), dataset, alpha=alpha)


def leaderboard_p_a(entries: str | os.PathLike, dataset: str) -> Figure:
    """``published_pa_<dataset>`` (:func:`ddrs.published.leaderboard_figures.p_a_figure`)."""
    from ddrs.published.leaderboard_figures import p_a_figure

    return p_a_figure(_entries(entries), dataset)
