"""What hashing every file costs ``ddrs provenance``, side by side with a check that hashes nothing.

Issue 68 drops the shortcut that took a file's digest from its record while the file's size and
modification time were the recorded ones: Snakemake touches every output after its job, so on a tree
the workflow made it never fired, and it passed a same-size edit whose time was put back. This
measures what it could have saved at best. On one finished tree, in turns, the check as it is
(:func:`ddrs.pipeline.provenance.check_tree`: every file hashed once) and the same check with every
digest looked up instead of hashed (what the shortcut gave when it fired for every file; the digests
are taken once beforehand, untimed). Both must name the same outputs. It prints the files and bytes
hashed, each side's median wall time over the turns, and their ratio.

    PYTHONPATH=src .venv/bin/python benchmarks/provenance_cost.py --tree FINISHED_RUN \\
        --configfile config/config.yaml [--results results] [--repeats 3]

``--tree`` is the working directory the tree was made in (its ``results/``, ``data/``); it is read,
never written. On a shared machine the times move with the load (recorded in the JSON).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from unittest import mock

from _report import add_json_option, write_report
from tabulate import tabulate

import ddrs.jobs.provenance_record as provenance_record
from ddrs.io import file_digest
from ddrs.pipeline import Experiment
from ddrs.pipeline.job_plan import JobPlan
from ddrs.pipeline.provenance import check_tree, load_config


def timed_check(exp, results: str, digest) -> tuple[float, list]:
    """One check of the tree with ``digest`` as the file hasher: its wall seconds and findings."""
    with mock.patch.object(provenance_record, "file_digest", digest):
        start = time.perf_counter()
        findings = list(check_tree(exp, JobPlan(exp.grid), results))
        return time.perf_counter() - start, findings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True, help="the working directory of a finished run")
    parser.add_argument("--configfile", nargs="+", required=True, help="its config file(s), from here")
    parser.add_argument("--schema", default="config/schema/config.schema.yaml")
    parser.add_argument("--results", default="results", help="the results tree, from --tree")
    parser.add_argument("--repeats", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args()
    config = load_config([Path(path).resolve() for path in args.configfile], Path(args.schema).resolve())
    os.chdir(args.tree)
    exp = Experiment(config)
    hashed: dict[str, str] = {}

    def hashing(path) -> str:
        hashed[os.path.abspath(path)] = file_digest(path)
        return hashed[os.path.abspath(path)]

    timed_check(exp, args.results, hashing)  # untimed: every digest, and the files' pages cached alike
    sizes = sum(os.path.getsize(path) for path in hashed)

    def looked_up(path) -> str:  # the shortcut at its best: no file hashed
        return hashed[os.path.abspath(path)]

    turns = {"every file hashed": [], "digests looked up": []}
    for _ in range(args.repeats):
        for side, digest in (("every file hashed", file_digest), ("digests looked up", looked_up)):
            seconds, findings = timed_check(exp, args.results, digest)
            turns[side].append((seconds, [(finding.path, finding.why) for finding in findings]))
    assert len({str(found) for side in turns.values() for _, found in side}) == 1, "both sides name the same"
    median = {side: statistics.median(seconds for seconds, _ in runs) for side, runs in turns.items()}
    ratio = median["every file hashed"] / median["digests looked up"]
    findings = len(turns["every file hashed"][0][1])
    print(
        tabulate(
            [[side, f"{seconds:.2f}"] for side, seconds in median.items()],
            headers=["check", f"median wall s ({args.repeats} turns)"],
        )
    )
    print(f"{len(hashed)} files, {sizes / 1e6:.1f} MB hashed; {findings} findings; ratio {ratio:.2f}")
    figures = {
        "tree": str(args.tree),
        "files": len(hashed),
        "megabytes": round(sizes / 1e6, 1),
        "findings": findings,
        "median_seconds": {side: round(seconds, 3) for side, seconds in median.items()},
        "ratio": round(ratio, 3),
        "repeats": args.repeats,
    }
    write_report("provenance_cost", figures, args.json)


if __name__ == "__main__":
    main()
