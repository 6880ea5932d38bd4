"""Assemble the paper's tables from certification logs (DDRS §4.1–4.4, Appendices B, F, H).

Every table takes a list of :class:`~ddrs.analysis.records.LogRecord` and returns DataFrames with
one column per radius (named ``"0.25"`` etc., values in percent) and ``ACR``. A "best" row is the
envelope over its candidate logs: at each radius the best certified accuracy over training σ
(fixed-σ rows) or over σ₀ and K (-DS rows), as the paper states for Tables 1–4. Its ACR is the
best ACR over the same candidates (each candidate's own ACR, not the ACR of the envelope, which
no single classifier attains). The companion ``winners`` table records which (σ₀, K) won each
cell.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.analysis.metrics import acr, certified_accuracy, envelope, paper_radii
from ddrs.analysis.records import LogRecord, load_log, modes_of, variant_order
from ddrs.errors import LogFormatError
from ddrs.memory import MEMORY_ACTIONS

Radii = Sequence[float] | Mapping[str, Sequence[float]] | None
WINNER_COLUMNS = ["dataset", "variant", "metric", "radius", "sigma0", "K", "value"]


@dataclass(frozen=True)
class BestTable:
    """A best-per-radius table and, in long format, the setting that won each of its cells."""

    table: pd.DataFrame
    winners: pd.DataFrame


def radius_column(radius: float) -> str:
    """Column name of a radius: two decimals, as in the paper's headers."""
    return f"{radius:.2f}"


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """The radius columns and ``ACR`` of a table, in order."""
    return [c for c in frame.columns if c == "ACR" or _is_radius(c)]


def _is_radius(column) -> bool:
    try:
        float(column)
    except (TypeError, ValueError):
        return False
    return True


def _radii_for(radii: Radii, dataset: str, norm: int) -> tuple[float, ...]:
    if radii is None:
        return paper_radii(dataset, norm)
    if isinstance(radii, Mapping):
        if dataset not in radii:
            raise ValueError(f"no radius grid given for dataset {dataset!r}")
        return tuple(radii[dataset])
    return tuple(radii)


def _load_all(records: Sequence[LogRecord]) -> list[tuple[LogRecord, pd.DataFrame]]:
    if not records:
        raise ValueError("no certification logs given")
    loaded = [(record, record.load()) for record in records]
    _check_same_inputs([(record.source, record.dataset, log) for record, log in loaded])
    return loaded


def _check_same_inputs(logs: Sequence[tuple[str, str, pd.DataFrame]]) -> None:
    """Logs compared in one table must certify the same test inputs: (source, dataset, log)."""
    first: dict[str, tuple[str, set]] = {}
    for source, dataset, log in logs:
        inputs = set(log["idx"].tolist())
        reference, expected = first.setdefault(dataset, (source, inputs))
        if expected != inputs:
            raise ValueError(
                f"{source} and {reference} certify different test inputs ({len(inputs)} vs "
                f"{len(expected)} rows); compare logs of the same test set"
            )


def _grouped(loaded, key) -> dict[tuple, list[tuple[LogRecord, pd.DataFrame]]]:
    """Group in the paper's order: datasets as first seen, then Method, -DS, -DS², others."""
    datasets = list(dict.fromkeys(record.dataset for record, _ in loaded))
    names = variant_order(record for record, _ in loaded)
    ordered = sorted(loaded, key=lambda item: (datasets.index(item[0].dataset), names.index(item[0].name)))
    groups: dict[tuple, list] = {}
    for record, log in ordered:
        groups.setdefault(key(record), []).append((record, log))
    for members in groups.values():
        members.sort(key=lambda item: (item[0].sigma0, -1 if item[0].K is None else item[0].K))
    return groups


def _best_row(candidates, radii: Sequence[float]) -> tuple[dict, list[dict]]:
    """Envelope over candidates at each radius (percent) and best ACR, with the winning settings."""
    curves = {i: 100 * certified_accuracy(log, radii) for i, (_, log) in enumerate(candidates)}
    best, winner = envelope(curves)
    scores = [acr(log) for _, log in candidates]
    best_acr = int(np.argmax(scores))
    row = {radius_column(r): best.loc[r] for r in best.index}
    row["ACR"] = scores[best_acr]
    winners = [_winner(candidates[winner.loc[r]][0], "certified_accuracy", r, best.loc[r]) for r in best.index]
    winners.append(_winner(candidates[best_acr][0], "ACR", np.nan, scores[best_acr]))
    return row, winners


def _winner(record: LogRecord, metric: str, radius: float, value: float) -> dict:
    return {
        "dataset": record.dataset,
        "variant": record.name,
        "metric": metric,
        "radius": radius,
        "sigma0": record.sigma0,
        "K": record.K,
        "value": value,
    }


def _modes(candidates, name) -> dict:
    train, certify = modes_of((record for record, _ in candidates), name)
    return {"train": train.upper(), "certify": certify.upper()}


def _frame(rows: list[dict], leading: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    radii = sorted({c for c in frame.columns if _is_radius(c)}, key=float)
    return frame[leading + radii + ["ACR"]]


def best_table(records: Sequence[LogRecord], radii: Radii = None) -> BestTable:
    """Tables 1–4: per dataset, one row per variant (Cohen, Cohen-DS, Cohen-DS², …).

    Each row is the best certified accuracy per radius (percent) over its logs — training σ for
    fixed-σ rows, σ₀ and K for data-dependent rows — and the best ACR over the same logs.
    ``radii`` is one grid, a ``{dataset: grid}`` mapping, or ``None`` for the paper's grids
    (:func:`~ddrs.analysis.metrics.paper_radii`; ℓ1 grid of Table 4 for uniform noise).
    """
    rows, winners = [], []
    for (dataset, name), candidates in _grouped(_load_all(records), lambda r: (r.dataset, r.name)).items():
        row, won = _best_row(candidates, _radii_for(radii, dataset, candidates[0][0].norm))
        rows.append({"dataset": dataset, "variant": name, **_modes(candidates, name), **row})
        winners.extend(won)
    winners = pd.DataFrame(winners, columns=WINNER_COLUMNS).astype({"K": "Int64"})
    return BestTable(_frame(rows, ["dataset", "variant", "train", "certify"]), winners)


def per_setting_table(records: Sequence[LogRecord], radii: Radii = None) -> pd.DataFrame:
    """Appendix H: certified accuracy (percent) per radius for every (variant, σ₀, K), and ACR."""
    rows = []
    groups = _grouped(_load_all(records), lambda r: (r.dataset, r.name))
    for (dataset, name), members in groups.items():
        for record, log in members:
            curve = 100 * certified_accuracy(log, _radii_for(radii, dataset, record.norm))
            rows.append(
                {
                    "dataset": dataset,
                    "variant": name,
                    **_modes(members, name),
                    "sigma0": record.sigma0,
                    "K": record.K,
                    **{radius_column(r): v for r, v in curve.items()},
                    "ACR": acr(log),
                }
            )
    frame = _frame(rows, ["dataset", "variant", "train", "certify", "sigma0", "K"])
    frame["K"] = frame["K"].astype("Int64")
    return frame


def per_sigma_table(records: Sequence[LogRecord], radii: Radii = None) -> pd.DataFrame:
    """One row per (σ₀, log), σ₀ ascending and the given order within each σ₀: certified accuracy
    (percent) per radius and ACR, the layout of Jeong & Shin (2020) Table 2 and of Sun et al. (2024)
    Tables 2 and 3 (fixed-σ certification of models trained by different methods)."""
    loaded = _load_all(records)
    rows = []
    for _, (record, log) in sorted(enumerate(loaded), key=lambda item: (item[1][0].sigma0, item[0])):
        curve = 100 * certified_accuracy(log, _radii_for(radii, record.dataset, record.norm))
        rows.append(
            {
                "dataset": record.dataset,
                "sigma0": record.sigma0,
                "variant": record.name,
                **{radius_column(r): v for r, v in curve.items()},
                "ACR": acr(log),
            }
        )
    return _frame(rows, ["dataset", "sigma0", "variant"])


def grid_search_table(records: Sequence[LogRecord], radii: Radii = None) -> pd.DataFrame:
    """Appendix B: fixed σ, grid search (Method-GDS-n-{1,2,4,10}) and Algorithm 1 (Method-DS).

    One row per (σ₀, variant), best over K where a variant has several; then per variant the
    envelope over σ₀ (``sigma0 == "envelope"``), the last panel of the appendix figure.
    """
    loaded = _load_all(records)
    rows = []
    per_sigma = _grouped(loaded, lambda r: (r.dataset, r.sigma0, r.name))
    for (dataset, sigma0, name), candidates in sorted(per_sigma.items(), key=_by_dataset_then_sigma(per_sigma)):
        row, _ = _best_row(candidates, _radii_for(radii, dataset, candidates[0][0].norm))
        rows.append({"dataset": dataset, "sigma0": f"{sigma0:g}", "variant": name, **row})
    for (dataset, name), candidates in _grouped(loaded, lambda r: (r.dataset, r.name)).items():
        row, _ = _best_row(candidates, _radii_for(radii, dataset, candidates[0][0].norm))
        rows.append({"dataset": dataset, "sigma0": "envelope", "variant": name, **row})
    return _frame(rows, ["dataset", "sigma0", "variant"])


def _by_dataset_then_sigma(groups: dict):
    """Keep the grouping's dataset and variant order but gather each σ₀'s rows together."""
    order = {key: position for position, key in enumerate(groups)}
    datasets = list(dict.fromkeys(key[0] for key in groups))
    return lambda item: (datasets.index(item[0][0]), item[0][1], order[item[0]])


def runtime_table(records: Sequence[LogRecord], per_variant: bool = False) -> pd.DataFrame:
    """Appendix F: certification seconds per input, fixed vs data-dependent.

    ``certify_s`` is the mean of the log's ``time`` column (Cohen's CERTIFY per input);
    ``extra_s`` spreads the wall-clock seconds of the record's Snakemake benchmark files (σ
    optimisation, memory pass; mean over benchmark repeats) over the log's inputs; ``total_s``
    is their sum. An Algorithm 1 job that snapshots several K is charged in full to each K.
    With ``per_variant`` the rows are averaged per (dataset, variant).
    """
    rows = []
    for record in records:
        log = record.load()
        extra = sum(read_benchmark_seconds(path) for path in record.benchmarks)
        certify_s = float(log["time"].mean())
        rows.append(
            {
                "dataset": record.dataset,
                "variant": record.name,
                "sigma0": record.sigma0,
                "K": record.K,
                "inputs": len(log),
                "certify_s": certify_s,
                "extra_s": extra / len(log),
                "total_s": certify_s + extra / len(log),
            }
        )
    frame = pd.DataFrame(rows)
    frame["K"] = frame["K"].astype("Int64")
    if per_variant:
        seconds = ["certify_s", "extra_s", "total_s"]
        frame = frame.groupby(["dataset", "variant"], sort=False, as_index=False)[seconds].mean()
    return frame


def read_benchmark_seconds(path: str | os.PathLike) -> float:
    """Wall-clock seconds of a Snakemake ``benchmark:`` TSV (column ``s``; mean over repeats)."""
    try:
        frame = pd.read_csv(path, sep="\t")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise LogFormatError(f"{path}: not a Snakemake benchmark TSV ({error})") from None
    if "s" not in frame.columns or frame.empty:
        raise LogFormatError(f"{path}: not a Snakemake benchmark TSV (no 's' column or no rows)")
    return float(frame["s"].mean())


def memory_table(records: Sequence[LogRecord]) -> pd.DataFrame:
    """What Algorithm 3 did per log: how many inputs were kept, moved into a region, or shrunk."""
    rows = []
    for record in records:
        log = record.load()
        if "memory_action" not in log.columns:
            raise LogFormatError(f"{record.source}: no memory_action column (not a memory-certified log)")
        unknown = set(log["memory_action"]) - set(MEMORY_ACTIONS)
        if unknown:
            raise LogFormatError(f"{record.source}: unknown memory_action {sorted(map(str, unknown))}")
        counts = log["memory_action"].value_counts()
        rows.append(
            {
                "dataset": record.dataset,
                "variant": record.name,
                "sigma0": record.sigma0,
                "K": record.K,
                "inputs": len(log),
                **{action: int(counts.get(action, 0)) for action in MEMORY_ACTIONS},
            }
        )
    frame = pd.DataFrame(rows)
    frame["K"] = frame["K"].astype("Int64")
    return frame


def log_table(logs: Mapping[str, str | os.PathLike | pd.DataFrame], radii: Sequence[float]) -> BestTable:
    """Any logs side by side: one row per labelled log, then their ``envelope`` row.

    The envelope row is the best certified accuracy per radius over the logs and their best ACR;
    ``winners`` (columns ``metric, radius, log, value``) names the log behind each of its cells.
    """
    if not logs:
        raise ValueError("no certification logs given")
    frames = {label: load_log(log) for label, log in logs.items()}
    _check_same_inputs([(_source(logs[label]), "", frame) for label, frame in frames.items()])
    rows = []
    for label, log in frames.items():
        curve = 100 * certified_accuracy(log, radii)
        rows.append({"log": label, **{radius_column(r): v for r, v in curve.items()}, "ACR": acr(log)})
    best, winner = envelope({label: 100 * certified_accuracy(log, radii) for label, log in frames.items()})
    scores = pd.Series({label: acr(log) for label, log in frames.items()})
    rows.append({"log": "envelope", **{radius_column(r): v for r, v in best.items()}, "ACR": scores.max()})
    winners = [
        {"metric": "certified_accuracy", "radius": r, "log": winner.loc[r], "value": best.loc[r]} for r in best.index
    ]
    winners.append({"metric": "ACR", "radius": np.nan, "log": scores.idxmax(), "value": scores.max()})
    return BestTable(_frame(rows, ["log"]), pd.DataFrame(winners))


def _source(log) -> str:
    return "<DataFrame>" if isinstance(log, pd.DataFrame) else str(log)


def gradient_norms_table(paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """Sun et al. (2024) Table 1: the ``ddrs gradient-norms`` rows of each model, methods by display name."""
    from ddrs.analysis.records import display_name

    rows = pd.concat([pd.read_csv(path, sep="\t") for path in paths], ignore_index=True)
    rows.insert(0, "variant", rows.pop("method").map(display_name))
    return rows
