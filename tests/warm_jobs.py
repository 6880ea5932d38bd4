"""A warm runner for the ``ddrs`` commands of a test's Snakemake run: each job is a fork of one
server process that imported torch and the job modules once, instead of a new interpreter.

A tiny run's jobs are small: of a certification's 2.7–3.0 CPU-s, about 2.2 are the interpreter
importing torch, and a training job pays 1.3 more for ``torch._dynamo`` (which
``torch.optim.Optimizer`` imports on first use). :func:`warm_jobs` starts the server for the length of
a run and puts a ``ddrs`` in front of the venv's on the run's ``PATH``: a client, started without
``site`` (tens of milliseconds), which hands the server its arguments, working directory,
environment and standard streams (their file descriptors) and exits with the forked job's status.

What a job sees is what the console script gives it: ``ddrs.cli.main`` with its arguments, its
environment, its working directory and its streams, in a process of its own. What differs is only
the imports it finds done: the server imports nothing from the run's files, and it is started with
the run's environment (``tests/workflow_site``'s patches apply as they would at a job's start). A job
whose client dies (Snakemake's kill, a test's ``killpg``) is killed at once (``SIGKILL``), as a job
in the client's place would be; the tests that pin what a kill does (tests/test_tiny_digits.py's
killed run) still run real processes, as do ``make test-slow``'s and the paper miniature's runs.

``make test``'s end-to-end runs use it (``workflow_helpers.snakemake(..., warm=True)``: the tiny runs
and test_provenance's tree): it is a test harness, not a way to run the workflow.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

#: imported by the server before it forks: what the jobs' start-up would import again each time
WARM_IMPORTS = (
    "torch",
    "torch._dynamo",  # torch.optim.Optimizer's first call imports it (torch._compile._disable_dynamo)
    "torchvision",
    "scipy.stats",
    "pandas",
    "pandas.io.formats.style",  # DataFrame.to_latex's Styler, which imports matplotlib.pyplot
    "ddrs.jobs.runner",
    "ddrs.training.trainer",
    "ddrs.pipeline.build",
)
_MESSAGE = 1 << 20  # the largest request: arguments, working directory and environment, as JSON
_STREAMS = 3  # stdin, stdout, stderr


def serve(address: str) -> None:
    """Import :data:`WARM_IMPORTS`, listen at ``address`` and fork a job for each request; print
    ``ready`` once listening. Runs until killed."""
    import importlib

    for module in WARM_IMPORTS:
        importlib.import_module(module)
    assert threading.active_count() == 1, "the server must not fork with threads running"
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the jobs report to their clients: no zombies
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(address)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        message, streams, _, _ = socket.recv_fds(connection, _MESSAGE, _STREAMS)
        if os.fork() == 0:
            listener.close()
            _job(connection, json.loads(message), streams)  # never returns
        connection.close()
        for stream in streams:
            os.close(stream)


def _job(connection: socket.socket, request: dict, streams: list[int]) -> None:
    """The forked job: the client's streams, directory and environment, then ``ddrs`` with its
    arguments, its exit status sent back; killed if the client goes first."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a job waits on its own children
    code = 1
    try:
        for target, stream in enumerate(streams):
            os.dup2(stream, target)
            os.close(stream)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [str(Path(sys.executable).parent / "ddrs"), *request["argv"]]
        threading.Thread(target=_die_with_client, args=(connection,), daemon=True).start()
        from ddrs.cli import main

        code = main(request["argv"])
    except SystemExit as exit:  # as the interpreter ends on one: None is 0, a message is printed and 1
        if exit.code is None or isinstance(exit.code, int):
            code = exit.code or 0
        else:
            print(exit.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        with contextlib.suppress(OSError):  # a client gone: the watcher kills this job anyway
            connection.send(str(code).encode())
        os._exit(code)


def _die_with_client(connection: socket.socket) -> None:
    """Block until the client's end closes; if it closed before the job ended, the job dies too."""
    connection.recv(1)
    os.kill(os.getpid(), signal.SIGKILL)


def client(address: str, argv: list[str]) -> int:
    """Send the server this process's request and streams; the job's exit status (137 if it died)."""
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
        connection.connect(address)
        socket.send_fds(connection, [json.dumps(request).encode()], list(range(_STREAMS)))
        reply = connection.recv(64)
    return int(reply) if reply else 128 + signal.SIGKILL


#: the ``ddrs`` the runs find first on their PATH: this module's client, started without ``site``
_CLIENT = """#!{python} -S
import os, sys
sys.path.insert(0, {tests!r})
from warm_jobs import client
sys.exit(client(os.environ["DDRS_WARM_JOBS"], sys.argv[1:]))
"""


@contextlib.contextmanager
def warm_jobs(environment: dict[str, str]):
    """The server, started with ``environment`` (a whole one, as a Snakemake run's), for the length of the
    block; yields ``environment`` with the client first on its PATH, so that the run's ``ddrs`` commands
    are the server's forks."""
    with tempfile.TemporaryDirectory(prefix="warm-jobs-") as folder:
        address = os.path.join(folder, "socket")
        shim = Path(folder, "bin", "ddrs")
        shim.parent.mkdir()
        shim.write_text(_CLIENT.format(python=sys.executable, tests=str(Path(__file__).parent)))
        shim.chmod(0o755)
        server = subprocess.Popen(
            [sys.executable, __file__, address],
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout.readline().strip() == "ready", "the warm job server did not start"
            path = f"{shim.parent}{os.pathsep}{environment.get('PATH', '')}"
            yield {**environment, "PATH": path, "DDRS_WARM_JOBS": address}
        finally:
            server.kill()
            server.wait()
            server.stdout.close()


if __name__ == "__main__":
    serve(sys.argv[1])
