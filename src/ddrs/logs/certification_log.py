"""The certification-log contract: one TSV row per test input, in test-stream (``idx``) order.

Cohen et al.'s columns come first, so published logs (locuslab/smoothing, SmoothAdv, MACER) and
ours are interchangeable; extra columns follow. A log being written lives at ``<path>.partial``
and is renamed to ``<path>`` when complete; a rerun resumes from the rows already there. The same
resumable writer serves the σ logs of Algorithm 1 (``idx c_a sigma_K…``).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from ddrs.errors import LogFormatError
from ddrs.io import atomic_path, partial_path

#: Cohen et al.'s columns, in their order.
COHEN_COLUMNS = ("idx", "label", "predict", "radius", "correct", "time")


#: the logs finished inside :func:`kept_partials`, whose partials wait for its end (None: outside one)
_kept: list[Path] | None = None


@contextmanager
def kept_partials() -> Iterator[None]:
    """A job that writes several logs: each log finished inside keeps its ``<path>.partial``.

    Snakemake deletes every output of a job that failed or was killed before it reruns the job;
    a kept partial lets the rerun publish a finished log again from its rows instead of
    recomputing it. When the outermost block ends without an error, the kept partials (and their
    settings) are removed. A block inside another (a command run by ``ddrs batch``) leaves them to
    the outer one, so one failing command keeps the logs of the commands before it.
    """
    global _kept
    if _kept is not None:
        yield
        return
    _kept = []
    try:
        yield
        for path in _kept:
            discard_partial(path)
    finally:
        _kept = None


def _seconds(value) -> float:
    """Cohen's logs write ``time`` as ``H:MM:SS.ffffff``; ours write seconds."""
    if isinstance(value, str) and ":" in value:
        hours, minutes, seconds = value.split(":")
        return int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    return float(value)


#: what a path that is not a regular file is, by :mod:`stat`'s test
_NOT_FILES = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _regular_file(path: Path) -> None:
    """Refuse anything at ``path`` but a regular file (a symlink to one is one), without opening it: a
    FIFO would block its reader, a device would be read forever."""
    mode = path.stat().st_mode
    if stat.S_ISREG(mode):
        return
    what = next((what for test, what in _NOT_FILES if test(mode)), "not a regular file")
    if stat.S_ISDIR(mode):
        raise LogFormatError(f"{path} is a directory, not a certification log; name the log files in it")
    raise LogFormatError(f"{path} is {what}, not a certification log: a log is a regular file; copy it into one")


def read_log(path: str | os.PathLike, *, require_time: bool = True) -> pd.DataFrame:
    """Read a certification log (ours or a published Cohen-format one), validated.

    Raises :class:`LogFormatError` naming the file, and where it is a row's, its 1-based line, column
    and value: a path that is not a regular file, a column missing or named twice, a comment line, the
    header repeated, a row incomplete (:func:`_check_rows`), a value that is not a number (or not an
    integer within 64 bits, for ``idx``, ``label``, ``predict`` and ``correct``), a duplicate ``idx``.
    A log still being written is ``<path>.partial``, whose torn last line only :class:`LogWriter`
    reads past. With ``require_time=False`` (a user's own log, whose ``time`` column is optional) a
    log without ``time`` is read with ``time`` NaN.
    """
    path = Path(path)
    _regular_file(path)
    try:
        text = path.read_text(encoding="utf-8")
        frame = pd.read_csv(
            io.StringIO(text), sep="\t", dtype={"time": str}, float_precision="round_trip", quoting=csv.QUOTE_NONE
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise LogFormatError(f"{path}: not a tab-separated certification log ({error})") from None
    header = text.split("\n", 1)[0].rstrip("\r").split("\t")
    twice = sorted({column for column in header if header.count(column) > 1})
    if twice:
        raise LogFormatError(f"{path}: line 1: column {', '.join(twice)} is named twice in the header; name each once")
    required = COHEN_COLUMNS if require_time else tuple(c for c in COHEN_COLUMNS if c != "time")
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise LogFormatError(f"{path}: missing column(s) {', '.join(missing)}")
    rows = _Rows(path, header, _check_rows(path, text), text.split("\n"))
    for column in ("idx", "label", "predict", "correct"):
        frame[column] = _integers(frame[column], column, rows)
    frame["radius"] = _numbers(frame["radius"], "radius", rows)
    frame["time"] = _times(frame["time"], rows) if "time" in frame.columns else float("nan")
    if frame["idx"].duplicated().any():
        raise LogFormatError(f"{path}: duplicate idx {frame['idx'][frame['idx'].duplicated()].iloc[0]}")
    return frame


class _Rows:
    """Where a log's rows lie in its file: each data row's 1-based line and its fields as written."""

    def __init__(self, path: Path, header: list[str], lines: list[int], text_lines: list[str]):
        self.path, self.header, self.lines, self.text_lines = path, header, lines, text_lines

    def bad(self, row: int, column: str, what: str) -> LogFormatError:
        """The error of data row ``row``'s value of ``column``: its file, line, column and value as written."""
        line = self.lines[row]
        written = self.text_lines[line - 1].rstrip("\r").split("\t")[self.header.index(column)]
        return LogFormatError(f"{self.path}: line {line}: {column} {written!r} is {what}")


def _numbers(values: pd.Series, column: str, rows: _Rows) -> pd.Series:
    """``values`` of ``column`` as floats. A column pandas read as numbers is kept as read (its exact
    round trip); in one it could not, the first value that is not a number as written (a hexadecimal,
    a digit of another script, an underscore) is refused, naming its line. A word pandas reads as
    missing (``nan``, ``NA``) is NaN, for the caller to judge."""
    if values.dtype.kind in "iuf":
        return values.astype(float)
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() & values.notna()
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise rows.bad(row, column, "not a number")
    return values.map(float).astype(float)


#: how far a float may lie from 0 and still be a 64-bit integer (beyond, it would wrap when stored)
_INT64_LIMIT = 2.0**63


def _integers(values: pd.Series, column: str, rows: _Rows) -> pd.Series:
    """``values`` as integers, refused naming the line of the first whose value is not a whole number
    as written (20.7 is not truncated to 20) or lies beyond a 64-bit integer (1e20 would wrap)."""
    if values.dtype.kind == "i":
        return values.astype(np.int64)
    numbers = _numbers(values, column, rows)
    whole = np.isfinite(numbers) & (numbers == np.round(numbers))
    inside = (numbers >= -_INT64_LIMIT) & (numbers < _INT64_LIMIT)
    for good, what in ((whole, "not an integer"), (inside, "beyond a 64-bit integer")):
        if not good.all():
            row = int(np.argmax(~good.to_numpy()))
            raise rows.bad(row, column, what)
    return numbers.astype(np.int64)


def _times(values: pd.Series, rows: _Rows) -> pd.Series:
    """The ``time`` column in seconds (``H:MM:SS.ffffff`` or seconds; missing: NaN), refused at a value
    that is neither."""
    seconds = []
    for row, value in enumerate(values):
        try:
            seconds.append(float("nan") if pd.isna(value) else _seconds(value))
        except ValueError:
            raise rows.bad(row, "time", "neither seconds nor H:MM:SS") from None
    return pd.Series(seconds, index=values.index, dtype=float)


def _check_rows(path: Path, text: str) -> list[int]:
    """Refuse a row of log ``path`` (its ``text``) that is no row: a comment, the header again, or a
    row cut short (fewer fields than the header, an empty Cohen column, or no newline at its end);
    return the 1-based line of each row.

    Every writer ends each row with a newline (as :meth:`LogWriter._recover` relies on); columns
    after Cohen's may be empty, as a constant ``extra_columns`` value of None writes them.
    """
    lines = text.split("\n")
    header = lines[0].rstrip("\r").split("\t")
    required = [position for position, column in enumerate(header) if column in COHEN_COLUMNS]
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line:
            continue  # a blank line, or the end of the file after its last newline
        fields = line.split("\t")
        if line.lstrip().startswith("#"):
            raise LogFormatError(
                f"{path}: line {number} is a comment ({line[:30]!r}): a certification log has none; delete it"
            )
        if fields == header:
            raise LogFormatError(f"{path}: line {number} repeats the header (two logs joined?); keep one log per file")
        if len(fields) < len(header):
            problem = f"has {len(fields)} of the header's {len(header)} fields"
        elif empty := [header[position] for position in required if not fields[position].strip()]:
            problem = f"has no value for {', '.join(empty)}"
        elif number == len(lines):
            problem = (
                "does not end with a newline (a complete log ends every row with one: add it if this row is whole)"
            )
        else:
            rows.append(number)
            continue
        raise LogFormatError(
            f"{path}: line {number} {problem}: an incomplete log (cut mid-row?); "
            "rerun the job that wrote it, or delete it"
        )
    return rows


class LogWriter:
    """Append rows to ``<path>.partial`` one input at a time; :meth:`finish` publishes ``path``.

    ``done`` holds the ``idx`` values already written by an interrupted run, so the caller can
    skip them: a long job resumes instead of starting over. ``settings`` (anything that changes
    the rows: sample sizes, seed, scales, the model's digest) is kept beside the partial log; a
    partial log written under other settings is discarded rather than mixed into this run.
    ``indices``, when given, are the inputs this log is to hold: resumed rows of other inputs (an
    interrupted run with another ``--skip`` / ``--max``) are dropped, and :meth:`finish` refuses
    to publish a log that misses one of them.
    The first column must be ``idx``; floats are written exactly (shortest round-trip repr), so
    no certified radius is ever rounded up.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        columns: Iterable[str],
        settings: Mapping | None = None,
        *,
        indices: Iterable[int] | None = None,
    ):
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.settings_file = self.partial.with_name(self.partial.name + ".json")
        self.columns = tuple(columns)
        if self.columns[:1] != ("idx",):
            raise ValueError(f"the first log column must be idx, got {self.columns}")
        self.indices = None if indices is None else frozenset(int(i) for i in indices)
        self.done: set[int] = set()
        settings_text = json.dumps(dict(settings or {}), sort_keys=True, default=str)
        if self._resumable(settings_text):
            self._recover()
        else:  # the old rows go before the new settings arrive, so a kill in between never pairs them
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.partial.write_text("\t".join(self.columns) + "\n")
            self.settings_file.write_text(settings_text)

    def _resumable(self, settings_text: str) -> bool:
        if not (self.partial.exists() and self.partial.stat().st_size > 0):
            return False
        previous = self.settings_file.read_text() if self.settings_file.exists() else None
        if previous != settings_text:
            warnings.warn(
                f"{self.partial} was written with other settings ({_changes(previous, settings_text)}); starting over",
                stacklevel=3,
            )
            return False
        return True

    def _recover(self) -> None:
        """Keep the complete rows of an interrupted run; drop a half-written last line."""
        lines = self.partial.read_text().split("\n")
        if lines[0].split("\t") != list(self.columns):
            raise LogFormatError(
                f"{self.partial}: header {lines[0]!r} does not match this run's columns; delete it to start over"
            )
        rows = [
            (int(line.split("\t", 1)[0]), line) for line in lines[1:-1] if len(line.split("\t")) == len(self.columns)
        ]
        if self.indices is not None:
            wanted = [(idx, line) for idx, line in rows if idx in self.indices]
            if len(wanted) < len(rows):
                warnings.warn(
                    f"{self.partial}: dropping {len(rows) - len(wanted)} rows of inputs this run does not "
                    "certify (written under another --skip / --max)",
                    stacklevel=3,
                )
            rows = wanted
        self.partial.write_text("\n".join([lines[0], *(line for _, line in rows)]) + "\n")
        self.done = {idx for idx, _ in rows}

    def write(self, row: Mapping[str, object]) -> None:
        """Append one row and flush it to disk, so a killed job loses at most this row."""
        with self.partial.open("a", newline="") as handle:
            csv.writer(handle, delimiter="\t", lineterminator="\n").writerow([row[column] for column in self.columns])
        self.done.add(int(row["idx"]))

    def finish(self) -> Path:
        """Publish the finished log at ``path`` (atomically).

        Inside :func:`kept_partials` the complete ``<path>.partial`` (and its settings) stays until
        the block ends, so a job killed after this log resumes it without recomputing.
        """
        missing = sorted(self.indices - self.done) if self.indices is not None else []
        if missing:
            raise ValueError(f"{self.partial}: no row yet for {len(missing)} of its inputs (first idx {missing[0]})")
        if _kept is not None:
            with atomic_path(self.path) as tmp:
                shutil.copyfile(self.partial, tmp)
            _kept.append(self.path)
            return self.path
        os.replace(self.partial, self.path)
        self.settings_file.unlink(missing_ok=True)
        return self.path


def _changes(previous: str | None, current: str) -> str:
    """The settings that differ between two JSON settings texts, each value shortened for a message."""
    if previous is None:
        return "none recorded"
    try:
        before = json.loads(previous)
    except json.JSONDecodeError:
        return "unreadable record"
    after = json.loads(current)

    def short(value) -> str:
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + "..."

    missing = object()
    changed = sorted(key for key in before.keys() | after.keys() if before.get(key, missing) != after.get(key, missing))
    return ", ".join(f"{key}: {short(before.get(key))} -> {short(after.get(key))}" for key in changed)


def discard_partial(path: str | os.PathLike) -> None:
    """Remove a finished log's kept ``<path>.partial`` and its settings (see :func:`kept_partials`)."""
    partial = partial_path(path)
    partial.unlink(missing_ok=True)
    partial.with_name(partial.name + ".json").unlink(missing_ok=True)
