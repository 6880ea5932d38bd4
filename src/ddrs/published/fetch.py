"""Bring published certification logs into a local cache, intact (DESIGN.md, "Published logs").

A log lands at ``<cache>/<repository>/<commit>/<path>``, read either over HTTPS from its pinned
raw URL (``<base_url>/<repository>/<commit>/<path>``) or, offline, from a local mirror of its
repository: a git directory (``git --git-dir D show COMMIT:PATH``) or a checked-out work tree
(the file at PATH). Either way the bytes go to a temporary file beside the destination, and only
when their sha256 is the registry's do they replace it (``os.replace``): a reader never sees a
half-written or altered log, and a checksum mismatch is refused, never used. A file already in
the cache with the right sha256 is not fetched again; one with another is removed and fetched anew.

A log is a :class:`~ddrs.published.log_registry.PublishedLog` or any mapping with the registry's
columns (``repository``, ``commit``, ``path``, ``sha256``, ``size``). Its fields are checked before
anything is read or written: ``repository`` is ``owner/name``, ``commit`` 40 hex digits, ``path`` a
relative path inside the repository, so a log can neither place a file outside the cache nor pass
git an option (every git call also ends its options with ``--end-of-options``).
"""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

from tqdm.auto import tqdm

from ddrs.errors import FetchError
from ddrs.io import atomic_path, file_digest
from ddrs.published.log_registry import DEFAULT_BASE_URL

#: what every fetch error ends with when the network is the source
NETWORK_ADVICE = (
    "check the network (a proxy? a firewall?), or point published_logs.mirrors (ddrs logs --mirror REPO=PATH) "
    "at a local mirror of the repository"
)
#: HTTP statuses worth another try (the server is busy or briefly failing)
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
CHUNK = 1 << 16


_REQUIRED = object()


def log_field(log, name: str, default=_REQUIRED):
    """A registry field of ``log``: a ``PublishedLog`` attribute, or a key of a mapping (a CSV row).

    ``default``, when given, stands for a field ``log`` lacks.
    """
    if default is _REQUIRED:
        return log[name] if isinstance(log, Mapping) else getattr(log, name)
    return log.get(name, default) if isinstance(log, Mapping) else getattr(log, name, default)


def log_name(log) -> str:
    """``repository:path``, the name errors and findings give a log."""
    return f"{log_field(log, 'repository')}:{log_field(log, 'path')}"


def cache_path(cache: str | os.PathLike, log) -> Path:
    """``<cache>/<repository>/<commit>/<path>``; refuses a log whose fields would leave that directory
    (or reach git as options): a repository other than ``owner/name``, a commit other than 40 hex
    digits, an absolute path or one with a ``..`` part."""
    repository, commit, path = (str(log_field(log, key)) for key in ("repository", "commit", "path"))
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repository) or ".." in repository.split("/"):
        raise FetchError(f"{log_name(log)}: repository {repository!r} is not owner/name; correct its row")
    if not re.fullmatch(r"[0-9a-fA-F]{40}", commit):
        raise FetchError(f"{log_name(log)}: commit {commit!r} is not 40 hex digits (a full git hash); correct its row")
    relative = PurePosixPath(path)
    if not path or relative.is_absolute() or ".." in relative.parts:
        raise FetchError(f"{log_name(log)}: the registry path leaves the cache directory; correct its row")
    return Path(cache, *repository.split("/"), commit).joinpath(*relative.parts)


def log_url(log, base_url: str = DEFAULT_BASE_URL) -> str:
    """The raw URL of ``log`` at its pinned commit."""
    repository, commit, path = (log_field(log, key) for key in ("repository", "commit", "path"))
    return f"{base_url.rstrip('/')}/{repository}/{commit}/{path}"


def fetch_logs(
    logs: Sequence,
    cache: str | os.PathLike,
    *,
    mirrors: Mapping[str, str | os.PathLike] | None = None,
    base_url: str | None = DEFAULT_BASE_URL,
    tries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60.0,
    progress: bool = True,
) -> list[Path]:
    """Bring every log of ``logs`` into ``cache``; return their cached paths, in order.

    A repository named in ``mirrors`` is read from its mirror only; any other over HTTPS from
    ``base_url`` (``None``: offline, and a log without a mirror is an error). A network read is
    tried ``tries`` times, waiting ``backoff · 2^k`` seconds before retry k + 1. Progress bars
    count logs and bytes. Raises :class:`FetchError` at the first log that cannot be had intact.
    """
    mirrors = {str(repository): Path(path) for repository, path in (mirrors or {}).items()}
    total = sum(int(log_field(log, "size") or 0) for log in logs)
    paths = []
    with (
        tqdm(total=len(logs), desc="published logs", unit="log", disable=not progress) as log_bar,
        tqdm(
            total=total, desc="bytes", unit="B", unit_scale=True, unit_divisor=1024, disable=not progress
        ) as bytes_bar,
    ):
        for log in logs:
            paths.append(
                fetch_log(
                    log,
                    cache,
                    mirror=mirrors.get(str(log_field(log, "repository"))),
                    base_url=base_url,
                    tries=tries,
                    backoff=backoff,
                    timeout=timeout,
                    on_bytes=bytes_bar.update,
                )
            )
            log_bar.update(1)
    return paths


def fetch_log(
    log,
    cache: str | os.PathLike,
    *,
    mirror: str | os.PathLike | None = None,
    base_url: str | None = DEFAULT_BASE_URL,
    tries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60.0,
    on_bytes=None,
) -> Path:
    """Bring one log into ``cache`` (from ``mirror`` when given, else from ``base_url``); return its path."""
    destination = cache_path(cache, log)
    expected = str(log_field(log, "sha256")).lower()
    size = int(log_field(log, "size") or 0)
    if destination.is_file():
        if file_digest(destination) == expected:
            if on_bytes is not None:
                on_bytes(size)
            return destination
        destination.unlink()  # altered or torn: never left where a reader would take it for the log
    if mirror is not None:
        source = f"mirror {mirror}"
        reader = _mirror_reader(log, Path(mirror))
        advice = (
            f"the mirror holds other content (a checkout of another commit? check out {log_field(log, 'commit')} "
            "there), or the file was rewritten: report it rather than use it"
        )
    elif base_url is not None:
        source = log_url(log, base_url)
        reader = _network_reader(log, source, tries=tries, backoff=backoff, timeout=timeout)
        advice = "the file at the pinned commit is not the one registered: report it (a moved or rewritten file)"
    else:
        raise FetchError(
            f"{log_name(log)}: no mirror of {log_field(log, 'repository')} and the network is off; "
            "point published_logs.mirrors (ddrs logs --mirror REPO=PATH) at a local mirror of it, or allow the network"
        )
    with atomic_path(destination) as tmp:
        reader(tmp, on_bytes)
        got = file_digest(tmp)
        if got != expected:
            raise FetchError(
                f"{log_name(log)} from {source}: checksum mismatch, expected sha256 {expected} ({size} bytes), "
                f"got {got} ({tmp.stat().st_size} bytes); refused: {advice}"
            )
    return destination


def _network_reader(log, url: str, *, tries: int, backoff: float, timeout: float):
    """A reader that downloads ``url`` into a file, retrying dropped connections and busy servers."""

    def read(tmp: Path, on_bytes) -> None:
        problem = ""
        for attempt in range(1, tries + 1):
            try:
                _download(url, tmp, timeout=timeout, on_bytes=on_bytes)
                return
            except urllib.error.HTTPError as error:
                if error.code not in RETRY_STATUSES:
                    advice = (
                        "the file is not at its pinned commit: report a moved file (the registry row needs "
                        "correcting), or point published_logs.mirrors (ddrs logs --mirror REPO=PATH) at a local "
                        "mirror that holds it"
                        if error.code == 404
                        else NETWORK_ADVICE
                    )
                    raise FetchError(
                        f"{log_name(log)} from {url}: HTTP {error.code} {error.reason}; {advice}"
                    ) from None
                problem = f"HTTP {error.code} {error.reason}"
            except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
                problem = _describe(error)
            if attempt < tries:
                time.sleep(backoff * 2 ** (attempt - 1))
        raise FetchError(f"{log_name(log)} from {url}: {problem}, after {tries} tries; {NETWORK_ADVICE}")

    return read


def _download(url: str, tmp: Path, *, timeout: float, on_bytes) -> None:
    """GET ``url`` into ``tmp`` (truncated first); a body shorter than its Content-Length is an error."""
    request = urllib.request.Request(url, headers={"User-Agent": "ddrs-published-logs"})
    got = 0
    with urllib.request.urlopen(request, timeout=timeout) as response, tmp.open("wb") as handle:
        length = response.headers.get("Content-Length")
        while block := response.read(CHUNK):
            handle.write(block)
            got += len(block)
            if on_bytes is not None:
                on_bytes(len(block))
    if length is not None and got != int(length):
        raise http.client.IncompleteRead(b"", int(length) - got) from None


def _describe(error: BaseException) -> str:
    """What happened to a connection, in words."""
    if isinstance(error, http.client.IncompleteRead):
        return f"connection dropped mid-body ({error.expected} bytes short)"
    if isinstance(error, urllib.error.URLError):
        return f"connection failed ({error.reason})"
    if isinstance(error, TimeoutError):
        return "connection timed out"
    return f"connection dropped ({type(error).__name__}: {error})"


def _mirror_reader(log, mirror: Path):
    """A reader that copies the log out of a local mirror: a git directory, or a work tree."""
    commit, path = str(log_field(log, "commit")), str(log_field(log, "path"))
    in_tree = mirror / path
    git_dir = mirror if _is_git_dir(mirror) else mirror / ".git" if _is_git_dir(mirror / ".git") else None

    def read(tmp: Path, on_bytes) -> None:
        if in_tree.is_file() and git_dir != mirror:
            with in_tree.open("rb") as source, tmp.open("wb") as handle:
                while block := source.read(CHUNK):
                    handle.write(block)
                    if on_bytes is not None:
                        on_bytes(len(block))
            return
        if git_dir is None:
            raise FetchError(
                f"{log_name(log)}: the mirror {mirror} has no {path} and is not a git directory; point "
                "published_logs.mirrors at a checkout of the repository (or its git directory)"
            )
        with tmp.open("wb") as handle:
            result = subprocess.run(
                ["git", "--git-dir", str(git_dir), "show", "--end-of-options", f"{commit}:{path}"],
                stdout=handle,
                stderr=subprocess.PIPE,
            )
        if result.returncode != 0:
            message = result.stderr.decode(errors="replace").strip().splitlines()
            raise FetchError(
                f"{log_name(log)}: the mirror {git_dir} cannot give {commit}:{path} "
                f"(git: {message[-1] if message else result.returncode}); fetch commit {commit} into the mirror, "
                "or report a moved file"
            )
        if on_bytes is not None:
            on_bytes(tmp.stat().st_size)

    return read


def _is_git_dir(path: Path) -> bool:
    """A git directory (bare, or a work tree's ``.git``), not a work tree."""
    return (path / "HEAD").is_file() and (path / "objects").is_dir()
