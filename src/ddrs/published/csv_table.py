"""The package's shipped CSV tables (families, input orders, origins), read as strings and checked
for their columns before any row is used."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def read_checked_csv(path: str, columns: Sequence[str], what: str, error: type[Exception]) -> pd.DataFrame:
    """``path`` as a frame of strings (empty cells ``""``), or ``error`` naming the file: unreadable, or
    its columns not exactly ``columns``. ``what`` names the table in the message ("families CSV")."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as problem:
        raise error(f"{path}: not a readable {what} ({problem})") from problem
    if tuple(frame.columns) != tuple(columns):
        raise error(f"{path}: columns {list(frame.columns)}, expected {list(columns)}")
    return frame
