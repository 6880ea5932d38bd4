"""Loading the logs a table or figure compares, aligned on their test inputs: every log has rows,
logs compared together certify the same inputs (or, opted in, are cut to the inputs all of them
certify), and records are grouped in the paper's row order."""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from ddrs.analysis.log_record import LogRecord, load_log, variant_order
from ddrs.errors import LogFormatError


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


def grouped(loaded, key) -> dict[tuple, list[tuple[LogRecord, pd.DataFrame]]]:
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


def _source(log) -> str:
    return "<DataFrame>" if isinstance(log, pd.DataFrame) else str(log)
