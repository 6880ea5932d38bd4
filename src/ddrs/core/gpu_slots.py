"""One GPU per job on a multi-GPU machine: each process claims a free GPU index with a file lock.

Snakemake's ``gpu`` resource (``profiles/gpu``) bounds how many GPU jobs run at once; this module
decides *which* GPU each of them uses. A process locks ``<lock dir>/gpu<i>.lock`` for the first
free index ``i`` and holds it until it exits (the operating system drops the lock then, even on a
crash), so concurrent jobs land on distinct GPUs. The lock directory is ``$DDRS_GPU_LOCK_DIR``,
else ``<tmp>/ddrs-gpu-locks-<uid>``. Torch-free, so the logic is tested without a GPU.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

#: environment variable naming the directory of the per-GPU lock files
LOCK_DIR_ENV = "DDRS_GPU_LOCK_DIR"

#: the lock held by this process: (lock dir, gpu count) -> (index, open lock file)
_HELD: dict[tuple[str, int], tuple[int, IO[str]]] = {}


def lock_dir() -> Path:
    """``$DDRS_GPU_LOCK_DIR``, else a per-user directory under the system's temporary directory."""
    configured = os.environ.get(LOCK_DIR_ENV)
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / f"ddrs-gpu-locks-{os.getuid()}"


def _try_lock(path: Path) -> IO[str] | None:
    handle = open(path, "a+")  # noqa: SIM115 - held open for the process's lifetime
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def claim_gpu(count: int, directory: Path | None = None, poll_seconds: float = 1.0) -> int:
    """The index of a GPU no other process holds, locked until this process exits.

    Tries ``0 … count−1`` in order; when all are held (more GPU jobs than GPUs, e.g. run without
    the profile's ``gpu`` resource) it waits and tries again. A second call in the same process
    returns the index it already holds.
    """
    if count < 1:
        raise ValueError(f"GPU count must be >= 1, got {count}")
    directory = Path(directory) if directory is not None else lock_dir()
    key = (str(directory.resolve()), count)
    if key in _HELD:
        return _HELD[key][0]
    directory.mkdir(parents=True, exist_ok=True)
    warned = False
    while True:
        for index in range(count):
            handle = _try_lock(directory / f"gpu{index}.lock")
            if handle is not None:
                _HELD[key] = (index, handle)
                return index
        if not warned:
            print(f"ddrs: all {count} GPUs are held by other jobs ({directory}); waiting", file=sys.stderr)
            warned = True
        time.sleep(poll_seconds)


def release_all() -> None:
    """Drop every lock this process holds (tests; a process's exit drops them too)."""
    for _, handle in _HELD.values():
        handle.close()
    _HELD.clear()
