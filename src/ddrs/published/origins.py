"""Who produced a log that several repositories ship byte-identically: ``ddrs/published/origins.csv``.

Where the registry lists one content (sha256) under several names, a table crediting it to the first
name in registry order credits whichever repository sorts first: Cohen et al.'s own ImageNet and
CIFAR-10 logs would read as Salman et al.'s, who copied them into ``data_cohen/``. The shipped table
names, per such content, the copy that was committed first (the earliest commit adding it in any
of the repositories, from their git histories): its producer. One row per content with copies::

    sha256, repository, path, commit, committed

``commit`` is the commit that added it there and ``committed`` its date (ISO 8601).
``scripts/published_log_origins.py`` regenerates the table from local mirrors of the repositories.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from ddrs.errors import DDRSError
from ddrs.published.csv_table import read_checked_csv

#: the file shipped in the package
ORIGINS_PATH = Path(__file__).with_name("origins.csv")
#: its columns, in order
COLUMNS = ("sha256", "repository", "path", "commit", "committed")


class OriginsError(DDRSError):
    """An origins table is malformed."""


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime_ns: int) -> dict[str, tuple[str, str]]:
    frame = read_checked_csv(path, COLUMNS, "origins CSV", OriginsError)
    if frame["sha256"].duplicated().any():
        raise OriginsError(f"{path}: sha256 {frame['sha256'][frame['sha256'].duplicated()].iloc[0]} has two origins")
    return {row.sha256: (row.repository, row.path) for row in frame.itertuples(index=False)}


def read_origins(path: str | os.PathLike | None = None) -> dict[str, tuple[str, str]]:
    """sha256 → (repository, path) of the copy that produced it (default: the shipped table)."""
    path = Path(path) if path is not None else ORIGINS_PATH
    return dict(_read(str(path), path.stat().st_mtime_ns if path.exists() else 0))
