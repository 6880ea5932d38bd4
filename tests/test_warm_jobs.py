"""The tiny runs' warm job runner (tests/warm_jobs.py) gives a ``ddrs`` command what a new process
gives it: the same log, output, error and exit status, and a job dies with its client."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from test_cli_certify import certify_args
from warm_jobs import warm_jobs

from ddrs.logs.certification_log import read_log


@pytest.fixture(scope="module")
def warm_env():
    with warm_jobs(dict(os.environ)) as env:
        yield env


def ddrs(env: dict | None, args: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    """``ddrs args`` as the warm runner's client (``env``) or as a new process (None)."""
    env = dict(os.environ) if env is None else dict(os.environ, **env)
    command = shutil.which("ddrs", path=env["PATH"])
    return subprocess.run([command, *args], env=env, cwd=cwd, capture_output=True, text=True, **kwargs)


def test_a_warm_certification_writes_the_log_a_new_process_writes(warm_env, digits_checkpoint, tmp_path):
    """The same arguments, relative to each run's working directory, give the same log (but its
    ``time`` column) and the same last line on stdout."""
    runs = {}
    for name, env in (("warm", warm_env), ("new", None)):
        (tmp_path / name).mkdir()
        args = certify_args(digits_checkpoint, "certify.tsv", "--sigma", "0.5", "--seed", "3")
        result = ddrs(env, args, tmp_path / name)
        assert result.returncode == 0, result.stderr
        runs[name] = (read_log(tmp_path / name / "certify.tsv").drop(columns="time"), result.stdout)
    assert runs["warm"][0].equals(runs["new"][0])
    assert runs["warm"][1] == runs["new"][1] and "-> certify.tsv" in runs["warm"][1]


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["certify", "--checkpoint", "missing.pt", "--dataset", "digits", "--sigma", "x", "--out", "o.tsv"], ""),
        (["job", "--config", "-", "--checkpoint", "missing.pt", "--out", "o.tsv"], "{not json"),
    ],
)
def test_a_failing_warm_job_exits_and_prints_as_a_new_process(warm_env, tmp_path, args, stdin):
    """Its standard input read, its error on stderr, its exit status: as the console script's."""
    warm, new = (ddrs(env, args, tmp_path, input=stdin) for env in (warm_env, None))
    assert warm.returncode == new.returncode != 0
    assert (warm.stdout, warm.stderr) == (new.stdout, new.stderr) and new.stderr


def test_a_job_whose_client_is_killed_is_killed(warm_env, tmp_path):
    """A job waiting on its standard input dies when its client does (SIGKILL), as it would in its place."""
    server = next(p for p in psutil.Process().children() if warm_env["DDRS_WARM_JOBS"] in p.cmdline())
    command = shutil.which("ddrs", path=warm_env["PATH"])
    client = subprocess.Popen(
        [command, "job", "--config", "-", "--checkpoint", "model.pt", "--out", "o.tsv"],
        env=dict(os.environ, **warm_env),
        cwd=tmp_path,
        stdin=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60  # a hang guard only
    while not server.children():
        assert time.monotonic() < deadline and client.poll() is None, "the job never started"
        time.sleep(0.02)
    job = server.children()[0]
    client.send_signal(signal.SIGKILL)
    client.wait()
    try:  # its standard input still open: only its client's death can end it
        job.wait(timeout=30)  # psutil.TimeoutExpired if the job outlived its client
    finally:
        client.stdin.close()
    assert not server.children()
