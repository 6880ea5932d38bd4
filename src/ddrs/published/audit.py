"""Audit published certification logs before any table uses them (DESIGN.md, "Published logs").

:func:`audit` gives one row per log: its row count against the rows its stride (``skip``) implies
over its dataset's test set, and a flag per defect found reading the four seed repositories' logs:

- ``unreadable``: not in the cache, not the registered content (sha256), or not a log (the
  :class:`~ddrs.errors.LogFormatError` of :func:`ddrs.logs.certification_log.read_log`, recorded, not raised);
- ``header_only``: a header and no row;
- ``cut_short`` / ``starts_late`` / ``missing_inside``: inputs of its stride missing at the end,
  at the start (a run split in parts, one part published) or in between;
- ``idx_out_of_range``: idx beyond its split (a log of another split);
- ``stride_mismatch``: its idx step is not the registry's skip (its rows are then counted at its own step);
- ``non_monotone_idx``: the idx column does not increase (the test stream's order is lost);
- ``duplicate_of``: byte-identical to logs under other names or repositories (they are one result);
- ``mixed_time``: Cohen's ``H:MM:SS.ffffff`` and seconds in one ``time`` column (a log may have
  none: it states no result);
- ``label_conflicts``: rows whose label is not the majority label of the same dataset and split's
  logs at the same idx (another order of the test set: its inputs cannot be paired with theirs);
- ``impossible_radius``: radii above σ·Φ⁻¹(α^(1/n)), the largest CERTIFY can give from n samples
  at level α (all n agree: the Clopper–Pearson lower bound is α^(1/n); Cohen et al. 2019, §3.2.2);
  a radius is printed rounded (Cohen's ``{:.3}``), so only one whose smallest unrounded value
  exceeds the bound counts;
- ``correct_mismatch`` / ``correct_not_binary`` / ``abstain_with_radius`` / ``negative_radius``:
  rows where ``correct`` is not ``predict == label``, ``correct`` is neither 0 nor 1, an abstention
  (``predict`` −1) with a radius, or a radius below 0.

``findings`` says each in a sentence, with the numbers, and names a check that could not be made (a
dataset of unknown size, a log without n or α); a clean log has none.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import log_ndtr, ndtri

from ddrs.core.certificate import ABSTAIN
from ddrs.errors import LogFormatError
from ddrs.logs.certification_log import read_log
from ddrs.published.fetch import log_field, log_name

#: inputs of each dataset's split (the registry's ``split``; test when it has none), by normalised name
#: (see :func:`dataset_key`): CIFAR-10 and MNIST 10,000 test / 50,000 and 60,000 training images;
#: ImageNet's 50,000 validation images (its test split in these logs) / 1,281,167 training images
SPLIT_SIZES = {
    ("cifar10", "test"): 10_000,
    ("cifar10", "train"): 50_000,
    ("mnist", "test"): 10_000,
    ("mnist", "train"): 60_000,
    ("imagenet", "test"): 50_000,
    ("imagenet", "train"): 1_281_167,
}
#: the flag columns, in order: a log is flagged for one when its value is true (a count above 0, a name)
FLAGS = (
    "unreadable",
    "header_only",
    "cut_short",
    "starts_late",
    "missing_inside",
    "idx_out_of_range",
    "stride_mismatch",
    "non_monotone_idx",
    "duplicate_of",
    "mixed_time",
    "label_conflicts",
    "impossible_radius",
    "correct_mismatch",
    "correct_not_binary",
    "abstain_with_radius",
    "negative_radius",
)
#: a clean log's value of each flag that is not a count
_CLEAR = dict.fromkeys(
    ("unreadable", "header_only", "cut_short", "starts_late", "stride_mismatch", "non_monotone_idx", "mixed_time"),
    False,
) | {"duplicate_of": ""}
#: what each row of the audit says about its log besides the flags
DETAILS = (
    "repository",
    "path",
    "dataset",
    "sigma",
    "rows",
    "expected_rows",
    "stride",
    "stride_source",
    "first_idx",
    "last_idx",
    "radius_bound",
    "max_radius",
)


def dataset_key(name) -> str:
    """``CIFAR-10``, ``cifar10`` → ``cifar10``: lower case, letters and digits only."""
    return "".join(character for character in str(name).lower() if character.isalnum())


def radius_bound(sigma: float, n: int, alpha: float) -> float:
    """σ·Φ⁻¹(α^(1/n)): the radius CERTIFY gives when all n samples agree, its largest (Cohen et al. §3.2.2).

    α^(1/n) is the one-sided Clopper–Pearson lower bound at n successes of n
    (:func:`ddrs.core.binomial.clopper_pearson_lower`); 1 − α^(1/n) is taken as −expm1(ln α / n),
    exact where α^(1/n) rounds to a float near 1.
    """
    return sigma * -float(ndtri(-math.expm1(math.log(alpha) / n)))


def audit(logs: Sequence, paths: Sequence[str | os.PathLike | None]) -> pd.DataFrame:
    """One row per log of ``logs`` (registry entries, or mappings with its columns), read from ``paths``.

    Columns: :data:`DETAILS`, :data:`FLAGS`, then ``findings`` (plain-English sentences).
    """
    if len(logs) != len(paths):
        raise ValueError(f"audit needs one path per log, got {len(logs)} logs and {len(paths)} paths")
    audits = [_audit_one(log, path) for log, path in zip(logs, paths, strict=True)]
    _mark_duplicates(audits)
    _mark_label_conflicts(audits)
    records = [{**entry.details, **entry.flags, "findings": " ".join(entry.findings)} for entry in audits]
    frame = pd.DataFrame.from_records(records, columns=[*DETAILS, *FLAGS, "findings"])
    for column in ("expected_rows", "stride", "first_idx", "last_idx"):
        frame[column] = frame[column].astype("Int64")
    return frame


def flag_table(frame: pd.DataFrame) -> pd.DataFrame:
    """An :func:`audit` frame's flags as booleans: a count above 0, a name, or true marks a log."""
    return pd.DataFrame(
        {
            flag: (frame[flag].fillna("").astype(str) != "")
            if frame[flag].dtype == object
            else frame[flag].fillna(0).astype(bool)
            for flag in FLAGS
        },
        index=frame.index,
    )


def flag_counts(frame: pd.DataFrame) -> pd.Series:
    """How many logs of an :func:`audit` frame each flag marks."""
    return flag_table(frame).sum().astype(int).rename("logs")


@dataclass
class _Audit:
    """One log under audit: what was read, and what was found."""

    log: object
    name: str
    dataset: str
    frame: pd.DataFrame | None = None
    digest: str = ""
    details: dict = field(default_factory=dict)
    flags: dict = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)


def _audit_one(log, path) -> _Audit:
    dataset = str(log_field(log, "dataset"))
    entry = _Audit(log=log, name=log_name(log), dataset=dataset)
    entry.details = dict.fromkeys(DETAILS)
    entry.details.update(
        repository=log_field(log, "repository"),
        path=log_field(log, "path"),
        dataset=dataset,
        sigma=_number(log_field(log, "sigma")),
    )
    entry.flags = {flag: _CLEAR.get(flag, 0) for flag in FLAGS}
    raw = _read_raw(entry, path)
    if raw is None:
        return entry
    frame = entry.frame
    entry.details["rows"] = len(frame)
    if frame.empty:
        entry.flags["header_only"] = True
        entry.findings.append("Has a header and no rows: no input was certified.")
        return entry
    _check_coverage(entry)
    if "time" in raw:  # optional: it states no result
        _check_time(entry, raw["time"])
    _check_rows(entry)
    _check_radius_bound(entry, raw["radius"])
    return entry


def _read_raw(entry: _Audit, path) -> pd.DataFrame | None:
    """Parse the log (into ``entry.frame``) and return its columns as printed; None, with a finding, if it cannot."""
    if path is None or not Path(path).is_file():
        entry.flags["unreadable"] = True
        entry.findings.append(f"Not in the cache ({path}): fetch it first (ddrs logs fetch).")
        return None
    data = Path(path).read_bytes()
    entry.digest = hashlib.sha256(data).hexdigest()
    expected = str(log_field(entry.log, "sha256") or "").lower()
    if expected and entry.digest != expected:
        entry.flags["unreadable"] = True
        entry.findings.append(
            f"Its content at {path} (sha256 {entry.digest[:12]}…) is not the registered one ({expected[:12]}…): "
            "refused, not audited; fetch it again."
        )
        return None
    try:
        entry.frame = read_log(path, require_time=False)
        raw = pd.read_csv(io.BytesIO(data), sep="\t", dtype=str, keep_default_na=False)
    except LogFormatError as error:
        entry.flags["unreadable"] = True
        entry.findings.append(f"Not a readable certification log: {error}.")
        return None
    raw.columns = [column.strip() for column in raw.columns]
    return raw


def _check_coverage(entry: _Audit) -> None:
    """Rows present against those the stride implies over the test set; where the missing ones are."""
    idx = entry.frame["idx"].to_numpy()
    entry.details.update(first_idx=int(idx[0]), last_idx=int(idx[-1]))
    stride, source = _stride(entry, idx)
    entry.details.update(stride=stride, stride_source=source)
    split = str(log_field(entry.log, "split", "") or "test")
    size = SPLIT_SIZES.get((dataset_key(entry.dataset), split))
    if size is None or stride is None:
        reason = f"no size is known for {entry.dataset!r} ({split})" if size is None else "one row gives no stride"
        entry.findings.append(f"Rows not checked against the {split} set: {reason}.")
        return
    where = f"{entry.dataset}'s {size:,} {split} inputs"
    outside = (idx < 0) | (idx >= size)
    if outside.any():
        entry.flags["idx_out_of_range"] = int(outside.sum())
        entry.findings.append(
            f"{_rows(outside.sum())} idx outside {where} (up to {idx.max():,}): a log of another split?"
        )
        return
    _check_stride_grid(entry, idx, (stride, source), size, where)


def _stride(entry: _Audit, idx: np.ndarray) -> tuple[int | None, str | None]:
    """The log's stride over the test set and where it comes from (``registry``: its skip, ``idx``: the
    commonest step of its idx column); flags a decreasing idx and a step that is not the registry's."""
    steps = np.diff(idx)
    if (steps <= 0).any():
        at = int(np.argmax(steps <= 0)) + 1
        entry.flags["non_monotone_idx"] = True
        entry.findings.append(
            f"Its idx column does not increase (row {at + 1}: idx {idx[at]} after {idx[at - 1]}): "
            "the order of the test stream is lost."
        )
    registered = _number(log_field(entry.log, "skip"))
    positive = steps[steps > 0]
    inferred = int(pd.Series(positive).mode().min()) if len(positive) else None
    if inferred is not None and registered is not None and inferred != int(registered):
        entry.flags["stride_mismatch"] = True
        entry.findings.append(
            f"Its idx step is {inferred}, not the registry's skip {int(registered)}: its rows are counted at step "
            f"{inferred}."
        )
    if registered is not None and inferred in (None, int(registered)):
        return int(registered), "registry"
    return inferred, None if inferred is None else "idx"


def _check_stride_grid(entry: _Audit, idx: np.ndarray, stride: tuple[int, str], size: int, where: str) -> None:
    """The rows against the grid of every ``stride``-th input of the ``size`` test inputs (``where``)
    from the first idx's offset: missing at the end, at the start, inside, and off the grid."""
    stride, source = stride
    offset = int(idx[0]) % stride
    grid = np.arange(offset, size, stride)
    expected = len(grid)
    entry.details["expected_rows"] = expected
    present = np.isin(grid, idx)
    if present.all() and len(idx) == expected:
        return
    entry.findings.append(
        f"Has {len(idx):,} rows where its stride {stride} ({'registry skip' if source == 'registry' else 'from idx'}) "
        f"over {where} implies {expected:,}."
    )
    covered = np.flatnonzero(present)
    first, last = (covered[0], covered[-1]) if len(covered) else (expected, -1)
    if last < expected - 1:
        entry.flags["cut_short"] = True
        entry.findings.append(
            f"Cut short: its last idx is {idx[-1]}, where the stride's last input is {grid[-1]} "
            f"({expected - 1 - last:,} inputs missing at the end)."
        )
    if first > 0:
        entry.flags["starts_late"] = True
        entry.findings.append(
            f"Starts late: its first idx is {idx[0]}, not {grid[0]} ({first:,} inputs missing at the start; "
            "a run split in parts with one part published?)."
        )
    inside = int((~present[first : last + 1]).sum()) if len(covered) else 0
    if inside:
        entry.flags["missing_inside"] = inside
        entry.findings.append(f"{inside:,} inputs of its stride are missing between its first and last idx.")
    off_grid = int((~np.isin(idx, grid)).sum())
    if off_grid:
        entry.findings.append(f"{_rows(off_grid)} idx off its stride's grid ({offset} + k·{stride}).")


def _check_time(entry: _Audit, times: pd.Series) -> None:
    """Cohen's ``H:MM:SS.ffffff`` and plain seconds in one column: two writers were mixed into one log."""
    clock = times.str.contains(":", regex=False)
    if clock.any() and not clock.all():
        entry.flags["mixed_time"] = True
        entry.findings.append(
            f"Its time column mixes H:MM:SS.ffffff ({int(clock.sum()):,} rows, first idx "
            f"{entry.frame['idx'][clock.to_numpy()].iloc[0]}) with seconds ({int((~clock).sum()):,} rows, first idx "
            f"{entry.frame['idx'][~clock.to_numpy()].iloc[0]}): rows written by two programs."
        )


def _check_rows(entry: _Audit) -> None:
    """Rows that contradict themselves: ``correct`` (against predict and label, or not 0/1), abstentions
    with a radius, negative radii."""
    frame = entry.frame
    checks = (
        (
            "correct_mismatch",
            frame["correct"] != (frame["predict"] == frame["label"]).astype(int),
            "correct ≠ (predict = label)",
        ),
        ("correct_not_binary", ~frame["correct"].isin([0, 1]), "a correct value other than 0 or 1"),
        (
            "abstain_with_radius",
            (frame["predict"] == ABSTAIN) & (frame["radius"] != 0),
            "an abstention (predict −1) with a nonzero radius",
        ),
        ("negative_radius", frame["radius"] < 0, "a negative radius"),
    )
    for flag, mask, what in checks:
        if mask.any():
            entry.flags[flag] = int(mask.sum())
            entry.findings.append(f"{_rows(mask.sum())} {what} (first idx {frame['idx'][mask].iloc[0]}).")


def _check_radius_bound(entry: _Audit, printed: pd.Series) -> None:
    """Radii no CERTIFY run with the registry's n and α can give at its σ."""
    radius = entry.frame["radius"].to_numpy()
    entry.details["max_radius"] = float(np.nanmax(radius))
    sigma, n, alpha = (_number(log_field(entry.log, key)) for key in ("sigma", "n", "alpha"))
    unknown = [name for name, value in (("sigma", sigma), ("n", n), ("alpha", alpha)) if value is None]
    if unknown:
        entry.findings.append(
            f"Radii not checked against the sampling bound: the registry gives no {', '.join(unknown)}."
        )
        return
    n = int(n)
    bound = radius_bound(sigma, n, alpha)
    entry.details["radius_bound"] = bound
    lowest = radius.copy()  # the smallest value that prints as the logged one (only a radius above the bound can)
    above = radius > bound
    lowest[above] -= printed[above].map(_half_unit).to_numpy(dtype=float)
    impossible = lowest > bound * (1 + 1e-12)
    if not impossible.any():
        return
    worst = int(np.argmax(np.where(impossible, radius, -np.inf)))
    z = lowest[worst] / sigma
    log_miss = _log_minus_log_phi(z)  # ln(−ln Φ(z)): far above the bound Φ(z) is 1 in floating point
    alpha_needed = math.exp(-n * math.exp(log_miss))
    log10_n = (math.log(-math.log(alpha)) - log_miss) / math.log(10)
    n_text = f"{math.ceil(10**log10_n):,}" if log10_n < 15 else f"10^{log10_n:.0f}"
    entry.flags["impossible_radius"] = int(impossible.sum())
    entry.findings.append(
        f"{_rows(impossible.sum())} a radius above σ·Φ⁻¹(α^(1/n)) = {bound:.4f}, the largest CERTIFY gives at "
        f"σ = {sigma:g} with n = {n:,} and α = {alpha:g} (Cohen et al. 2019, §3.2.2); its largest, "
        f"{printed.iloc[worst]} at idx {entry.frame['idx'].iloc[worst]}, needs α ≥ {alpha_needed:.3g} at "
        f"n = {n:,}, or n ≥ {n_text} at α = {alpha:g}."
    )


def _log_minus_log_phi(z: float) -> float:
    """ln(−ln Φ(z)) for z > 0, exact where Φ(z) rounds to 1: −ln Φ(z) = −log1p(−Φ(−z)) ≈ Φ(−z)."""
    log_tail = float(log_ndtr(-z))
    minus_log_phi = -math.log1p(-math.exp(log_tail))
    return math.log(minus_log_phi) if minus_log_phi > 1e-300 else log_tail


def _half_unit(text: str) -> float:
    """Half a unit in the last printed digit of ``text`` (``0.978`` → 0.0005): how far it may have been rounded."""
    try:
        exponent = Decimal(text.strip()).as_tuple().exponent
    except InvalidOperation:
        return 0.0
    return 0.5 * 10.0**exponent if isinstance(exponent, int) else 0.0


def _mark_duplicates(audits: list[_Audit]) -> None:
    """Logs with identical bytes (header-only logs aside: they hold no result) name each other."""
    groups: dict[str, list[_Audit]] = {}
    for entry in audits:
        if entry.frame is not None and not entry.frame.empty:
            groups.setdefault(entry.digest, []).append(entry)
    for group in groups.values():
        names = sorted({entry.name for entry in group})
        if len(names) < 2:
            continue
        for entry in group:
            others = [name for name in names if name != entry.name]
            entry.flags["duplicate_of"] = "; ".join(others)
            entry.findings.append(
                f"Byte-identical to {len(others)} other log(s) ({', '.join(others)}): one set of results under "
                "several names; count it once."
            )


def _mark_label_conflicts(audits: list[_Audit]) -> None:
    """Per dataset, split and idx, the label most logs give; a row giving another one (or a tie) conflicts."""
    voting = [
        entry
        for entry in audits
        if entry.frame is not None and not entry.frame.empty and not entry.flags["idx_out_of_range"]
    ]
    if not voting:
        return
    table = pd.concat(
        [
            pd.DataFrame(
                {
                    "log": number,
                    "dataset": dataset_key(entry.dataset) + "/" + str(log_field(entry.log, "split", "") or "test"),
                    "idx": entry.frame["idx"],
                    "label": entry.frame["label"],
                }
            )
            for number, entry in enumerate(voting)
        ],
        ignore_index=True,
    )
    votes = table.groupby(["dataset", "idx", "label"]).size().rename("votes").reset_index()
    top = votes.groupby(["dataset", "idx"])["votes"].transform("max")
    winners = votes[votes["votes"] == top]
    unique = winners.groupby(["dataset", "idx"])["label"].agg(["first", "size"])
    majority = unique["first"].where(unique["size"] == 1).rename("majority")
    table = table.join(majority, on=["dataset", "idx"])
    table["conflict"] = table["majority"].isna() | (table["label"] != table["majority"])
    logs_per_dataset = table.groupby("dataset")["log"].nunique()
    for number, rows in table[table["conflict"]].groupby("log"):
        entry = voting[number]
        first = rows.iloc[0]
        majority_text = "no majority (a tie)" if pd.isna(first["majority"]) else f"{int(first['majority'])} in most"
        entry.flags["label_conflicts"] = len(rows)
        voters = f"{logs_per_dataset[first['dataset']]:,} {entry.dataset} {first['dataset'].split('/')[-1]} logs"
        entry.findings.append(
            f"{len(rows):,} of its {len(entry.frame):,} rows have a label other than the majority of the {voters} "
            f"at the same idx (e.g. idx {first['idx']}: {first['label']} here, {majority_text}): another order or set "
            "of test inputs, so its inputs cannot be paired with theirs."
        )


def _rows(count) -> str:
    """``1 row has`` / ``3 rows have``: the subject of a finding about rows."""
    count = int(count)
    return "1 row has" if count == 1 else f"{count:,} rows have"


def _number(value) -> float | None:
    """A registry cell as a number; None when empty or not a number."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
