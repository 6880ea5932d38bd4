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


def read_log(path: str | os.PathLike, *, require_time: bool = True) -> pd.DataFrame:
    """Read a certification log (ours or a published Cohen-format one), validated.

    Raises :class:`LogFormatError` naming the file when a column is missing, a value is bad or a
    row is incomplete (see :func:`_check_rows`). A log still being written is ``<path>.partial``,
    whose torn last line only :class:`LogWriter` reads past. With ``require_time=False`` (a user's own
    log, whose ``time`` column is optional) a log without ``time`` is read with ``time`` NaN.
    """
    path = Path(path)
    if path.is_dir():
        raise LogFormatError(f"{path} is a directory, not a certification log; name the log files in it")
    try:
        text = path.read_text(encoding="utf-8")
        frame = pd.read_csv(io.StringIO(text), sep="\t", dtype={"time": str}, float_precision="round_trip")
    except FileNotFoundError:
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise LogFormatError(f"{path}: not a tab-separated certification log ({error})") from None
    required = COHEN_COLUMNS if require_time else tuple(c for c in COHEN_COLUMNS if c != "time")
    missing = [column for column in required if column not in frame.columns]
    if missing:
        raise LogFormatError(f"{path}: missing column(s) {', '.join(missing)}")
    if "time" not in frame.columns:
        frame["time"] = float("nan")
    _check_rows(path, text)
    try:
        for column in ("idx", "label", "predict", "correct"):
            frame[column] = _integers(path, frame[column], column)
        frame["radius"] = pd.to_numeric(frame["radius"], errors="raise").astype(float)
        frame["time"] = frame["time"].map(_seconds)
    except (ValueError, TypeError) as error:
        raise LogFormatError(f"{path}: bad value ({error})") from None
    if frame["idx"].duplicated().any():
        raise LogFormatError(f"{path}: duplicate idx {frame['idx'][frame['idx'].duplicated()].iloc[0]}")
    return frame


def _integers(path: Path, values: pd.Series, column: str) -> pd.Series:
    """``values`` as integers, refused naming the first data row whose value is not a whole number as
    written (20.7 is not truncated to 20)."""
    numbers = pd.to_numeric(values, errors="raise")
    whole = np.isfinite(numbers) & (numbers == np.round(numbers))
    if not whole.all():
        row = int(np.argmax(~whole.to_numpy()))
        raise LogFormatError(f"{path}: data row {row + 1}: {column} {values.iloc[row]} is not an integer")
    return numbers.astype(int)


def _check_rows(path: Path, text: str) -> None:
    """Refuse a row of log ``path`` (its ``text``) cut short: fewer fields than the header, an empty
    Cohen column, or no newline at its end.

    Every writer ends each row with a newline (as :meth:`LogWriter._recover` relies on); columns
    after Cohen's may be empty, as a constant ``extra_columns`` value of None writes them.
    """
    lines = text.split("\n")
    header = lines[0].rstrip("\r").split("\t")
    required = [position for position, column in enumerate(header) if column in COHEN_COLUMNS]
    for number, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line:
            continue  # a blank line, or the end of the file after its last newline
        fields = line.split("\t")
        if len(fields) < len(header):
            problem = f"has {len(fields)} of the header's {len(header)} fields"
        elif empty := [header[position] for position in required if not fields[position].strip()]:
            problem = f"has no value for {', '.join(empty)}"
        elif number == len(lines):
            problem = (
                "does not end with a newline (a complete log ends every row with one: add it if this row is whole)"
            )
        else:
            continue
        raise LogFormatError(
            f"{path}: line {number} {problem}: an incomplete log (cut mid-row?); "
            "rerun the job that wrote it, or delete it"
        )


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
