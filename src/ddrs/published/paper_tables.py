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
  without saying which; the row is judged under the run fixed in advance, the mapping's first
  candidate (no mapping note names another), like every other row. The mapping lists candidates in
  the repository's byte-wise path order in 19 of its 23 ``one_of`` rows; in Jeong & Shin's CIFAR-10
  supplement it lists Cohen et al.'s own log of their model before Salman et al.'s re-certification
  (the three Gaussian [1] rows) and λ = 5.0 before λ = 10.0 (Gaussian + Consistency, σ = 1). Strict
  byte order of (repository, path) would make 13 more cells exact on the mirrors (282 exact, 187
  mismatched, against 269 and 200): the order kept, fixed before the comparison, is the less
  flattering one.
  Each candidate is computed too: the run that reproduces most of the row's cells, and the best,
  average and worst over the candidates, are extra columns (``best_run_*``, ``candidates_exact``,
  ``log_choice``), labelled as chosen by matching and never a verdict;
* ``mean_std``: ``ACR`` is the mean over the logs (seeds), ``ACR_std`` their standard deviation
  with :data:`STD_DDOF` (the paper does not state its convention);
* ``envelope``: the best certified accuracy over the logs at each radius, the σ that attains it
  (``best_sigma``) and that log's accuracy at radius 0 (``standard_accuracy``).

``role == "alternative"`` logs (another group's certification of the same model, or a run outside
the stated seeds) never enter the recomputed value; they are reported in ``tried``.

Certified accuracy at r is the percentage of the log's rows with ``correct == 1`` and
``radius >= r``; ACR the mean of ``radius · correct`` (Cohen et al. 2019, §4;
:mod:`ddrs.analysis.metrics`).

A recomputed cell is compared with the printed one under one rounding convention per table, fixed
from the paper before any comparison (:func:`table_convention`: half-up, as no seed paper states
one); a certified
accuracy printed 0 beyond the largest radius its logs' n and α allow (σΦ⁻¹(α^(1/n)), Cohen et al.
§3.2.2) cannot miss and is counted apart (``trivial``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, ROUND_UP, Decimal
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.analysis.metrics import acr, certified_accuracy
from ddrs.errors import DDRSError, FetchError
from ddrs.io import atomic_path
from ddrs.logs.certification_log import read_log

#: what names one printed cell
CELL_COLUMNS = ("paper", "table", "dataset", "row", "sigma", "radius", "metric")
TRANSCRIPTION_COLUMNS = (*CELL_COLUMNS, "value", "printed", "unit", "source")
MAPPING_COLUMNS = ("paper", "table", "row", "sigma", "combine", "role", "repository", "path", "log_sigma", "note")
METRICS = ("certified_accuracy", "ACR", "ACR_std", "best_sigma", "standard_accuracy")
UNITS = ("percent", "fraction", "radius", "sigma")
COMBINES = ("single", "one_of", "mean_std", "envelope")
ROLES = ("primary", "alternative")
#: a cell's verdict (:func:`recompute_tables`), always under the run fixed in advance
VERDICTS = ("exact", "mismatch", "trivial", "no_log")
#: ddof of the standard deviation over seeds (sample standard deviation); the papers do not say
STD_DDOF = 1
#: the rounding conventions a table may print by (all values are ≥ 0, so "up" is away from zero) ...
ROUNDINGS = {
    "half-up": ROUND_HALF_UP,
    "half-even": ROUND_HALF_EVEN,
    "half-down": ROUND_HALF_DOWN,
    "truncation": ROUND_DOWN,
    "ceiling": ROUND_UP,
}
#: ... and the one a table is judged by where its paper states none (:func:`table_convention`)
DEFAULT_ROUNDING = "half-up"
#: Row key of a printed row, shared by the transcription and the mapping
KEY = ("paper", "table", "row", "sigma")
#: (repository, path) of a published log → its file on this machine
LocalFiles = Mapping[tuple[str, str], str | os.PathLike]
#: (repository, path) of a published log → the (n, α) it was certified with
Settings = Mapping[tuple[str, str], tuple[int, float]]


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


def _rounded(value: float, decimals: int, convention: str = DEFAULT_ROUNDING) -> Decimal:
    return _decimal(value).quantize(Decimal(1).scaleb(-decimals), rounding=ROUNDINGS[convention])


def _as_printed(value: float, printed: str, unit: str, convention: str = DEFAULT_ROUNDING) -> str:
    """``value`` rounded by ``convention`` and written as the cell is printed (a share where it prints one)."""
    rounded = _rounded(value, printed_decimals(printed, unit), convention)
    return str((rounded / 100).quantize(Decimal(printed))) if unit == "fraction" else str(rounded)


def verdict(recomputed: float, printed: str, unit: str, convention: str = DEFAULT_ROUNDING) -> str:
    """``exact`` when ``recomputed`` rounded by ``convention`` at the printed precision is the printed
    value, else ``mismatch``. A cell one unit off is a mismatch like any other: the convention is the
    table's (:func:`table_convention`), never chosen per cell."""
    target = Decimal(printed) * (100 if unit == "fraction" else 1)
    return "exact" if _rounded(recomputed, printed_decimals(printed, unit), convention) == target else "mismatch"


#: the rounding convention a seed paper states for a table ((paper, table) → (convention, where it says
#: so)); none of the seed papers states one (their text copies say nothing of rounding), so every
#: table is judged half-up (:func:`table_convention`)
STATED_CONVENTIONS: dict[tuple[str, str], tuple[str, str]] = {}


def table_convention(paper: str, table: str) -> tuple[str, str]:
    """The rounding convention of one printed table, and where it comes from: the paper's own statement
    (:data:`STATED_CONVENTIONS`), else half-up.

    It is fixed from the paper and table alone, before any cell is compared: no recomputed value, and
    so no match, can change it. What other conventions would give is reported per cell (``tried``),
    never counted.
    """
    stated = STATED_CONVENTIONS.get((paper, table))
    if stated is not None:
        convention, where = stated
        return convention, f"{convention}, as the paper states ({where}); fixed before any comparison"
    return DEFAULT_ROUNDING, f"{DEFAULT_ROUNDING}: the paper states no rounding convention; fixed before any comparison"


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
        self.files = files  # looked up only when read: a manifest's files are checked then (CachedLogs)
        self.cache: dict[tuple[str, str], pd.DataFrame] = {}

    def available(self, repository: str, path: str) -> bool:
        return (repository, path) in self.files and Path(self.files[repository, path]).is_file()

    def __call__(self, repository: str, path: str) -> pd.DataFrame:
        key = (repository, path)
        if key not in self.cache:
            if not self.available(*key):
                raise FetchError(
                    f"no local copy of {repository}:{path}; fetch the published logs first (or pass its file in "
                    "`files`)"
                )
            self.cache[key] = read_log(Path(self.files[key]))
        return self.cache[key]


def _row_values(cells: pd.DataFrame, logs: list[tuple[float, pd.DataFrame]], combine: str, **options) -> list[float]:
    return [_cell(cell.metric, _radius(cell), logs, combine, **options) for cell in cells.itertuples(index=False)]


def _label(entry) -> str:
    return f"{entry.repository}:{entry.path}"


def _pairs(entries: list, read: _Logs) -> list[tuple[float, pd.DataFrame]]:
    """``(log_sigma, log)`` of each mapping entry, as :func:`_cell` takes them."""
    return [(float(e.log_sigma), read(e.repository, e.path)) for e in entries]


@dataclass
class _PrintedRow:
    """One printed row with its runs computed: a ``one_of`` row has one run per candidate log (in the
    mapping's order; the first is the run fixed in advance), any other row the one its mapping names."""

    cells: pd.DataFrame
    combine: str
    runs: list[list]  # per run: its mapping entries
    values: list[list[float]]  # per run: one value per cell
    trivial: list[bool]  # per cell (see _trivial_cells)
    alternatives: list  # the alternative entries whose logs are here


def _radius_cap(entries: list, settings: Settings) -> float | None:
    """The largest radius any of ``entries``' logs can certify, σ·Φ⁻¹(α^(1/n)) with the n and α it was
    certified with (Cohen et al. §3.2.2; :func:`ddrs.published.audit.radius_bound`); None where one's
    n or α is unknown."""
    from ddrs.published.audit import radius_bound

    caps = []
    for entry in entries:
        stated = settings.get((entry.repository, entry.path))
        if stated is None:
            return None
        caps.append(radius_bound(float(entry.log_sigma), *stated))
    return max(caps)


def _trivial_cells(cells: pd.DataFrame, values: list[list[float]], cap: float | None) -> list[bool]:
    """A cell no log of its n and α could miss: certified accuracy printed 0 at a radius beyond the
    row's cap, where every run gives 0 (a log that certifies beyond its stated cap is judged as usual)."""
    return [
        cap is not None
        and cell.metric == "certified_accuracy"
        and _radius(cell) > cap
        and Decimal(cell.printed) == 0
        and all(run[k] == 0 for run in values)
        for k, cell in enumerate(cells.itertuples(index=False))
    ]


def _computed_row(cells: pd.DataFrame, entries: pd.DataFrame, read: _Logs, settings: Settings) -> _PrintedRow:
    combine = entries["combine"].iloc[0]
    primary = list(entries[entries["role"] == "primary"].itertuples(index=False))
    runs = [[entry] for entry in primary] if combine == "one_of" else [primary]
    single = "single" if combine == "one_of" else combine
    values = [_row_values(cells, _pairs(run, read), single) for run in runs]
    alternatives = [
        e
        for e in entries[entries["role"] == "alternative"].itertuples(index=False)
        if read.available(e.repository, e.path)
    ]
    trivial = _trivial_cells(cells, values, _radius_cap(primary, settings))
    return _PrintedRow(cells, combine, runs, values, trivial, alternatives)


def _best_run(row: _PrintedRow, convention: str) -> tuple[int, list[str], str]:
    """A ``one_of`` row's candidates compared with the printed cells: the run that gives most non-trivial
    cells exact under ``convention`` (ties go to the first, in the mapping's order), each cell's digits of
    ``candidates_exact``, and the row's ``log_choice``. Reported beside the verdict, never one."""
    cells = list(row.cells.itertuples(index=False))
    exact = [
        [
            not trivial and verdict(value, c.printed, c.unit, convention) == "exact"
            for c, value, trivial in zip(cells, values, row.trivial, strict=True)
        ]
        for values in row.values
    ]
    counts = [sum(run) for run in exact]
    best = int(np.argmax(counts))
    judged = len(cells) - sum(row.trivial)
    ties = counts.count(counts[best]) - 1
    tied = f" (tied with {ties} other{'s' * (ties > 1)})" if ties else ""
    log_choice = (
        f"judged under the run fixed in advance (the mapping's first of {len(counts)} candidate runs, "
        f"{row.runs[0][0].path}): {counts[0]}/{judged} cells exact under {convention}; chosen by matching, not a "
        f"verdict: the best run {row.runs[best][0].path} {counts[best]}/{judged}{tied}; over the candidates best "
        f"{max(counts)}, average {np.mean(counts):.1f}, worst {min(counts)}"
    )
    digits = ["".join("1" if run[k] else "0" for run in exact) for k in range(len(cells))]
    return best, digits, log_choice


def _diff_rows(row: _PrintedRow, convention: str, read: _Logs) -> pd.DataFrame:
    """The diff rows of one printed row under its table's ``convention``, judged with the run fixed in
    advance (the first; for a ``one_of`` row the best run by matching is reported beside it)."""
    several = row.combine == "one_of"
    if several:
        best, digits, log_choice = _best_run(row, convention)
    else:
        best, digits, log_choice = 0, [""] * len(row.cells), "as mapped"
    records = []
    for k, cell in enumerate(row.cells.itertuples(index=False)):
        value = row.values[0][k]
        result = verdict(value, cell.printed, cell.unit, convention)
        matched = several and not row.trivial[k]
        best_value = row.values[best][k] if matched else float("nan")
        tried = _tried(row, k, convention, read) if result == "mismatch" and not row.trivial[k] else []
        records.append(
            {
                **{column: getattr(cell, column) for column in (*CELL_COLUMNS, "printed", "unit")},
                "value": float(cell.value),
                "decimals": printed_decimals(cell.printed, cell.unit),
                "recomputed": float(_decimal(value)),
                "recomputed_rounded": _as_printed(value, cell.printed, cell.unit, convention),
                "difference": value - float(cell.value),
                "verdict": "trivial" if row.trivial[k] else result,
                "convention": convention,
                "best_run_recomputed": float(_decimal(best_value)) if matched else best_value,
                "best_run_verdict": verdict(best_value, cell.printed, cell.unit, convention) if matched else "",
                "candidates_exact": digits[k] if matched else "",
                "combine": row.combine,
                "logs": "; ".join(_label(e) for e in row.runs[0]),
                "log_choice": log_choice,
                "tried": "; ".join(tried),
                "source": cell.source,
            }
        )
    return pd.DataFrame.from_records(records, columns=list(DIFF_COLUMNS))


def _tried(row: _PrintedRow, k: int, convention: str, read: _Logs) -> list[str]:
    """What else was computed for cell ``k``, mismatched with the run fixed in advance: reported, never a
    verdict."""
    cell = row.cells.iloc[k]
    value, radius, logs = row.values[0][k], _radius(cell), _pairs(row.runs[0], read)
    single = "single" if row.combine == "one_of" else row.combine
    tried = []
    others = [
        name for name in ROUNDINGS if name != convention and verdict(value, cell.printed, cell.unit, name) == "exact"
    ]
    if others:
        tried.append(f"{', '.join(others)} would give the printed value (the table's convention is {convention})")
    if cell.metric in ("certified_accuracy", "standard_accuracy"):
        tried.append(f"radius > r (strict) → {_fmt(_cell(cell.metric, radius, logs, single, strict=True))}")
    if cell.metric == "ACR_std":
        tried.append(f"ddof=0 → {_fmt(_cell(cell.metric, radius, logs, single, ddof=0))}")
    tried += [
        f"candidate {run[0].path} → {_fmt(values[k])}"
        for i, (run, values) in enumerate(zip(row.runs, row.values, strict=True))
        if row.combine == "one_of" and i != 0
    ]
    if row.alternatives:
        alternative = _pairs(row.alternatives, read)
        if row.combine == "mean_std":
            tried.append(
                f"with the alternative run(s) added ({len(logs) + len(alternative)} logs) → "
                f"{_fmt(_cell(cell.metric, radius, logs + alternative, row.combine))}"
            )
        else:
            alt_value = _cell(cell.metric, radius, alternative, row.combine)
            tried.append(
                f"alternative {', '.join(_label(e) for e in row.alternatives)} → {_fmt(alt_value)} "
                f"({verdict(alt_value, cell.printed, cell.unit, convention)})"
            )
    return tried


DIFF_COLUMNS = (
    *CELL_COLUMNS,
    "printed",
    "unit",
    "value",
    "decimals",
    "recomputed",
    "recomputed_rounded",
    "difference",
    "verdict",
    "convention",
    "convention_evidence",
    "best_run_recomputed",
    "best_run_verdict",
    "candidates_exact",
    "combine",
    "logs",
    "log_choice",
    "tried",
    "source",
)


def registry_settings(registry: pd.DataFrame | None = None) -> dict[tuple[str, str], tuple[int, float]]:
    """``(repository, path)`` → ``(n, α)`` of every registry log that states both (the shipped registry
    unless ``registry`` is given)."""
    from ddrs.published.log_registry import load_registry

    registry = load_registry() if registry is None else registry
    stated = registry[registry["n"].notna() & registry["alpha"].notna()]
    return {
        (repository, path): (int(n), float(alpha))
        for repository, path, n, alpha in zip(
            stated["repository"], stated["path"], stated["n"], stated["alpha"], strict=True
        )
    }


def recompute_tables(
    files: LocalFiles,
    transcription: pd.DataFrame | None = None,
    mapping: pd.DataFrame | None = None,
    progress: Callable | None = None,
    settings: Settings | None = None,
) -> pd.DataFrame:
    """One row per printed cell: printed and recomputed value and the verdict, under the run fixed in
    advance (a row's mapped logs; for a ``one_of`` row the mapping's first candidate) and one rounding
    convention per table, fixed from the paper before any comparison (:func:`table_convention`;
    ``convention`` and ``convention_evidence`` state it on every cell).

    Verdicts (:data:`VERDICTS`): ``trivial``, a certified accuracy printed 0 beyond the radius cap of
    the row's logs (:func:`_trivial_cells`); ``exact`` or ``mismatch`` for every other cell with a log;
    ``no_log`` for a row without one. A ``one_of`` row's cells also carry, labelled as chosen by
    matching and never a verdict, the best run's value and verdict (``best_run_recomputed``,
    ``best_run_verdict``) and one digit per candidate (``candidates_exact``, 1: exact; :func:`_best_run`).

    ``files`` maps each mapped log's ``(repository, path)`` to its local file (alternative logs may be
    absent: they are then left out of ``tried``); ``settings`` each log's ``(n, α)``, the shipped
    registry's by default (:func:`registry_settings`; a log without them has no radius cap, so none
    of its cells is trivial).
    """
    transcription = load_transcription() if transcription is None else transcription
    mapping = load_mapping(transcription=transcription) if mapping is None else mapping
    settings = registry_settings() if settings is None else settings
    transcription = transcription.assign(_key=transcription["sigma"].map(_sigma_key))
    mapping = mapping.assign(_key=mapping["sigma"].map(_sigma_key))
    read = _Logs(files)
    groups = transcription.groupby(["paper", "table", "row", "_key"], sort=False)
    rows: list[tuple[tuple[str, str], pd.DataFrame | _PrintedRow]] = []
    for (paper, table, row, sigma), cells in progress(groups) if progress else groups:
        entries = mapping[
            (mapping["paper"] == paper)
            & (mapping["table"] == table)
            & (mapping["row"] == row)
            & (mapping["_key"] == sigma)
        ]
        cells = cells.drop(columns="_key")
        rows.append(((paper, table), cells if entries.empty else _computed_row(cells, entries, read, settings)))
    frames = []
    for table in dict.fromkeys(key for key, _ in rows):
        convention, evidence = table_convention(*table)
        printed = [row for key, row in rows if key == table]
        frames += [
            (_diff_rows(row, convention, read) if isinstance(row, _PrintedRow) else _no_log(row, convention)).assign(
                convention_evidence=evidence
            )
            for row in printed
        ]
    return pd.concat(frames, ignore_index=True).reindex(columns=list(DIFF_COLUMNS))


def _no_log(cells: pd.DataFrame, convention: str) -> pd.DataFrame:
    return cells[[c for c in DIFF_COLUMNS if c in cells.columns]].assign(
        value=cells["value"].astype(float),
        decimals=[printed_decimals(p, u) for p, u in zip(cells["printed"], cells["unit"], strict=True)],
        verdict="no_log",
        convention=convention,
        tried="no published log backs this row",
    )


def table_counts(cells: pd.DataFrame) -> dict[str, int | float]:
    """One table's diff in numbers: cells per verdict (:data:`VERDICTS`, under the run fixed in advance)
    and in all; then, for the non-trivial cells of rows with several candidate runs (``several_runs``),
    what matching would give, labelled as such: summing each row's exact count per candidate run, the
    best, average and worst over the candidates (``candidates_best_exact``, ``_average_``, ``_worst_``)."""
    counts: dict[str, int | float] = {name: int((cells["verdict"] == name).sum()) for name in VERDICTS}
    counts["cells"] = len(cells)
    several = cells[cells["candidates_exact"].fillna("") != ""]
    per_row = [
        np.array([[int(digit) for digit in digits] for digits in row["candidates_exact"]]).sum(axis=0)
        for _, row in several.groupby(["row", "sigma"], sort=False)
    ]
    counts["several_runs"] = len(several)
    counts["several_runs_exact"] = int((several["verdict"] == "exact").sum())
    counts["candidates_best_exact"] = int(sum(runs.max() for runs in per_row))
    counts["candidates_average_exact"] = float(sum(runs.mean() for runs in per_row))
    counts["candidates_worst_exact"] = int(sum(runs.min() for runs in per_row))
    return counts


def write_diff(diff: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write the cell-by-cell diff as CSV, atomically."""
    with atomic_path(path) as tmp:
        diff.to_csv(tmp, index=False)
