"""Where a finished workflow run spent its job time: start-up (interpreter, imports, parsing) vs work.

Reads every Snakemake benchmark ``<results>/benchmarks/<stage>/<name>.tsv`` (column ``s`` = the
job's wall seconds) and the job's log ``<results>/logs/<stage>/<name>.log`` (the rules write both
paths so), whose last ``<job>: work <seconds> s`` line (:mod:`ddrs.logs.work_time`) says how long the
job's own work took. Start-up = wall − work. Prints the totals and the split per stage (job kind);
jobs whose log has no work line (failed, or run before the line existed) are counted apart.

    PYTHONPATH=src .venv/bin/python benchmarks/dag_overhead.py --results results
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from _report import add_json_option, write_report
from tabulate import tabulate

from ddrs.logs.work_time import work_seconds


@dataclass(frozen=True)
class Job:
    stage: str
    name: str
    wall: float
    work: float | None


def read_jobs(results: Path) -> list[Job]:
    """One :class:`Job` per benchmark file under ``results/benchmarks``, with the work seconds of its log."""
    benchmarks = results / "benchmarks"
    if not benchmarks.is_dir():
        raise SystemExit(f"no Snakemake benchmarks in {benchmarks}: run the workflow first, or pass --results")
    jobs = []
    for tsv in sorted(benchmarks.rglob("*.tsv")):
        relative = tsv.relative_to(benchmarks)
        wall = float(pd.read_csv(tsv, sep="\t")["s"].mean())  # one row per benchmark repeat
        log = results / "logs" / relative.with_suffix(".log")
        work = work_seconds(log.read_text(errors="replace")) if log.exists() else None
        jobs.append(Job(relative.parts[0], relative.with_suffix("").as_posix(), wall, work))
    return jobs


def summarise(jobs: list[Job]) -> dict:
    """Totals and per-stage wall, work and start-up seconds of the jobs that report their work."""
    timed = [job for job in jobs if job.work is not None]
    startup = sum(job.wall - job.work for job in timed)
    stages: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        stages[job.stage].append(job)
    per_stage = {}
    for stage, members in sorted(stages.items()):
        timed_here = [job for job in members if job.work is not None]
        stage_startup = sum(job.wall - job.work for job in timed_here)
        stage_wall = sum(job.wall for job in timed_here)
        per_stage[stage] = {
            "jobs": len(members),
            "jobs_without_work_line": len(members) - len(timed_here),
            "wall_seconds": round(sum(job.wall for job in members), 3),
            "work_seconds": round(sum(job.work for job in timed_here), 3) if timed_here else None,
            "startup_seconds": round(stage_startup, 3) if timed_here else None,
            "startup_share_of_stage": round(stage_startup / stage_wall, 4) if stage_wall else None,
            "share_of_all_startup": round(stage_startup / startup, 4) if startup and timed_here else None,
            "startup_seconds_per_job": round(stage_startup / len(timed_here), 3) if timed_here else None,
        }
    timed_wall = sum(job.wall for job in timed)
    return {
        "jobs": len(jobs),
        "jobs_without_work_line": len(jobs) - len(timed),
        "wall_seconds": round(sum(job.wall for job in jobs), 3),
        "work_seconds": round(sum(job.work for job in timed), 3),
        "startup_seconds": round(startup, 3),
        "startup_share": round(startup / timed_wall, 4) if timed_wall else None,
        "stages": per_stage,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("results"), help="the run's results directory")
    add_json_option(parser)
    args = parser.parse_args()
    figures = summarise(read_jobs(args.results))
    share = "n/a" if figures["startup_share"] is None else f"{100 * figures['startup_share']:.1f} %"
    print(
        f"{figures['jobs']} jobs, {figures['wall_seconds']:.1f} s of job wall time; "
        f"before the first useful work: {figures['startup_seconds']:.1f} s ({share} of the timed jobs' wall time)"
    )
    if figures["jobs_without_work_line"]:
        print(
            f"{figures['jobs_without_work_line']} job(s) have no work line in their log and are left out of the split"
        )
    rows = [
        [
            stage,
            s["jobs"],
            s["jobs_without_work_line"],
            s["wall_seconds"],
            s["work_seconds"],
            s["startup_seconds"],
            s["startup_seconds_per_job"],
            None if s["startup_share_of_stage"] is None else 100 * s["startup_share_of_stage"],
            None if s["share_of_all_startup"] is None else 100 * s["share_of_all_startup"],
        ]
        for stage, s in figures["stages"].items()
    ]
    headers = [
        "stage",
        "jobs",
        "no work line",
        "wall s",
        "work s",
        "start-up s",
        "start-up s/job",
        "start-up % of stage",
        "% of start-up",
    ]
    print(tabulate(rows, headers=headers, floatfmt=".1f", missingval="-"))
    write_report("dag_overhead", {"results": str(args.results), **figures}, args.json)


if __name__ == "__main__":
    main()
