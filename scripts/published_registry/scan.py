"""Find the certification logs in a repository's git directory and describe each as a registry row.

A file is a log when its first line is Cohen et al.'s header (``idx label predict radius correct
time``, tab-separated; a trailing CR is allowed): the header decides, not the name, so a log that
holds only its header is listed too (the audit flags it). Everything is read at the repository's
``HEAD`` commit, whose hash each row pins. The parse rules are :mod:`published_registry.rules`.
"""

from __future__ import annotations

import csv
import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from ddrs.errors import DDRSError
from ddrs.io import atomic_path
from ddrs.logs.certification_log import COHEN_COLUMNS
from ddrs.published.log_registry import COLUMNS

from .rules import REPOSITORIES, Repository, our_method, parse_path, settings_for, tables_for

HEADER = "\t".join(COHEN_COLUMNS).encode()
#: the licence of a repository without a LICENSE file
NO_LICENCE = "none stated"


class MirrorError(DDRSError):
    """A mirror is not a readable git directory, or is of a repository without parse rules."""


def _git(git_dir: Path, *args: str) -> bytes:
    try:
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True).stdout
    except subprocess.CalledProcessError as error:
        raise MirrorError(
            f"{git_dir}: git {' '.join(args)} failed ({error.stderr.decode(errors='replace').strip()}); "
            "point --mirror at the repository's git directory (the .git folder, or a bare clone)"
        ) from error


def head_commit(git_dir: Path) -> str:
    """The hash of ``HEAD`` in ``git_dir``."""
    return _git(git_dir, "rev-parse", "--verify", "--end-of-options", "HEAD^{commit}").decode().strip()


def blobs(git_dir: Path, commit: str) -> Iterator[tuple[str, bytes]]:
    """Every file of ``commit`` as (path, bytes), in git's path order."""
    listing = _git(git_dir, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit).split(b"\0")
    entries = []
    for entry in filter(None, listing):
        meta, path = entry.split(b"\t", 1)
        _mode, kind, sha = meta.split()
        if kind == b"blob":
            entries.append((path.decode("utf-8", errors="surrogateescape"), sha))
    with subprocess.Popen(
        ["git", "--git-dir", str(git_dir), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as process:
        for path, sha in entries:
            process.stdin.write(sha + b"\n")
            process.stdin.flush()
            size = int(process.stdout.readline().split()[2])
            data = process.stdout.read(size)
            process.stdout.read(1)  # the newline after each object
            yield path, data
        process.stdin.close()


def is_cohen_log(data: bytes) -> bool:
    """Whether ``data`` starts with Cohen et al.'s header line."""
    return data.split(b"\n", 1)[0].rstrip(b"\r") == HEADER


def data_rows(data: bytes) -> int:
    """The lines after the header that hold anything (a last line without a newline counts)."""
    return sum(1 for line in data.split(b"\n")[1:] if line.strip())


def licence(files: Mapping[str, bytes]) -> str:
    """``MIT`` for an MIT LICENSE file at the top of the repository, its first line for another, else "none stated"."""
    for name in sorted(files):
        if "/" not in name and name.upper().startswith(("LICENSE", "LICENCE", "COPYING")):
            first = next(
                (line.strip() for line in files[name].decode(errors="replace").splitlines() if line.strip()), ""
            )
            return "MIT" if first.upper() == "MIT LICENSE" else first or name
    return NO_LICENCE


def scan_repository(name: str, git_dir: str | os.PathLike) -> tuple[list[dict[str, str]], list[str]]:
    """The registry rows of the logs in ``git_dir`` at HEAD, and the log paths no path rule parses."""
    try:
        repository: Repository = REPOSITORIES[name]
    except KeyError:
        raise MirrorError(
            f"no parse rules for {name!r}; known repositories: {', '.join(sorted(REPOSITORIES))}"
        ) from None
    git_dir = Path(git_dir)
    commit = head_commit(git_dir)
    logs, top_level = {}, {}
    for path, data in blobs(git_dir, commit):
        if is_cohen_log(data):
            logs[path] = data
        elif "/" not in path:
            top_level[path] = data
    licence_name = licence(top_level)
    rows, unparsed = [], []
    for path, data in logs.items():
        parsed = parse_path(repository, path)
        if parsed is None:
            unparsed.append(path)
            parsed = {}
        row = {column: "" for column in COLUMNS}
        row.update(parsed)
        row.update(
            repository=name,
            commit=commit,
            path=path,
            sha256=hashlib.sha256(data).hexdigest(),
            size=str(len(data)),
            rows=str(data_rows(data)),
            method=our_method(repository, parsed.get("method_authors", "")),
            paper=repository.paper,
            table=tables_for(repository, path),
            licence=licence_name,
            **settings_for(repository, path),
        )
        rows.append(row)
    return rows, sorted(unparsed)


def write_registry(rows: list[dict[str, str]], path: str | os.PathLike) -> None:
    """Write ``rows`` sorted by (repository, path), atomically: the same rows give the same bytes."""
    ordered = sorted(rows, key=lambda row: (row["repository"], row["path"]))
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([row[column] for column in COLUMNS] for row in ordered)


def build_registry(mirrors: Mapping[str, str | os.PathLike], out: str | os.PathLike) -> list[dict[str, str]]:
    """Scan every ``owner/name → git directory`` of ``mirrors`` and write the registry to ``out``."""
    rows = []
    for name in sorted(mirrors):
        found, unparsed = scan_repository(name, mirrors[name])
        for path in unparsed:
            print(f"warning: {name}:{path}: a log no path rule parses (its fields stay empty)", file=sys.stderr)
        rows += found
    write_registry(rows, out)
    return rows
