"""The σ log's file format: its columns and its readers, without torch (``ddrs table`` reads it).

One TSV row per test input in ``idx`` order (docs/architecture.md): ``idx c_a``, the scales, then
``time``. Algorithm 1 writes one column per snapshot K (:func:`sigma_column`: ``sigma_K0
sigma_K100 …``), the Appendix-B grid search one column :func:`grid_column` (``sigma_grid_n{n}``).
``c_a`` is the σ₀-smoothed prediction (DDRS Eq. 2), recorded whichever objective chose the scales;
``time`` is the seconds spent on the input (c_A and the solve, amortised over its batch, as the
certification log's ``time``): Appendix F's cost of choosing σ. :mod:`ddrs.jobs.sigma_search` writes it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.errors import LogFormatError

#: The columns every σ log starts with; the scale columns follow.
KEY_COLUMNS = ("idx", "c_a")
#: The last column of every σ log: seconds spent choosing the input's scales.
TIME_COLUMN = "time"


def sigma_column(k: int) -> str:
    """Name of the σ-log column holding the scale after K = ``k`` steps of Algorithm 1."""
    return f"sigma_K{k}"


def grid_column(n: int) -> str:
    """Name of the σ-log column holding the grid-search scale chosen with ``n`` samples per point."""
    return f"sigma_grid_n{n}"


def read_sigma_log(path: str | os.PathLike, k: int | None = None, *, column: str | None = None) -> dict[int, float]:
    """Per-input scales from a σ log: idx → scale.

    Give the Algorithm-1 step ``k`` (column :func:`sigma_column`) or any other ``column`` (e.g.
    the grid baseline's :func:`grid_column`). Raises :class:`LogFormatError` naming the file when
    the column is absent or a value is not a positive number.
    """
    if (k is None) == (column is None):
        raise ValueError("read_sigma_log needs exactly one of k and column")
    path = Path(path)
    column = sigma_column(k) if column is None else column
    frame = _read(path)
    if "idx" not in frame.columns or column not in frame.columns:
        available = sorted(str(c) for c in frame.columns if c not in (*KEY_COLUMNS, TIME_COLUMN))
        raise LogFormatError(f"{path}: no column {'idx' if 'idx' not in frame.columns else column}; has {available}")
    idx = pd.to_numeric(frame["idx"], errors="coerce")
    scale = pd.to_numeric(frame[column], errors="coerce")
    bad = idx.isna() | (idx != idx.round()) | ~(scale > 0) | ~np.isfinite(scale)
    if bad.any():
        row = bad.idxmax()
        raise LogFormatError(
            f"{path}: row {row + 1} has idx {frame['idx'][row]!r}, {column} {frame[column][row]!r}; "
            "expected an integer idx and a positive scale"
        )
    if idx.duplicated().any():
        raise LogFormatError(f"{path}: duplicate idx {int(idx[idx.duplicated()].iloc[0])}")
    return dict(zip(idx.astype(int).tolist(), scale.astype(float).tolist(), strict=True))


def read_sigma_seconds(path: str | os.PathLike, inputs: pd.Series) -> float:
    """Mean seconds a σ log spent per input (its ``time`` column) over the ``idx`` values ``inputs``
    (the inputs a certification log certified): Appendix F's cost of choosing σ."""
    frame = _read(Path(path))
    if not {"idx", TIME_COLUMN} <= set(frame.columns):
        raise LogFormatError(
            f"{path}: no idx and {TIME_COLUMN} columns (a σ log written before ddrs recorded its time?); "
            "delete it and rerun the job that writes it"
        )
    seconds = frame.set_index("idx")[TIME_COLUMN].reindex(inputs)
    if seconds.isna().any():
        missing = inputs[seconds.isna().to_numpy()].iloc[0]
        raise LogFormatError(f"{path}: no time for input idx {missing}, which the certification log certifies")
    return float(seconds.mean())


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, sep="\t")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise LogFormatError(f"{path}: not a tab-separated σ log ({error})") from None
