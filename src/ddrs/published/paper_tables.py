"""The seed papers' printed tables recomputed from their authors' published certification logs.

``ddrs/reference/seed_papers.csv`` transcribes the printed cells of Cohen et al. (2019, Tables 1–3),
Jeong & Shin (2020, supplement Tables 2–3 and its CIFAR-10 table) and Sun et al. (2024, Table 2),
one cell per row::

    paper, table, dataset, row, sigma, radius, metric, value, printed, unit, source

``printed`` is the cell's text as printed (its decimals are the printed precision), ``unit`` says
how: ``percent``, ``fraction`` (certified accuracy printed as a share, as Cohen et al. do; ``value``
is then in percent), ``radius`` (ACR) or ``sigma`` (Cohen et al.'s "best σ"); ``source`` names
paper, table, row, column and the line of the text copy.

``ddrs/reference/seed_paper_logs.csv`` names, per printed row (paper, table, row, σ), the logs
behind it, by the registry's ``repository, path``, and how the row is computed from them
(``combine``):

* ``single``: one log;
* ``one_of``: the row prints one run and the authors publish several runs of its configuration
  without saying which; each candidate is computed and the row is compared with the candidate
  that reproduces most of its cells (``log_choice`` says which, and how many cells it matched):
  this identifies a log, it does not change how any value is computed;
* ``mean_std``: ``ACR`` is the mean over the logs (seeds), ``ACR_std`` their standard deviation
  with :data:`STD_DDOF` (the paper does not state its convention);
* ``envelope``: the best certified accuracy over the logs at each radius, the σ that attains it
  (``best_sigma``) and that log's accuracy at radius 0 (``standard_accuracy``).

``role == "alternative"`` logs (another group's certification of the same model, or a run outside
the stated seeds) never enter the recomputed value; they are reported in ``tried``.

Certified accuracy at r is the percentage of the log's rows with ``correct == 1`` and
``radius >= r``; ACR the mean of ``radius · correct`` (Cohen et al. 2019, §4;
:mod:`ddrs.analysis.metrics`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_DOWN, ROUND_HALF_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, ROUND_UP, Decimal
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.metrics import acr, certified_accuracy
from ddrs.errors import DDRSError, FetchError
from ddrs.io import atomic_path
from ddrs.jobs.logs import read_log

#: what names one printed cell
CELL_COLUMNS = ("paper", "table", "dataset", "row", "sigma", "radius", "metric")
TRANSCRIPTION_COLUMNS = (*CELL_COLUMNS, "value", "printed", "unit", "source")
MAPPING_COLUMNS = ("paper", "table", "row", "sigma", "combine", "role", "repository", "path", "log_sigma", "note")
METRICS = ("certified_accuracy", "ACR", "ACR_std", "best_sigma", "standard_accuracy")
UNITS = ("percent", "fraction", "radius", "sigma")
COMBINES = ("single", "one_of", "mean_std", "envelope")
ROLES = ("primary", "alternative")
VERDICTS = ("exact", "rounding", "mismatch", "no_log")
#: ddof of the standard deviation over seeds (sample standard deviation); the papers do not say
STD_DDOF = 1
#: The convention an ``exact`` cell is rounded by (half away from zero; all values are ≥ 0) ...
EXACT_ROUNDING = "half-up"
#: ... and the others that make a cell ``rounding`` rather than ``mismatch``
OTHER_ROUNDINGS = {
    "half-even": ROUND_HALF_EVEN,
    "half-down": ROUND_HALF_DOWN,
    "truncation": ROUND_DOWN,
    "ceiling": ROUND_UP,
}
#: Row key of a printed row, shared by the transcription and the mapping
KEY = ("paper", "table", "row", "sigma")
#: (repository, path) of a published log → its file on this machine
LocalFiles = Mapping[tuple[str, str], str | os.PathLike]


class TranscriptionError(DDRSError):
    """The seed papers' transcription or its log mapping breaks the file contract above."""


def _reference(name: str) -> Path:
    return Path(str(resources.files("ddrs") / "reference" / name))


def _sigma_key(value) -> str:
    """σ as a key: ``0.50`` and ``0.5`` match; empty (Cohen et al.'s Table 1) stays empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or str(value).strip() == "":
        return ""
    return f"{float(value):g}"


def printed_decimals(printed: str, unit: str) -> int:
    """Decimals of a printed cell in the unit of its ``value`` (a printed fraction: two fewer, in percent)."""
    digits = len(printed.split(".")[1]) if "." in printed else 0
    return max(digits - 2, 0) if unit == "fraction" else digits


def _read_reference(path, default: str, columns) -> tuple[Path, pd.DataFrame]:
    """A reference CSV (``default`` of the shipped ones unless ``path`` is given) as strings, refused
    when one of ``columns`` is missing."""
    path = Path(path) if path is not None else _reference(default)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise TranscriptionError(f"{path}: missing column(s) {', '.join(missing)}")
    return path, frame


def _refuse(problems: list[str]) -> None:
    """Raise the first ten problems found (and how many more) as one :class:`TranscriptionError`."""
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise TranscriptionError("; ".join(problems[:10]) + more)


def load_transcription(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The printed cells, checked: every cell has a source, a known metric and unit, and ``value`` is ``printed``."""
    path, frame = _read_reference(path, "seed_papers.csv", TRANSCRIPTION_COLUMNS)
    problems = []
    for number, cell in enumerate(frame.itertuples(index=False), start=2):
        where = f"{path} line {number}"
        if not cell.source.strip():
            problems.append(f"{where}: no source")
        if cell.metric not in METRICS or cell.unit not in UNITS:
            problems.append(f"{where}: metric {cell.metric!r} / unit {cell.unit!r} not one of {METRICS} / {UNITS}")
        if not re.fullmatch(r"\d+(\.\d+)?", cell.printed):
            problems.append(f"{where}: printed {cell.printed!r} is not a number as printed")
            continue
        expected = float(cell.printed) * (100 if cell.unit == "fraction" else 1)
        if not math.isclose(float(cell.value), expected, rel_tol=0, abs_tol=1e-9):
            problems.append(f"{where}: value {cell.value} is not the printed {cell.printed} ({cell.unit})")
        needs_radius = cell.metric in ("certified_accuracy", "best_sigma", "standard_accuracy")
        if needs_radius != bool(cell.radius.strip()):
            problems.append(f"{where}: {cell.metric} {'needs' if needs_radius else 'takes no'} radius")
    keys = list(KEY) + ["radius", "metric"]
    duplicated = frame.assign(sigma=frame["sigma"].map(_sigma_key)).duplicated(keys)
    problems += [f"{path} line {i + 2}: the same cell twice" for i in np.flatnonzero(duplicated)]
    _refuse(problems)
    return frame


def load_mapping(path: str | os.PathLike | None = None, transcription: pd.DataFrame | None = None) -> pd.DataFrame:
    """The logs behind each printed row, checked against the contract above (and the transcription's rows)."""
    path, frame = _read_reference(path, "seed_paper_logs.csv", MAPPING_COLUMNS)
    problems = []
    for number, entry in enumerate(frame.itertuples(index=False), start=2):
        where = f"{path} line {number}"
        if entry.combine not in COMBINES or entry.role not in ROLES:
            problems.append(f"{where}: combine {entry.combine!r} / role {entry.role!r} not one of {COMBINES} / {ROLES}")
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", entry.repository):
            problems.append(f"{where}: repository {entry.repository!r} is not owner/name")
        if not entry.path.strip() or entry.path.startswith("/") or ".." in entry.path.split("/"):
            problems.append(f"{where}: path {entry.path!r} is not a path inside the repository")
        if _sigma_key(entry.log_sigma) == "":
            problems.append(f"{where}: no log_sigma (the σ the log was certified at)")
        if not entry.note.strip():
            problems.append(f"{where}: no note saying where the mapping comes from")
    frame = frame.assign(sigma=frame["sigma"].map(_sigma_key))
    if frame.duplicated(list(KEY) + ["repository", "path"]).any():
        problems.append(f"{path}: a log is named twice for the same row")
    for key, group in frame.groupby(list(KEY), sort=False):
        primary = group[group["role"] == "primary"]
        combines = set(group["combine"])
        least = {"single": 1, "one_of": 2, "mean_std": 2, "envelope": 2}.get(next(iter(combines)), 1)
        if len(combines) != 1:
            problems.append(f"{path}: row {key} mixes combine kinds {sorted(combines)}")
        elif len(primary) < least or (combines == {"single"} and len(primary) != 1):
            problems.append(f"{path}: row {key} ({next(iter(combines))}) has {len(primary)} primary log(s)")
    if transcription is not None:
        printed = set(map(tuple, transcription.assign(sigma=transcription["sigma"].map(_sigma_key))[list(KEY)].values))
        problems += [
            f"{path}: row {key} is not in the transcription"
            for key in sorted(set(map(tuple, frame[list(KEY)].values)) - printed)
        ]
    _refuse(problems)
    return frame


def _decimal(value: float) -> Decimal:
    """A recomputed float as the decimal it stands for (shares of a few thousand rows and radii of ≤ 4
    decimals are exact at 12 decimals; this drops the binary noise of ``0.325 * 100``)."""
    return Decimal(f"{value:.12f}")


def _rounded(value: float, decimals: int, mode: str = ROUND_HALF_UP) -> Decimal:
    return _decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=mode)


def _as_printed(value: float, printed: str, unit: str) -> str:
    """``value`` rounded half-up and written as the cell is printed (a share where it prints one)."""
    rounded = _rounded(value, printed_decimals(printed, unit))
    return str((rounded / 100).quantize(Decimal(printed))) if unit == "fraction" else str(rounded)


def verdict(recomputed: float, printed: str, unit: str) -> tuple[str, str]:
    """``exact`` when ``recomputed`` rounded half-up at the printed precision is the printed value;
    ``rounding`` when another convention (half-even, half-down, truncation, ceiling) gives it;
    ``mismatch`` otherwise. Returns the verdict and, for ``rounding``, the conventions that agree.

    A cell one unit off that no rounding of the recomputed value explains is a ``mismatch``: it is
    a difference in the data (e.g. 64.60 printed as 64.7), not in how it was rounded.
    """
    decimals = printed_decimals(printed, unit)
    target = Decimal(printed) * (100 if unit == "fraction" else 1)
    if _rounded(recomputed, decimals) == target:
        return "exact", ""
    agreeing = [name for name, mode in OTHER_ROUNDINGS.items() if _rounded(recomputed, decimals, mode) == target]
    return ("rounding", ", ".join(agreeing)) if agreeing else ("mismatch", "")


def _percent_at(log: pd.DataFrame, radius: float, strict: bool = False) -> float:
    if strict:  # Cohen et al. App. E.1's wording: "a radius greater than r"
        return float(100 * ((log["correct"] == 1) & (log["radius"] > radius)).mean())
    return float(100 * certified_accuracy(log, [radius]).iloc[0])


def _cell(metric: str, radius: float, logs: list[tuple[float, pd.DataFrame]], combine: str, **options) -> float:
    """One printed cell from its logs (``(log_sigma, frame)`` pairs) under ``combine``."""
    strict = options.get("strict", False)
    if combine == "envelope":
        curves = [_percent_at(frame, radius, strict) for _, frame in logs]
        winner = int(np.argmax(curves))  # ties go to the first log, in the mapping's order
        if metric == "certified_accuracy":
            return curves[winner]
        if metric == "best_sigma":
            return logs[winner][0]
        if metric == "standard_accuracy":
            return _percent_at(logs[winner][1], 0.0, strict)
    elif combine == "mean_std":
        values = [acr(frame) for _, frame in logs]
        if metric == "ACR":
            return float(np.mean(values))
        if metric == "ACR_std":
            return float(np.std(values, ddof=options.get("ddof", STD_DDOF)))
    elif len(logs) == 1:
        frame = logs[0][1]
        if metric == "certified_accuracy":
            return _percent_at(frame, radius, strict)
        if metric == "ACR":
            return acr(frame)
    raise TranscriptionError(f"a {metric} cell cannot be computed from {len(logs)} log(s) combined by {combine!r}")


def _radius(cell) -> float:
    return float(cell.radius) if str(cell.radius).strip() else float("nan")


def _fmt(value: float) -> str:
    return f"{value:.6g}"


class _Logs:
    """Published logs read once each, from the local files the caller names."""

    def __init__(self, files: LocalFiles):
        self.files = {(str(repo), str(path)): Path(local) for (repo, path), local in files.items()}
        self.cache: dict[tuple[str, str], pd.DataFrame] = {}

    def available(self, repository: str, path: str) -> bool:
        return (repository, path) in self.files and self.files[repository, path].is_file()

    def __call__(self, repository: str, path: str) -> pd.DataFrame:
        key = (repository, path)
        if key not in self.cache:
            if not self.available(*key):
                raise FetchError(
                    f"no local copy of {repository}:{path}; fetch the published logs first (or pass its file in "
                    "`files`)"
                )
            self.cache[key] = read_log(self.files[key])
        return self.cache[key]


def _row_values(cells: pd.DataFrame, logs: list[tuple[float, pd.DataFrame]], combine: str, **options) -> list[float]:
    return [_cell(cell.metric, _radius(cell), logs, combine, **options) for cell in cells.itertuples(index=False)]


def _exact_count(cells: pd.DataFrame, values: list[float]) -> int:
    return sum(
        verdict(v, c.printed, c.unit)[0] == "exact" for c, v in zip(cells.itertuples(index=False), values, strict=True)
    )


def _recompute_row(cells: pd.DataFrame, entries: pd.DataFrame, read: _Logs) -> pd.DataFrame:
    """The diff rows of one printed row from its mapping ``entries``."""
    combine = entries["combine"].iloc[0]
    primary = entries[entries["role"] == "primary"]
    alternative = entries[entries["role"] == "alternative"]

    def pairs(subset: pd.DataFrame) -> list[tuple[float, pd.DataFrame]]:
        return [(float(e.log_sigma), read(e.repository, e.path)) for e in subset.itertuples(index=False)]

    def label(entry) -> str:
        return f"{entry.repository}:{entry.path}"

    tried_by_cell: list[list[str]] = [[] for _ in range(len(cells))]
    if combine == "one_of":
        candidates = list(primary.itertuples(index=False))
        computed = [_row_values(cells, pairs(primary.iloc[[i]]), "single") for i in range(len(candidates))]
        matched = [_exact_count(cells, values) for values in computed]
        best = int(np.argmax(matched))  # ties go to the first candidate, in the mapping's order
        values, used, chosen = computed[best], [label(candidates[best])], pairs(primary.iloc[[best]])
        log_choice = f"identified among {len(candidates)} candidate runs: {matched[best]}/{len(cells)} cells exact" + (
            "" if matched.count(matched[best]) == 1 else f" (tied with {matched.count(matched[best]) - 1} other)"
        )
        for i, candidate in enumerate(candidates):
            if i != best:
                for k, value in enumerate(computed[i]):
                    tried_by_cell[k].append(f"candidate {candidate.path} → {_fmt(value)}")
    else:
        chosen = pairs(primary)
        values, used = _row_values(cells, chosen, combine), [label(e) for e in primary.itertuples(index=False)]
        log_choice = "as mapped"
    single = "single" if combine == "one_of" else combine
    alternatives = [e for e in alternative.itertuples(index=False) if read.available(e.repository, e.path)]
    rows = []
    for k, (cell, value) in enumerate(zip(cells.itertuples(index=False), values, strict=True)):
        result, agreeing = verdict(value, cell.printed, cell.unit)
        tried = []
        if result == "rounding":
            tried.append(
                f"half-up gives {_as_printed(value, cell.printed, cell.unit)}; {agreeing} give the printed value"
            )
        elif result == "mismatch":
            tried.append("no rounding (half-up, half-even, half-down, truncation, ceiling) gives the printed value")
            radius = _radius(cell)
            if cell.metric in ("certified_accuracy", "standard_accuracy"):
                tried.append(f"radius > r (strict) → {_fmt(_cell(cell.metric, radius, chosen, single, strict=True))}")
            if cell.metric == "ACR_std":
                tried.append(f"ddof=0 → {_fmt(_cell(cell.metric, radius, chosen, single, ddof=0))}")
            tried += tried_by_cell[k]
            if alternatives:
                if combine == "mean_std":
                    logs_all = chosen + [(float(e.log_sigma), read(e.repository, e.path)) for e in alternatives]
                    tried.append(
                        f"with the alternative run(s) added ({len(logs_all)} logs) → "
                        f"{_fmt(_cell(cell.metric, radius, logs_all, combine))}"
                    )
                else:
                    logs_alt = [(float(e.log_sigma), read(e.repository, e.path)) for e in alternatives]
                    alt_value = _cell(cell.metric, radius, logs_alt, combine)
                    tried.append(
                        f"alternative {', '.join(label(e) for e in alternatives)} → {_fmt(alt_value)} "
                        f"({verdict(alt_value, cell.printed, cell.unit)[0]})"
                    )
        rows.append(
            {
                **{
                    column: getattr(cell, column)
                    for column in ("paper", "table", "dataset", "row", "sigma", "radius", "metric", "printed")
                },
                "value": float(cell.value),
                "decimals": printed_decimals(cell.printed, cell.unit),
                "recomputed": float(_decimal(value)),
                "recomputed_rounded": _as_printed(value, cell.printed, cell.unit),
                "difference": value - float(cell.value),
                "verdict": result,
                "combine": combine,
                "logs": "; ".join(used),
                "log_choice": log_choice,
                "tried": "; ".join(tried),
                "source": cell.source,
            }
        )
    return pd.DataFrame(rows)


DIFF_COLUMNS = (
    *CELL_COLUMNS,
    "printed",
    "value",
    "decimals",
    "recomputed",
    "recomputed_rounded",
    "difference",
    "verdict",
    "combine",
    "logs",
    "log_choice",
    "tried",
    "source",
)


def recompute_tables(
    files: LocalFiles,
    transcription: pd.DataFrame | None = None,
    mapping: pd.DataFrame | None = None,
    progress: Callable | None = None,
) -> pd.DataFrame:
    """One row per printed cell: printed and recomputed value and the verdict (see :func:`verdict`).

    ``files`` maps each mapped log's ``(repository, path)`` to its local file (alternative logs may be
    absent: they are then left out of ``tried``). Rows with no mapped log get the verdict ``no_log``.
    """
    transcription = load_transcription() if transcription is None else transcription
    mapping = load_mapping(transcription=transcription) if mapping is None else mapping
    transcription = transcription.assign(_key=transcription["sigma"].map(_sigma_key))
    mapping = mapping.assign(_key=mapping["sigma"].map(_sigma_key))
    read = _Logs(files)
    groups = transcription.groupby(["paper", "table", "row", "_key"], sort=False)
    frames = []
    for (paper, table, row, sigma), cells in progress(groups) if progress else groups:
        entries = mapping[
            (mapping["paper"] == paper)
            & (mapping["table"] == table)
            & (mapping["row"] == row)
            & (mapping["_key"] == sigma)
        ]
        if entries.empty:
            frame = cells[[c for c in DIFF_COLUMNS if c in cells.columns]].assign(
                value=cells["value"].astype(float),
                decimals=[printed_decimals(p, u) for p, u in zip(cells["printed"], cells["unit"], strict=True)],
                verdict="no_log",
                combine="",
                logs="",
                log_choice="",
                tried="no published log backs this row",
            )
        else:
            frame = _recompute_row(cells.drop(columns="_key"), entries, read)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).reindex(columns=list(DIFF_COLUMNS))


def verdict_counts(diff: pd.DataFrame) -> pd.DataFrame:
    """Cells per verdict, per paper and table."""
    counts = diff.groupby(["paper", "table", "verdict"]).size().unstack("verdict", fill_value=0)
    return counts.reindex(columns=[v for v in VERDICTS if v in counts.columns], fill_value=0)


def write_diff(diff: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write the cell-by-cell diff as CSV, atomically."""
    with atomic_path(path) as tmp:
        diff.to_csv(tmp, index=False)
