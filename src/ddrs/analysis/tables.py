"""Assemble the paper's tables from certification logs (DDRS §4.1–4.4, Appendices B, F, H).

Every table takes a list of :class:`~ddrs.analysis.log_record.LogRecord` and returns DataFrames with
one column per radius (named ``"0.25"`` etc., values in percent), its ACR columns, and a 1 − α
interval on every such cell (columns ``<c>_low``, ``<c>_high``; :mod:`ddrs.analysis.assemble`
gives the CSV contract and the significance-aware bold mask the frame carries).

A "best" row is the envelope over its candidate logs: at each radius the best certified accuracy
over training σ (fixed-σ rows) or over σ₀ and K (-DS rows), as the paper states for Tables 1–4.
It has both ACR conventions (:mod:`ddrs.analysis.evidence`): ``ACR_per_log``, the best ACR of any
one candidate, and ``ACR_per_input_best``, the paper's, each input's best radius over the same
candidates (an oracle figure). Rows of one log (Appendix H, the per-σ studies) have one ``ACR``.
The companion ``winners`` table records which (σ₀, K) won each cell.

``selection="test"`` chooses each cell's candidate on the test inputs it reports (the paper's), so a
row of several candidates is described and not tested (never bold); ``selection="held_out"``
chooses on a seeded half and reports on the other half, and its rows are tested. Every builder
with intervals takes ``inference`` (:class:`~ddrs.analysis.stats.Inference`: interval level
1 − α and the bolding's significance level, bootstrap resamples, the seed of the bootstrap and
the split).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import BOLD_ATTR, assemble, radius_column
from ddrs.analysis.evidence import PER_LOG, row_evidence, selection_masks
from ddrs.analysis.loading import grouped, labelled_frames, load_records
from ddrs.analysis.log_record import LogRecord, modes_of
from ddrs.analysis.metrics import paper_radii
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference
from ddrs.core.memory import MEMORY_ACTIONS
from ddrs.errors import LogFormatError
from ddrs.logs.sigma_log import read_sigma_seconds

#: a table's certification logs
LogRecords = Sequence[LogRecord]
Radii = Sequence[float] | Mapping[str, Sequence[float]] | None
WINNER_COLUMNS = ["dataset", "variant", "metric", "radius", "sigma0", "K", "value"]


@dataclass(frozen=True)
class BestTable:
    """A best-per-radius table and, in long format, the setting that won each of its cells."""

    table: pd.DataFrame
    winners: pd.DataFrame


def radii_for(radii: Radii, dataset: str, norm: int) -> tuple[float, ...]:
    if radii is None:
        return paper_radii(dataset, norm)
    if isinstance(radii, Mapping):
        if dataset not in radii:
            raise ValueError(f"no radius grid given for dataset {dataset!r}")
        return tuple(radii[dataset])
    return tuple(radii)


def envelope(candidates, radii: Radii, selection: str, seed: int, single: bool = False):
    """Evidence of a best row over its candidates, under ``selection``."""
    record, log = candidates[0]
    select, evaluate = selection_masks(selection, len(log), seed=seed, dataset=record.dataset)
    logs = [log for _, log in candidates]
    grid = radii_for(radii, record.dataset, record.norm)
    return row_evidence(record.dataset, logs, grid, select=select, evaluate=evaluate, single=single)


def _winners(candidates, evidence, row: pd.Series) -> list[dict]:
    """Which candidate won each cell of a best row, with the cell's value."""
    cells = [("certified_accuracy", r, radius_column(r)) for r in evidence.radii] + [(PER_LOG, np.nan, PER_LOG)]
    return [
        _winner(candidates[chosen][0], metric, radius, row[column])
        for (metric, radius, column), chosen in zip(cells, evidence.chosen, strict=True)
    ]


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


def row_modes(candidates, name) -> dict:
    train, certify = modes_of((record for record, _ in candidates), name)
    return {"train": train.upper(), "certify": certify.upper()}


def best_table(
    records: LogRecords, radii: Radii = None, *, selection: str = "test", inference: Inference = DEFAULT_INFERENCE
) -> BestTable:
    """Tables 1–4: per dataset, one row per variant (Cohen, Cohen-DS, Cohen-DS², …).

    Each row is the best certified accuracy per radius (percent) over its logs — training σ for
    fixed-σ rows, σ₀ and K for data-dependent rows — with ``ACR_per_log`` and
    ``ACR_per_input_best`` over the same logs, and intervals (module docstring).
    ``radii`` is one grid, a ``{dataset: grid}`` mapping, or ``None`` for the paper's grids
    (:func:`~ddrs.analysis.metrics.paper_radii`; ℓ1 grid of Table 4 for uniform noise).
    """
    groups = grouped(load_records(records), lambda r: (r.dataset, r.name))
    rows = []
    for (dataset, name), candidates in groups.items():
        keys = {"dataset": dataset, "variant": name, **row_modes(candidates, name)}
        rows.append((keys, envelope(candidates, radii, selection, inference.seed)))
    table = assemble(rows, ["dataset", "variant", "train", "certify"], inference=inference)
    winners = [
        w
        for (_, evidence), candidates, (_, row) in zip(rows, groups.values(), table.iterrows(), strict=True)
        for w in _winners(candidates, evidence, row)
    ]
    return BestTable(table, pd.DataFrame(winners, columns=WINNER_COLUMNS).astype({"K": "Int64"}))


def per_setting_table(
    records: LogRecords, radii: Radii = None, *, inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """Appendix H: certified accuracy (percent) per radius for every (variant, σ₀, K), and ACR.

    Bold compares the rows of one σ₀ (each σ₀ block is its own group, as the appendix lays them
    out): Method, and Method-DS and -DS² at every K."""
    rows = []
    for (dataset, name), members in grouped(load_records(records), lambda r: (r.dataset, r.name)).items():
        for record, log in members:
            keys = {"dataset": dataset, "variant": name, **row_modes(members, name), "sigma0": record.sigma0}
            keys["K"] = record.K
            rows.append((keys, envelope([(record, log)], radii, "test", inference.seed, single=True)))
    leading = ["dataset", "variant", "train", "certify", "sigma0", "K"]
    frame = assemble(rows, leading, groups=("dataset", "sigma0"), inference=inference)
    frame["K"] = frame["K"].astype("Int64")
    return frame


def per_sigma_table(
    records: LogRecords, radii: Radii = None, *, inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """One row per (σ₀, log), σ₀ ascending and the given order within each σ₀: certified accuracy
    (percent) per radius and ACR, the layout of Jeong & Shin (2020) Table 2 and of Sun et al. (2024)
    Tables 2 and 3 (fixed-σ certification of models trained by different methods).

    Bold compares the methods at the same σ₀ (each σ₀ block is its own group)."""
    loaded = load_records(records)
    rows = []
    for _, (record, log) in sorted(enumerate(loaded), key=lambda item: (item[1][0].sigma0, item[0])):
        keys = {"dataset": record.dataset, "sigma0": record.sigma0, "variant": record.name}
        rows.append((keys, envelope([(record, log)], radii, "test", inference.seed, single=True)))
    leading = ["dataset", "sigma0", "variant"]
    return assemble(rows, leading, groups=("dataset", "sigma0"), inference=inference)


def grid_search_table(
    records: LogRecords, radii: Radii = None, *, selection: str = "test", inference: Inference = DEFAULT_INFERENCE
) -> pd.DataFrame:
    """Appendix B: fixed σ, grid search (Method-GDS-n-{1,2,4,10}) and Algorithm 1 (Method-DS).

    One row per (σ₀, variant), best over K where a variant has several; then per variant the
    envelope over σ₀ (``sigma0 == "envelope"``), the last panel of the appendix figure. Bold
    compares the variants within each σ₀ block and within the envelope block.
    """
    loaded = load_records(records)
    rows = []
    per_sigma = grouped(loaded, lambda r: (r.dataset, r.sigma0, r.name))
    for (dataset, sigma0, name), candidates in sorted(per_sigma.items(), key=_by_dataset_then_sigma(per_sigma)):
        keys = {"dataset": dataset, "sigma0": f"{sigma0:g}", "variant": name}
        rows.append((keys, envelope(candidates, radii, selection, inference.seed)))
    for (dataset, name), candidates in grouped(loaded, lambda r: (r.dataset, r.name)).items():
        keys = {"dataset": dataset, "sigma0": "envelope", "variant": name}
        rows.append((keys, envelope(candidates, radii, selection, inference.seed)))
    leading = ["dataset", "sigma0", "variant"]
    return assemble(rows, leading, groups=("dataset", "sigma0"), inference=inference)


def _by_dataset_then_sigma(groups: dict):
    """Keep the grouping's dataset and variant order but gather each σ₀'s rows together."""
    order = {key: position for position, key in enumerate(groups)}
    datasets = list(dict.fromkeys(key[0] for key in groups))
    return lambda item: (datasets.index(item[0][0]), item[0][1], order[item[0]])


def _log_columns(record: LogRecord, log: pd.DataFrame) -> dict:
    """The columns that name a log in a per-log table: its row, σ₀, K and number of inputs."""
    return {
        "dataset": record.dataset,
        "variant": record.name,
        "sigma0": record.sigma0,
        "K": record.K,
        "inputs": len(log),
    }


def runtime_table(records: Sequence[LogRecord], per_variant: bool = False) -> pd.DataFrame:
    """Appendix F: certification seconds per input, fixed vs data-dependent.

    ``certify_s`` is the mean of the log's ``time`` column (Cohen's CERTIFY per input);
    ``extra_s`` is the mean ``time`` of the record's σ log over the same inputs (choosing σ:
    Algorithm 1 or the grid search; 0 for fixed σ); ``total_s`` is their sum. An Algorithm 1 run
    that snapshots several K is charged in full to each K. With ``per_variant`` the rows are
    averaged per (dataset, variant).
    """
    rows = []
    for record in records:
        log = record.load()
        certify_s = float(log["time"].mean())
        extra_s = 0.0 if record.sigma_log is None else read_sigma_seconds(record.sigma_log, log["idx"])
        rows.append(
            {
                **_log_columns(record, log),
                "certify_s": certify_s,
                "extra_s": extra_s,
                "total_s": certify_s + extra_s,
            }
        )
    frame = pd.DataFrame(rows)
    frame["K"] = frame["K"].astype("Int64")
    if per_variant:
        seconds = ["certify_s", "extra_s", "total_s"]
        frame = frame.groupby(["dataset", "variant"], sort=False, as_index=False)[seconds].mean()
    return frame


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
                **_log_columns(record, log),
                **{action: int(counts.get(action, 0)) for action in MEMORY_ACTIONS},
            }
        )
    frame = pd.DataFrame(rows)
    frame["K"] = frame["K"].astype("Int64")
    return frame


def log_table(
    logs: Mapping[str, str | os.PathLike | pd.DataFrame],
    radii: Sequence[float],
    *,
    inference: Inference = DEFAULT_INFERENCE,
) -> BestTable:
    """Any logs side by side: one row per labelled log, then their ``envelope`` row, with intervals.

    The envelope row is the best certified accuracy per radius over the logs and both ACR
    conventions (for one log they coincide); ``winners`` (columns ``metric, radius, log, value``)
    names the log behind each of its cells. The envelope row is never bold.
    """
    frames = labelled_frames(logs)
    rows = [({"log": label}, row_evidence("", [log], radii)) for label, log in frames.items()]
    envelope = row_evidence("", list(frames.values()), radii)
    rows.append(({"log": "envelope"}, envelope))
    table = assemble(rows, ["log"], groups=(), inference=inference)
    last = table.index[-1]
    table.attrs[BOLD_ATTR] = frozenset(cell for cell in table.attrs[BOLD_ATTR] if cell[0] != last)
    labels = list(frames)
    cells = [("certified_accuracy", r, radius_column(r)) for r in envelope.radii] + [(PER_LOG, np.nan, PER_LOG)]
    winners = [
        {"metric": metric, "radius": radius, "log": labels[chosen], "value": table.loc[last, column]}
        for (metric, radius, column), chosen in zip(cells, envelope.chosen, strict=True)
    ]
    return BestTable(table, pd.DataFrame(winners))


def gradient_norms_table(paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """Sun et al. (2024) Table 1: the ``ddrs gradient-norms`` rows of each model, methods by display name."""
    from ddrs.analysis.log_record import display_name

    rows = pd.concat([pd.read_csv(path, sep="\t") for path in paths], ignore_index=True)
    rows.insert(0, "variant", rows.pop("method").map(display_name))
    return rows
