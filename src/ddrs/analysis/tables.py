"""Assemble the paper's tables from certification logs (DDRS §4.1–4.4, Appendices B, F, H).

Every table takes a list of :class:`~ddrs.analysis.records.LogRecord` and returns DataFrames with
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
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ddrs.analysis.assemble import BOLD_ATTR, assemble, radius_column
from ddrs.analysis.evidence import PER_LOG, row_evidence, selection_masks
from ddrs.analysis.metrics import paper_radii
from ddrs.analysis.records import LogRecord, load_log, modes_of, variant_order
from ddrs.analysis.stats import DEFAULT_INFERENCE, Inference
from ddrs.core.memory import MEMORY_ACTIONS
from ddrs.errors import LogFormatError
from ddrs.jobs.sigma_log_format import read_sigma_seconds

#: a table's certification logs
LogRecords = Sequence[LogRecord]
Radii = Sequence[float] | Mapping[str, Sequence[float]] | None
WINNER_COLUMNS = ["dataset", "variant", "metric", "radius", "sigma0", "K", "value"]


@dataclass(frozen=True)
class BestTable:
    """A best-per-radius table and, in long format, the setting that won each of its cells."""

    table: pd.DataFrame
    winners: pd.DataFrame


def _radii_for(radii: Radii, dataset: str, norm: int) -> tuple[float, ...]:
    if radii is None:
        return paper_radii(dataset, norm)
    if isinstance(radii, Mapping):
        if dataset not in radii:
            raise ValueError(f"no radius grid given for dataset {dataset!r}")
        return tuple(radii[dataset])
    return tuple(radii)


def load_records(records: Sequence[LogRecord]) -> list[tuple[LogRecord, pd.DataFrame]]:
    """Every record with its log, as the tables compare them: a header-only log refused, logs of a
    ``common_inputs`` dataset cut to the inputs all of them certify, and otherwise logs of
    different inputs refused (:func:`restrict_to_common_inputs`)."""
    if not records:
        raise ValueError("no certification logs given")
    loaded = [(record, with_rows(record.source, record.load())) for record in records]
    common = {record.dataset for record in records if record.common_inputs}
    if common:
        logs = restrict_to_common_inputs([(r.source, r.dataset, log) for r, log in loaded], common)
        loaded = [(record, log) for (record, _), log in zip(loaded, logs, strict=True)]
    _check_same_inputs([(record.source, record.dataset, log) for record, log in loaded])
    return loaded


def with_rows(source: str, log: pd.DataFrame) -> pd.DataFrame:
    """The log, refused with a message naming ``source`` when it has no rows (a header only):
    a table would have no input to count."""
    if log.empty:
        raise ValueError(f"{source}: the log has no rows (a header only); rerun the job that wrote it, or leave it out")
    return log


def labelled_frames(
    logs: Mapping[str, str | os.PathLike | pd.DataFrame], *, common_inputs: bool = False
) -> dict[str, pd.DataFrame]:
    """Labelled logs loaded as one comparison reads them (``ddrs table``, ``ddrs plot``): each with
    rows and all of the same test inputs, errors naming the files; with ``common_inputs``, cut to
    the inputs all of them certify instead (:func:`restrict_to_common_inputs`)."""
    if not logs:
        raise ValueError("no certification logs given")
    sources = {label: _source(log) for label, log in logs.items()}
    frames = {label: with_rows(sources[label], load_log(log)) for label, log in logs.items()}
    if common_inputs:
        cut = restrict_to_common_inputs([(sources[label], "", frame) for label, frame in frames.items()], {""})
        frames = dict(zip(frames, cut, strict=True))
    _check_same_inputs([(sources[label], "", frame) for label, frame in frames.items()])
    return frames


def restrict_to_common_inputs(
    logs: Sequence[tuple[str, str, pd.DataFrame]], datasets: Collection[str]
) -> list[pd.DataFrame]:
    """The logs (source, dataset, log), those of ``datasets`` cut to the test inputs every log of
    their dataset certifies, with a warning naming the counts where any log loses inputs.

    An opt-in for given logs that stop early (Cohen et al.'s published ImageNet σ = 0.25 log
    certifies 427 of the 500 inputs); by default logs of different inputs are an error.
    """
    shared: dict[str, set] = {}
    for _, dataset, log in logs:
        if dataset in datasets:
            inputs = set(log["idx"].tolist())
            shared[dataset] = shared[dataset] & inputs if dataset in shared else inputs
    for dataset, inputs in shared.items():
        counts = {source: log["idx"].nunique() for source, d, log in logs if d == dataset}
        if not inputs:
            raise ValueError(f"{dataset}: the logs {sorted(counts)} certify no test input in common")
        cut = {source: n for source, n in counts.items() if n != len(inputs)}
        if cut:
            warnings.warn(
                f"{dataset + ': ' if dataset else ''}every log is restricted to the {len(inputs)} test inputs all "
                f"{len(counts)} logs certify; inputs before: "
                + ", ".join(f"{source} {n}" for source, n in counts.items()),
                stacklevel=2,
            )
    return [
        log[log["idx"].isin(shared[dataset])].reset_index(drop=True) if dataset in shared else log
        for _, dataset, log in logs
    ]


def _check_same_inputs(logs: Sequence[tuple[str, str, pd.DataFrame]]) -> None:
    """Logs compared in one table must certify the same test inputs: (source, dataset, log)."""
    first: dict[str, tuple[str, set]] = {}
    for source, dataset, log in logs:
        if log["idx"].duplicated().any():
            raise LogFormatError(f"{source}: an input idx appears twice; a log certifies each input once")
        inputs = set(log["idx"].tolist())
        reference, expected = first.setdefault(dataset, (source, inputs))
        if expected != inputs:
            raise ValueError(
                f"{source} and {reference} certify different test inputs ({len(inputs)} vs "
                f"{len(expected)} rows); compare logs of the same test set, or opt in to their common inputs "
                "(a dataset's `common_inputs: true`, `--common-inputs` of `ddrs table` and `ddrs plot`)"
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


def _envelope(candidates, radii: Radii, selection: str, seed: int, single: bool = False):
    """Evidence of a best row over its candidates, under ``selection``."""
    record, log = candidates[0]
    select, evaluate = selection_masks(selection, len(log), seed=seed, dataset=record.dataset)
    logs = [log for _, log in candidates]
    grid = _radii_for(radii, record.dataset, record.norm)
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


def _modes(candidates, name) -> dict:
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
    groups = _grouped(load_records(records), lambda r: (r.dataset, r.name))
    rows = []
    for (dataset, name), candidates in groups.items():
        keys = {"dataset": dataset, "variant": name, **_modes(candidates, name)}
        rows.append((keys, _envelope(candidates, radii, selection, inference.seed)))
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
    for (dataset, name), members in _grouped(load_records(records), lambda r: (r.dataset, r.name)).items():
        for record, log in members:
            keys = {"dataset": dataset, "variant": name, **_modes(members, name), "sigma0": record.sigma0}
            keys["K"] = record.K
            rows.append((keys, _envelope([(record, log)], radii, "test", inference.seed, single=True)))
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
        rows.append((keys, _envelope([(record, log)], radii, "test", inference.seed, single=True)))
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
    per_sigma = _grouped(loaded, lambda r: (r.dataset, r.sigma0, r.name))
    for (dataset, sigma0, name), candidates in sorted(per_sigma.items(), key=_by_dataset_then_sigma(per_sigma)):
        keys = {"dataset": dataset, "sigma0": f"{sigma0:g}", "variant": name}
        rows.append((keys, _envelope(candidates, radii, selection, inference.seed)))
    for (dataset, name), candidates in _grouped(loaded, lambda r: (r.dataset, r.name)).items():
        keys = {"dataset": dataset, "sigma0": "envelope", "variant": name}
        rows.append((keys, _envelope(candidates, radii, selection, inference.seed)))
    leading = ["dataset", "sigma0", "variant"]
    return assemble(rows, leading, groups=("dataset", "sigma0"), inference=inference)


def _by_dataset_then_sigma(groups: dict):
    """Keep the grouping's dataset and variant order but gather each σ₀'s rows together."""
    order = {key: position for position, key in enumerate(groups)}
    datasets = list(dict.fromkeys(key[0] for key in groups))
    return lambda item: (datasets.index(item[0][0]), item[0][1], order[item[0]])


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
                "dataset": record.dataset,
                "variant": record.name,
                "sigma0": record.sigma0,
                "K": record.K,
                "inputs": len(log),
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


def _source(log) -> str:
    return "<DataFrame>" if isinstance(log, pd.DataFrame) else str(log)


def gradient_norms_table(paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """Sun et al. (2024) Table 1: the ``ddrs gradient-norms`` rows of each model, methods by display name."""
    from ddrs.analysis.records import display_name

    rows = pd.concat([pd.read_csv(path, sep="\t") for path in paths], ignore_index=True)
    rows.insert(0, "variant", rows.pop("method").map(display_name))
    return rows
