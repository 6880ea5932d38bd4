"""The one stderr line a job prints when its work is done: ``<job>: work <seconds> s``.

The seconds run from the job's first useful work (a ``ddrs`` command's ``run``, a workflow script's
first statement after its imports) to its end, so a benchmark can split a job's wall time into
start-up (interpreter, imports, argument parsing) and work (``benchmarks/dag_overhead.py``).
"""

from __future__ import annotations

import re
import sys
import time

#: the line :func:`report_work` prints
WORK_LINE = re.compile(r"^(?P<job>.+): work (?P<seconds>[0-9]+(?:\.[0-9]+)?) s$", re.MULTILINE)


def report_work(job: str, started: float) -> None:
    """Print ``<job>: work <seconds> s`` to stderr; ``started`` is a :func:`time.perf_counter` reading."""
    print(f"{job}: work {time.perf_counter() - started:.3f} s", file=sys.stderr, flush=True)


def work_seconds(text: str) -> float | None:
    """The seconds of the last work line in a job's log text, or None if it has none (the job failed or predates it)."""
    matches = list(WORK_LINE.finditer(text))
    return float(matches[-1]["seconds"]) if matches else None
