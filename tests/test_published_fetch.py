"""Fetching published logs: a loopback HTTP server and local mirrors, never the network."""

from __future__ import annotations

import hashlib
import http.server
import subprocess
import threading
from pathlib import Path

import pytest

from ddrs.errors import FetchError
from ddrs.published.fetch import cache_path, fetch_log, fetch_logs, log_url

LOG = b"idx\tlabel\tpredict\tradius\tcorrect\ttime\n0\t3\t3\t0.5\t1\t0:00:01.5\n20\t7\t-1\t0.0\t0\t0:00:01.4\n"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
REPOSITORY = "someone/smoothing"


def row(path: str, content: bytes = LOG, *, commit: str = COMMIT, repository: str = REPOSITORY) -> dict:
    """A registry row (the fields fetching reads) for a log of ``content``."""
    return {
        "repository": repository,
        "commit": commit,
        "path": path,
        "sha256": hashlib.sha256(content).hexdigest(),
        "size": len(content),
    }


class Handler(http.server.BaseHTTPRequestHandler):
    """Serves /<repository>/<commit>/<name>: good and bad bytes, a 404, a torn body, a flaky start."""

    requests: dict[str, int] = {}

    def do_GET(self):  # noqa: N802 (http.server's name)
        name = self.path.rsplit("/", 1)[-1]
        count = Handler.requests[name] = Handler.requests.get(name, 0) + 1
        if name in ("good", "bad") or (name == "flaky" and count > 1):
            body = LOG if name != "bad" else LOG.replace(b"0.5", b"0.9")
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif name in ("drop", "flaky"):
            self.send_response(200)
            self.send_header("Content-Length", str(len(LOG) + 1000))
            self.end_headers()
            self.wfile.write(LOG[:20])
            self.wfile.flush()
            self.close_connection = True
        else:
            self.send_error(404, "Not Found")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Handler.requests = {}
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def files_under(directory: Path) -> list[Path]:
    return [path for path in directory.rglob("*") if path.is_file()] if directory.exists() else []


def test_good_file_lands_with_its_bytes_and_is_not_fetched_again(server, tmp_path):
    log = row("data/good")
    (path,) = fetch_logs([log], tmp_path, base_url=server, backoff=0, progress=False)
    assert path == tmp_path / REPOSITORY / COMMIT / "data/good" == cache_path(tmp_path, log)
    assert path.read_bytes() == LOG
    fetch_logs([log], tmp_path, base_url=server, backoff=0, progress=False)
    assert Handler.requests["good"] == 1
    assert files_under(tmp_path) == [path]


def test_a_cached_file_of_another_checksum_is_fetched_again(server, tmp_path):
    log = row("data/good")
    path = cache_path(tmp_path, log)
    path.parent.mkdir(parents=True)
    path.write_bytes(LOG[:-5])
    assert fetch_log(log, tmp_path, base_url=server, backoff=0) == path
    assert path.read_bytes() == LOG
    assert Handler.requests["good"] == 1


def test_checksum_mismatch_is_refused_and_leaves_nothing(server, tmp_path):
    log = row("data/bad")
    with pytest.raises(FetchError) as caught:
        fetch_log(log, tmp_path, base_url=server, backoff=0)
    message = str(caught.value)
    assert f"{REPOSITORY}:data/bad" in message
    assert log_url(log, server) in message
    assert "checksum mismatch" in message and log["sha256"] in message
    assert hashlib.sha256(LOG.replace(b"0.5", b"0.9")).hexdigest() in message
    assert "refused" in message and "report" in message
    assert files_under(tmp_path) == []


def test_a_corrupt_cached_file_is_not_left_when_the_fetch_fails(server, tmp_path):
    log = row("data/bad")
    path = cache_path(tmp_path, log)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"torn")
    with pytest.raises(FetchError, match="checksum mismatch"):
        fetch_log(log, tmp_path, base_url=server, backoff=0)
    assert files_under(tmp_path) == []


@pytest.mark.parametrize(
    "name, says, requests",
    [
        # a 404 is not retried
        ("missing", ["HTTP 404", "moved file", "published_logs.mirrors"], 1),
        ("drop", ["dropped", "after 3 tries", "check the network", "published_logs.mirrors"], 3),
    ],
)
def test_a_failed_fetch_names_the_log_the_url_and_what_to_do(server, tmp_path, name, says, requests):
    log = row(f"data/{name}")
    with pytest.raises(FetchError) as caught:
        fetch_log(log, tmp_path, base_url=server, tries=3, backoff=0)
    message = str(caught.value)
    assert f"{REPOSITORY}:data/{name}" in message and log_url(log, server) in message
    assert all(phrase in message for phrase in says), message
    assert Handler.requests[name] == requests
    assert files_under(tmp_path) == []


def test_a_connection_dropped_once_succeeds_on_the_retry(server, tmp_path):
    path = fetch_log(row("data/flaky"), tmp_path, base_url=server, tries=2, backoff=0)
    assert path.read_bytes() == LOG
    assert Handler.requests["flaky"] == 2
    assert files_under(tmp_path) == [path]


def test_offline_without_a_mirror_is_an_error(tmp_path):
    with pytest.raises(FetchError, match="no mirror of someone/smoothing"):
        fetch_log(row("data/good"), tmp_path, base_url=None)


def test_a_path_leaving_the_cache_is_refused(tmp_path):
    with pytest.raises(FetchError, match="leaves the cache"):
        cache_path(tmp_path, row("../../etc/passwd"))


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("commit", "--output=OUTSIDE", "is not 40 hex digits"),  # git show would write OUTSIDE
        ("commit", COMMIT[:39], "is not 40 hex digits"),
        ("commit", f"{COMMIT}/../..", "is not 40 hex digits"),
        ("path", "../../OUTSIDE", "leaves the cache"),
        ("path", "data/../../../OUTSIDE", "leaves the cache"),
        ("repository", "someone/../..", "is not owner/name"),
    ],
)
def test_a_log_that_would_write_outside_the_cache_or_pass_git_an_option_is_refused(
    git_mirror, tmp_path, field, value, says
):
    """Through the public function, from a git mirror: a clear error, and nothing written anywhere."""
    repo, commit = git_mirror
    outside = tmp_path / "outside"
    log = row("data/sigma_0.25", commit=commit) | {field: value.replace("OUTSIDE", str(outside))}
    before = set(files_under(tmp_path))
    with pytest.raises(FetchError, match=says) as caught:
        fetch_log(log, tmp_path / "cache", mirror=repo / ".git", base_url=None)
    assert f"{log['repository']}:{log['path']}" in str(caught.value)
    assert not outside.exists()
    assert set(files_under(tmp_path)) == before


def git(*args: str, cwd: Path) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def git_mirror(tmp_path):
    """A git repository with one committed log, then changed in the work tree after the commit."""
    repo = tmp_path / "mirror"
    (repo / "data").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    (repo / "data" / "sigma_0.25").write_bytes(LOG)
    git("add", ".", cwd=repo)
    git("commit", "-q", "-m", "log", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo)


def test_git_directory_mirror(git_mirror, tmp_path):
    repo, commit = git_mirror
    (repo / "data" / "sigma_0.25").write_bytes(b"changed after the commit")
    log = row("data/sigma_0.25", commit=commit)
    cache = tmp_path / "cache"
    (path,) = fetch_logs([log], cache, mirrors={REPOSITORY: repo / ".git"}, base_url=None, progress=False)
    assert path == cache / REPOSITORY / commit / "data/sigma_0.25"
    assert path.read_bytes() == LOG


def test_git_mirror_without_the_commit(git_mirror, tmp_path):
    repo, _ = git_mirror
    with pytest.raises(FetchError) as caught:
        fetch_log(row("data/sigma_0.25"), tmp_path / "cache", mirror=repo / ".git", base_url=None)
    message = str(caught.value)
    assert f"{REPOSITORY}:data/sigma_0.25" in message and str(repo / ".git") in message
    assert f"fetch commit {COMMIT}" in message
    assert files_under(tmp_path / "cache") == []


def test_work_tree_mirror_is_read_and_checked(git_mirror, tmp_path):
    repo, commit = git_mirror
    cache = tmp_path / "cache"
    path = fetch_log(row("data/sigma_0.25", commit=commit), cache, mirror=repo, base_url=None)
    assert path.read_bytes() == LOG
    (repo / "data" / "sigma_0.25").write_bytes(b"another commit's content")
    path.unlink()
    with pytest.raises(FetchError) as caught:
        fetch_log(row("data/sigma_0.25", commit=commit), cache, mirror=repo, base_url=None)
    message = str(caught.value)
    assert "checksum mismatch" in message and f"mirror {repo}" in message and f"check out {commit}" in message
    assert files_under(cache) == []


def test_plain_checkout_mirror(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "data").mkdir(parents=True)
    (checkout / "data" / "sigma_0.50").write_bytes(LOG)
    path = fetch_log(row("data/sigma_0.50"), tmp_path / "cache", mirror=checkout, base_url=None)
    assert path.read_bytes() == LOG
    with pytest.raises(FetchError, match="has no data/absent and is not a git directory"):
        fetch_log(row("data/absent"), tmp_path / "cache", mirror=checkout, base_url=None)
