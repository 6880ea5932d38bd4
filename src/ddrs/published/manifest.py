"""Fetch one repository's published logs as one pipeline step, and say where each landed.

The published-logs workflow (``rules/published.smk``) fetches per repository, not per log: one job
brings every selected log of a repository into the cache (:func:`ddrs.published.fetch.fetch_logs`:
HTTPS at the pinned commit, or a local mirror; each file checked against its sha256 and written
atomically) and writes a *manifest*, one CSV row per log::

    repository, commit, path, sha256, size, file

``file`` is where the log lies on this machine. The tables read the logs through the manifests
(:func:`local_files`), so a DAG of a few jobs stands for thousands of logs; every cached log is
checked against the sha256 its manifest pins each time it is read (:class:`CachedLogs`), not only
when it is fetched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pandas as pd

from ddrs.errors import FetchError
from ddrs.io import atomic_path, file_digest

#: a manifest's columns, in order
MANIFEST_COLUMNS = ("repository", "commit", "path", "sha256", "size", "file")


def repository_slug(repository: str) -> str:
    """``owner/name`` → ``owner+name``: a repository as one path component (the mirrors' convention)."""
    owner, separator, name = str(repository).partition("/")
    if not separator or not owner or not name or "/" in name or "+" in repository:
        raise ValueError(f"repository {repository!r} is not owner/name")
    return f"{owner}+{name}"


def fetch_repository(
    registry: pd.DataFrame,
    repository: str,
    cache: str | os.PathLike,
    manifest: str | os.PathLike,
    *,
    mirror: str | os.PathLike | None = None,
    base_url: str | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Fetch every log of ``repository`` in ``registry`` into ``cache`` and write their manifest.

    ``mirror`` (a git directory or a checkout) replaces the network; ``base_url`` None with no
    mirror is offline, and an error. Returns the manifest frame.
    """
    from ddrs.published.fetch import fetch_logs
    from ddrs.published.log_registry import PublishedLog

    rows = registry[registry["repository"] == repository]
    if rows.empty:
        raise FetchError(f"the registry lists no log of {repository}; check the repository's name (owner/name)")
    logs = [PublishedLog.from_row(row) for _, row in rows.iterrows()]
    mirrors = {repository: mirror} if mirror is not None else None
    paths = fetch_logs(logs, cache, mirrors=mirrors, base_url=base_url, progress=progress)
    frame = pd.DataFrame(
        {
            "repository": [log.repository for log in logs],
            "commit": [log.commit for log in logs],
            "path": [log.path for log in logs],
            "sha256": [log.sha256 for log in logs],
            "size": [log.size for log in logs],
            "file": [str(path) for path in paths],
        },
        columns=list(MANIFEST_COLUMNS),
    )
    with atomic_path(manifest) as tmp:
        frame.to_csv(tmp, index=False)
    return frame


def read_manifests(manifests: Iterable[str | os.PathLike]) -> pd.DataFrame:
    """The rows of every manifest, checked for :data:`MANIFEST_COLUMNS`."""
    frames = []
    for manifest in manifests:
        frame = pd.read_csv(manifest, dtype=str, keep_default_na=False)
        missing = [column for column in MANIFEST_COLUMNS if column not in frame.columns]
        if missing:
            raise FetchError(
                f"{manifest}: not a published-logs manifest (no {', '.join(missing)}); delete it and rerun the fetch"
            )
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=list(MANIFEST_COLUMNS))
    return pd.concat(frames, ignore_index=True)


class CachedLogs(Mapping[tuple[str, str], Path]):
    """``(repository, path)`` → the local file of each log the manifests list, each checked when it is
    looked up against the sha256 its manifest pins (the registry's, which its fetch checked): a cached
    log edited, truncated or replaced since its fetch is refused with a :class:`FetchError`, never read."""

    def __init__(self, frame: pd.DataFrame):
        self._rows = {
            (repository, path): (Path(file), sha256)
            for repository, path, file, sha256 in zip(
                frame["repository"], frame["path"], frame["file"], frame["sha256"], strict=True
            )
        }
        self._checked: set[tuple[str, str]] = set()

    def __getitem__(self, key: tuple[str, str]) -> Path:
        file, sha256 = self._rows[key]
        if key not in self._checked:
            _check_cached(key, file, sha256)
            self._checked.add(key)
        return file

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def sha256(self, key: tuple[str, str]) -> str:
        """The sha256 the manifest pins for the log ``key``."""
        return self._rows[key][1]


def _check_cached(key: tuple[str, str], file: Path, sha256: str) -> None:
    """Refuse the cached copy ``file`` of the log ``key`` unless it is there with ``sha256``."""
    name = ":".join(key)
    if not file.is_file():
        raise FetchError(
            f"{name}: its manifest names {file}, which is gone (a cleaned cache?); fetch it again: "
            "snakemake --forcerun fetch_published_logs ..."
        )
    got = file_digest(file)
    if got != sha256.lower():
        raise FetchError(
            f"{name}: its cached copy {file} has sha256 {got}, not the registry's {sha256}: the cache was changed "
            "since its fetch; delete the file and fetch it again (snakemake --forcerun fetch_published_logs ...)"
        )


def local_files(manifests: Iterable[str | os.PathLike]) -> CachedLogs:
    """``(repository, path)`` → the local file of each log the manifests list, checked as it is looked up."""
    return CachedLogs(read_manifests(manifests))


def local_file(files: Mapping[tuple[str, str], Path], repository: str, path: str, sha256: str | None = None) -> Path:
    """The local file of one log, or an error saying what to fetch; ``sha256``, where the caller holds
    the registry's, must be the one the manifest pins (a manifest of another registry is refused)."""
    try:
        file = Path(files[repository, path])
    except KeyError:
        raise FetchError(
            f"{repository}:{path} is in no manifest of this run: fetch its repository first "
            "(the fetch_published_logs rule, or ddrs logs fetch)"
        ) from None
    if sha256 is not None and isinstance(files, CachedLogs) and files.sha256((repository, path)) != sha256:
        raise FetchError(
            f"{repository}:{path}: its manifest pins sha256 {files.sha256((repository, path))}, the registry "
            f"{sha256}: it was fetched for another registry; fetch it again (snakemake --forcerun fetch_published_logs)"
        )
    if not file.is_file():
        raise FetchError(
            f"{repository}:{path}: its manifest names {file}, which is gone (a cleaned cache?); fetch it again: "
            "snakemake --forcerun fetch_published_logs ..."
        )
    return file
