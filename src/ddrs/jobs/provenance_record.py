"""What made an output: the record a job writes beside each one, ``<output>.provenance.json``
(docs/architecture.md, "File contracts"), light enough for every job to import; the check of a
results tree against a config is :mod:`ddrs.pipeline.provenance`.

A record names its output by content as well as by settings: the SHA-256, size and modification
time of the output as written, and the SHA-256 of every file its job read (the data split, the
model, the model it fine-tunes, the σ log, the logs and files a table reads), so a results tree can
be walked as a chain of digests (DESIGN.md, "Provenance").
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from ddrs.io import file_digest, write_text_atomic

#: the suffix of an output's provenance record
SUFFIX = ".provenance.json"


def identity_digest(identity: Any) -> str:
    """SHA-256 of an identity: its canonical JSON (sorted keys; an object that JSON cannot spell
    by its ``repr``, as Snakemake records params)."""
    text = json.dumps(identity, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


#: the package files whose bytes decide what a job computes: its code and the tables it ships
SOURCE_SUFFIXES = (".py", ".csv")


def source_digest(package: Path) -> str:
    """SHA-256 of the package's source (:data:`SOURCE_SUFFIXES`: each file's relative path and
    bytes, in path order): the same for the same code however it was installed or committed."""
    digest = hashlib.sha256()
    files = (path for path in package.rglob("*") if path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts)
    for path in sorted(files):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def code_version() -> dict[str, str | None]:
    """The ``ddrs`` version running, the digest of its source (:func:`source_digest`), and its git
    commit where the package sits in a checkout (else None; for people: a dirty tree has the commit
    of its base, and a commit that changes no source changes nothing a job computes)."""
    package = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "-C", str(package), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"ddrs": metadata.version("ddrs"), "source": source_digest(package), "commit": commit or None}


class Digests:
    """SHA-256 of files, each hashed once while its size and modification time stay the same (a
    cache keyed by path, size and ``mtime_ns``): one walk of a tree hashes each file at most once,
    and a digest a record holds for a file's current size and time is taken as it is."""

    def __init__(self) -> None:
        self._known: dict[tuple[str, int, int], str] = {}

    @staticmethod
    def state(path: str | Path) -> tuple[str, int, int] | None:
        """``(path, size, mtime_ns)`` of the file at ``path``, or None when there is no file."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        return (os.path.abspath(path), stat.st_size, stat.st_mtime_ns)

    def remember(self, path: str | Path, size: int, mtime_ns: int, sha256: str) -> None:
        """Take ``sha256`` as the digest of ``path`` while it has this size and time."""
        self._known[(os.path.abspath(path), size, mtime_ns)] = sha256

    def __call__(self, path: str | Path) -> str | None:
        """The SHA-256 of the file at ``path`` now, or None when it is not a file."""
        state = self.state(path)
        if state is None or not os.path.isfile(path):
            return None
        if state not in self._known:
            self._known[state] = file_digest(path)
        return self._known[state]


def record(outputs: Iterable[str | Path], kind: str, identity: Any, inputs: Iterable[str | Path | None] = ()) -> None:
    """Write the provenance record of every one of a job's ``outputs``: its ``kind``, the digest of
    its ``identity``, the code that made it, the SHA-256 of every file of ``inputs`` the job read
    (by path as the job was given it; a None or a folder is left out), and the output's own SHA-256,
    size and modification time."""
    digests = Digests()
    read = {str(path): digests(path) for path in inputs if path is not None and os.path.isfile(path)}
    made = {"kind": kind, "identity": identity_digest(identity), **code_version()}
    for output in outputs:
        _, size, mtime_ns = Digests.state(output) or (None, None, None)
        own = {"sha256": digests(output), "size": size, "mtime_ns": mtime_ns}
        others = {path: digest for path, digest in read.items() if path != str(output)}
        write_text_atomic(f"{output}{SUFFIX}", json.dumps({**made, "inputs": others, "output": own}, indent=1) + "\n")


def read_record(output: str | Path) -> dict[str, Any] | None:
    """The provenance record of ``output``, or None when it has none."""
    path = Path(f"{output}{SUFFIX}")
    return json.loads(path.read_text()) if path.is_file() else None
