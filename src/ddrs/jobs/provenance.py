"""What made an output: the record a job writes beside each one, ``<output>.provenance.json``
(docs/architecture.md, "File contracts"), light enough for every job to import; the check of a
results tree against a config is :mod:`ddrs.pipeline.provenance`."""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from ddrs.io import write_text_atomic

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


def record(outputs: Iterable[str | Path], kind: str, identity: Any) -> None:
    """Write the provenance record of every one of a job's ``outputs``: its ``kind``, the digest of
    its ``identity`` and the code that made it."""
    text = json.dumps({"kind": kind, "identity": identity_digest(identity), **code_version()}, indent=1) + "\n"
    for output in outputs:
        write_text_atomic(f"{output}{SUFFIX}", text)


def read_record(output: str | Path) -> dict[str, Any] | None:
    """The provenance record of ``output``, or None when it has none."""
    path = Path(f"{output}{SUFFIX}")
    return json.loads(path.read_text()) if path.is_file() else None
