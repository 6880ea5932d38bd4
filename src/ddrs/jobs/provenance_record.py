"""What made an output: the record a job writes beside each one, ``<output>.provenance.json``
(docs/architecture.md, "File contracts"), light enough for every job to import; the check of a
results tree against a config is :mod:`ddrs.pipeline.provenance`.

A record names its output by content as well as by settings: its path, the SHA-256 and size of
the output as written, and the SHA-256 of every file its job read (the data split, the
model, the model it fine-tunes, the σ log, the logs and files a table reads), so a results tree can
be walked as a chain of digests (DESIGN.md, "Provenance").
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from ddrs.errors import DDRSError
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
    """SHA-256 of files, each hashed at most once per walk of a tree: a cache keyed by the file's path,
    inode, size and times, so a file replaced or edited during the walk is hashed again. No digest is
    ever taken from a record: every file a check judges is hashed (DESIGN.md, "Provenance")."""

    def __init__(self) -> None:
        self._known: dict[tuple, str] = {}

    def __call__(self, path: str | Path) -> str | None:
        """The SHA-256 of the regular file at ``path`` now, or None when there is none there."""
        try:
            found = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        key = (os.path.abspath(path), found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)
        if key not in self._known:
            self._known[key] = file_digest(path)
        return self._known[key]


def record(outputs: Iterable[str | Path], kind: str, identity: Any, inputs: Iterable[str | Path | None] = ()) -> None:
    """Write the provenance record of every one of a job's ``outputs``: its ``kind``, the digest of
    its ``identity``, the code that made it, the SHA-256 of every file of ``inputs`` the job read
    (by path as the job was given it; a None or a folder is left out), the output's own path (as the
    job was given it, so an output moved or swapped with its record is known) and its SHA-256 and size."""
    digests = Digests()
    read = {str(path): digests(path) for path in inputs if path is not None and os.path.isfile(path)}
    made = {"kind": kind, "identity": identity_digest(identity), **code_version()}
    for output in outputs:
        own = {"sha256": digests(output), "size": os.stat(output).st_size}
        others = {path: digest for path, digest in read.items() if path != str(output)}
        document = {**made, "path": str(output), "inputs": others, "output": own}
        write_text_atomic(f"{output}{SUFFIX}", json.dumps(document, indent=1) + "\n")


class NotARecord(DDRSError):
    """A ``<output>.provenance.json`` that is not a record :func:`record` writes (torn, edited, or another file)."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"{path}: not a provenance record: {problem}")
        self.path, self.problem = path, problem


#: a record's fields and the types each must have (JSON's: ``str``, ``dict``; ``None`` where it may be null)
RECORD_FIELDS = {
    "kind": (str,),
    "identity": (str,),
    "ddrs": (str, type(None)),
    "source": (str,),
    "inputs": (dict,),
    "output": (dict,),
}


def read_record(output: str | Path) -> dict[str, Any] | None:
    """The provenance record of ``output``, or None when it has none; :class:`NotARecord` naming the
    record's file and what is wrong where it is not JSON, not an object, or a field is missing or of
    another type."""
    path = Path(f"{output}{SUFFIX}")
    if not path.is_file():
        return None
    try:
        found = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise NotARecord(path, str(error)) from None
    if not isinstance(found, dict):
        raise NotARecord(path, f"a JSON {type(found).__name__}, not an object")
    for field, kinds in RECORD_FIELDS.items():
        if not isinstance(found.get(field, ...), kinds):
            what = "no" if field not in found else f"a {type(found[field]).__name__} as its"
            raise NotARecord(path, f"{what} {field!r}")
    if not all(isinstance(key, str) and isinstance(value, str) for key, value in found["inputs"].items()):
        raise NotARecord(path, "its 'inputs' are not file → SHA-256")
    return found
