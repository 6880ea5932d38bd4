"""The shipped registry of published certification logs: ``ddrs/published/logs.csv`` (DESIGN.md, "Published logs").

One row per log in Cohen et al.'s format found in a public repository at a pinned commit: where it
is (repository, commit, path, sha256, size, rows), what it is (dataset, σ, architecture, run, the
method as its authors name it and as :data:`ddrs.methods.METHODS` names it, or :data:`EXTERNAL`, the
training noise and the split), the certification settings the repository states (N, N0, α, skip;
empty where it states none), the paper and tables it backs, and its licence.
``scripts/published_logs_registry.py`` (the maintainers' tool, with its parse rules and scan in
``scripts/published_registry/``) regenerates the file from local mirrors of the repositories.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.errors import DDRSError

#: the registry's columns, in order (fetching and the audit read these names)
COLUMNS = (
    "repository",
    "commit",
    "path",
    "sha256",
    "size",
    "rows",
    "dataset",
    "sigma",
    "arch",
    "run",
    "method_authors",
    "method",
    "noise",
    "n",
    "n0",
    "alpha",
    "skip",
    "paper",
    "table",
    "licence",
    "split",
)
INTEGER_COLUMNS = ("size", "rows")
OPTIONAL_INTEGER_COLUMNS = ("n", "n0", "skip")
OPTIONAL_FLOAT_COLUMNS = ("sigma", "noise", "alpha")
#: the ``method`` of a log whose method :data:`ddrs.methods.METHODS` does not train
EXTERNAL = "external"
#: the file shipped in the package
REGISTRY_PATH = Path(__file__).with_name("logs.csv")
#: where GitHub serves the raw files of a repository at a commit (a log: <base>/<repository>/<commit>/<path>)
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"


class RegistryFormatError(DDRSError):
    """The registry file does not have the columns or values of :data:`COLUMNS`."""


@dataclass(frozen=True)
class PublishedLog:
    """One registry row (:data:`COLUMNS`); a value the repository does not state is "" or None."""

    repository: str
    commit: str
    path: str
    sha256: str
    size: int
    rows: int
    dataset: str
    sigma: float | None
    arch: str
    run: str
    method_authors: str
    method: str
    noise: float | None
    n: int | None
    n0: int | None
    alpha: float | None
    skip: int | None
    paper: str
    table: str
    licence: str
    split: str

    @property
    def url(self) -> str:
        """Where GitHub serves the log at its pinned commit."""
        return f"{DEFAULT_BASE_URL}/{self.repository}/{self.commit}/{self.path}"

    @property
    def tables(self) -> tuple[str, ...]:
        """The paper tables and figures the log backs (``table`` split at ``; ``)."""
        return tuple(self.table.split("; ")) if self.table else ()

    @classmethod
    def from_row(cls, row) -> PublishedLog:
        """A log from a row of :func:`load_registry`'s frame (pandas' missing values become None)."""
        values = {}
        for item in fields(cls):
            value = row[item.name]
            if item.name in OPTIONAL_INTEGER_COLUMNS + OPTIONAL_FLOAT_COLUMNS:
                value = (
                    None if pd.isna(value) else (int(value) if item.name in OPTIONAL_INTEGER_COLUMNS else float(value))
                )
            elif item.name in INTEGER_COLUMNS:
                value = int(value)
            values[item.name] = value
        return cls(**values)


def _bad(path: Path, column: str, problem: str) -> RegistryFormatError:
    return RegistryFormatError(
        f"{path}: column {column!r} {problem}; regenerate it with scripts/published_logs_registry.py"
    )


def _parse(path: Path) -> pd.DataFrame:
    """Read and check ``path``: exactly :data:`COLUMNS`, typed, one row per (repository, path)."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise RegistryFormatError(f"{path}: not a readable registry CSV ({error})") from error
    header = tuple(frame.columns)
    for position, column in enumerate(COLUMNS):
        if position >= len(header) or header[position] != column:
            found = header[position] if position < len(header) else "nothing"
            raise _bad(path, column, f"is missing (found {found!r} at position {position + 1})")
    if len(header) > len(COLUMNS):
        raise _bad(path, header[len(COLUMNS)], "is not a registry column")
    for column in ("repository", "commit", "path", "sha256", "method", "paper", "licence"):
        if (frame[column] == "").any():
            raise _bad(path, column, f"is empty in row {int(np.argmax(frame[column] == '')) + 2}")
    for column, pattern in (("sha256", r"[0-9a-f]{64}"), ("commit", r"[0-9a-f]{40}")):
        wrong = ~frame[column].str.fullmatch(pattern)
        if wrong.any():
            raise _bad(path, column, f"holds {frame[column][wrong].iloc[0]!r}, not {pattern}")
    for column in INTEGER_COLUMNS + OPTIONAL_INTEGER_COLUMNS + OPTIONAL_FLOAT_COLUMNS:
        text = frame[column]
        numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
        wrong = numbers.isna() & ((text != "") | (column in INTEGER_COLUMNS))
        if column in INTEGER_COLUMNS + OPTIONAL_INTEGER_COLUMNS:
            wrong |= numbers.notna() & (numbers != numbers.round())
        if wrong.any():
            raise _bad(path, column, f"holds {text[wrong].iloc[0]!r}, not a number")
        frame[column] = numbers.astype("Int64") if column not in OPTIONAL_FLOAT_COLUMNS else numbers.astype(float)
    duplicated = frame.duplicated(["repository", "path"])
    if duplicated.any():
        row = frame[duplicated].iloc[0]
        raise _bad(path, "path", f"lists {row['repository']}:{row['path']} twice")
    return frame


@functools.lru_cache(maxsize=4)
def _cached(path: str, mtime_ns: int) -> pd.DataFrame:
    return _parse(Path(path))


def load_registry(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """The registry as a frame (a copy: change it freely); ``path`` defaults to the shipped file."""
    path = Path(path) if path is not None else REGISTRY_PATH
    try:
        mtime = path.stat().st_mtime_ns
    except OSError as error:
        raise RegistryFormatError(f"{path}: no registry there ({error.strerror})") from error
    return _cached(str(path), mtime).copy()


def _values(selection) -> list:
    return [selection] if isinstance(selection, str | int | float) else list(selection)


def select(
    registry: pd.DataFrame | None = None,
    *,
    repository: str | Iterable[str] | None = None,
    dataset: str | Iterable[str] | None = None,
    paper: str | Iterable[str] | None = None,
    method: str | Iterable[str] | None = None,
    method_authors: str | Iterable[str] | None = None,
    sigma: float | Iterable[float] | None = None,
    split: str | Iterable[str] | None = None,
    table: str | None = None,
) -> pd.DataFrame:
    """The rows whose fields are among the given values (a single value or several); σ compares to 1e-9.

    ``table`` keeps the logs that back that table or figure (``"Table 2"`` matches ``"Table 1; Table 2"``).
    """
    frame = load_registry() if registry is None else registry
    keep = pd.Series(True, index=frame.index)
    for column, wanted in (
        ("repository", repository),
        ("dataset", dataset),
        ("paper", paper),
        ("method", method),
        ("method_authors", method_authors),
        ("split", split),
    ):
        if wanted is not None:
            keep &= frame[column].isin(_values(wanted))
    if sigma is not None:
        sigmas = frame["sigma"].to_numpy(dtype=float)
        keep &= np.isclose(sigmas[:, None], np.asarray(_values(sigma), dtype=float)[None, :], atol=1e-9, rtol=0).any(1)
    if table is not None:
        keep &= frame["table"].str.contains(rf"(?:^|; ){re.escape(table)}(?:;|$)", regex=True)
    return frame[keep]


def published_logs(registry: pd.DataFrame | None = None, **selection) -> list[PublishedLog]:
    """The logs :func:`select` keeps, as :class:`PublishedLog` rows, in registry order."""
    return [PublishedLog.from_row(row) for _, row in select(registry, **selection).iterrows()]
