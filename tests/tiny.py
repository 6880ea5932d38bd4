"""Each configuration of the repository on an overlay sized for the test (tests/configs/tiny/): the
end-to-end runs of ``make test`` (DESIGN.md, "Tests in tiers"), one file each
(tests/test_tiny_*.py), and by hand:

    python tests/tiny.py {default,digits,paper,seed_papers} WORKDIR [--warm] [SNAKEMAKE ARGUMENT ...]

writes the tiny configuration (and the paper configurations' miniature data) under WORKDIR, runs
Snakemake there on the outputs the tests make (:func:`covering_targets`: every rule at least once;
the given arguments instead, if any), prints the run's job statistics and exits with Snakemake's status.

A tiny configuration is the configuration's files, the paper configurations' miniature overlay
(tests/configs/*_miniature.yaml, tests/miniature.py) and the tiny overlay, read in that order. The
overlay cuts sizes (inputs, n, epochs, bootstrap draws, runs to 2 where the configuration replicates)
and grids (σ, K, the grid search's n, the methods) to a few values; the ``train_by_sigma`` entries and
the published checkpoints of the σ it leaves out, and the settings of the methods it leaves out, go
with them (keys Snakemake's config merge cannot drop). What stays is every rule of the full
configuration's DAG, and every method trains in some tiny run, which tests/test_tiny_configs.py checks;
a tiny run makes the outputs that run each of those rules at least once.
"""

from __future__ import annotations

import argparse
import copy
import functools
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from miniature import TEST_CONFIGS, config_files, merged, write
from workflow_helpers import REPO, dry_run_jobs, job_counts, published_imagenet_in_place, snakemake, write_config

from ddrs.pipeline.layout import scale_label

TINY = TEST_CONFIGS / "tiny"
#: each configuration: its files (config/), or the paper configuration whose miniature it runs
CONFIGS = {"default": ["config.yaml"], "digits": ["digits.yaml"], "paper": "paper", "seed_papers": "seed_papers"}
RUN_ARGS = ("--cores", "2")


def full_files(name: str) -> list[Path]:
    """The ``--configfile`` files of the configuration ``name`` as a user runs it."""
    files = CONFIGS[name]
    return config_files(files, overlay=False) if isinstance(files, str) else [REPO / "config" / f for f in files]


def tiny_files(name: str) -> list[Path]:
    """The full configuration's files, its miniature overlay (paper configurations) and its tiny overlay."""
    miniature = CONFIGS[name]
    return [*(config_files(miniature) if isinstance(miniature, str) else full_files(name)), TINY / f"{name}.yaml"]


def tiny_config(name: str) -> dict:
    """The configuration Snakemake reads from :func:`tiny_files`, less the ``train_by_sigma`` entries
    and published checkpoints of the σ the tiny overlay leaves out, and the settings of the methods it
    leaves out (:data:`BY_METHOD`)."""
    config = copy.deepcopy(merged(tiny_files(name)))
    methods = set(config["methods"])
    for spec in config["datasets"].values():
        scales = {scale_label(s) for key in ("sigmas", "uniform_sigmas") for s in spec.get(key, [])}
        if "train_by_sigma" in spec:
            spec["train_by_sigma"] = kept(spec["train_by_sigma"], scales)
        for key in BY_METHOD:
            if key in spec:
                spec[key] = kept(spec[key], methods)
        for method, paths in spec.get("checkpoints", {}).items():
            spec["checkpoints"][method] = kept(paths, scales)
    return config


#: a dataset's settings keyed by method, whose entries go with the methods a tiny overlay leaves out
BY_METHOD = ("train_by_method", "k_by_method", "ds_fine_tune", "checkpoints")


def kept(mapping: dict, keys: set[str]) -> dict:
    """The entries of ``mapping`` (keyed by σ as spelled in paths, or by method) whose key is one of ``keys``."""
    return {key: value for key, value in mapping.items() if key in keys}


class Tree(NamedTuple):
    """A tiny configuration written in a folder, with what its runs need."""

    name: str
    workdir: Path
    config: Path  # the tiny configuration, one file
    env: dict  # the environment its jobs need (the miniature data's patches)


def prepare(name: str, workdir: Path) -> Tree:
    """Write the tiny configuration of ``name`` under ``workdir``, and the data it reads that the
    workflow does not prepare itself (the paper configurations' miniature data)."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = write(workdir, merged(full_files(name))) if isinstance(CONFIGS[name], str) else {}
    return Tree(name, workdir, write_config(workdir, tiny_config(name)), env)


def run(tree: Tree, *args: str, env: dict | None = None, warm: bool = False):
    """Snakemake on the tiny tree with ``args`` (its data's environment, then ``env``, over this
    process's); with ``warm``, its jobs are forks of a server that imported torch once (tests/warm_jobs.py)."""
    return snakemake(tree.workdir, *args, config=tree.config, env={**tree.env, **(env or {})}, timeout=5400, warm=warm)


def covering_targets(tree: Tree, including: Sequence[str] = ()) -> list[str]:
    """What a tiny run makes: ``including``, then for each rule of the tree's DAG that the jobs so far
    do not run, the output that adds fewest jobs (a greedy cover of a dry run's jobs, each with every
    job before it). Every rule runs at least once, as it would in the whole DAG; its other instances,
    the same wiring at other wildcards (about a quarter of the jobs, most of them tables), are the
    full-size runs' (``make test-slow``)."""
    result = run(tree, "-n")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    jobs = dry_run_jobs(result.stdout + result.stderr)
    producer = {path: job for job in jobs for path in job.outputs}

    @functools.cache
    def upstream(job) -> frozenset:
        """The job and every job before it."""
        return frozenset({job}).union(*(upstream(producer[path]) for path in job.inputs if path in producer))

    targets = list(including)
    ran = frozenset().union(*(upstream(producer[path]) for path in including if path in producer))
    while rules_left := {job.rule for job in jobs} - {job.rule for job in ran}:
        _, target, job = min((len(upstream(job) - ran), job.output, job) for job in jobs if job.rule in rules_left)
        targets.append(target)
        ran |= upstream(job)
    return targets


def full_rules(name: str, workdir: Path) -> dict[str, int]:
    """Each rule's job count in a dry run of the full configuration ``name``, its published files and
    ImageNet folders in place (empty: what the dry run checks is there)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = merged(full_files(name))
    published_imagenet_in_place(workdir, config)
    result = snakemake(workdir, "-n", config=write_config(workdir, config))
    assert result.returncode == 0, result.stderr[-5000:]
    return job_counts(result.stdout + result.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f"Every other argument goes to Snakemake (default: {' '.join(RUN_ARGS)}).",
        allow_abbrev=False,
    )
    parser.add_argument("name", choices=sorted(CONFIGS))
    parser.add_argument("workdir", type=lambda path: Path(path).resolve(), help="a new or empty folder")
    parser.add_argument(
        "--warm", action="store_true", help="run the jobs as forks of a warm server (tests/warm_jobs.py)"
    )
    arguments, snakemake_args = parser.parse_known_args(argv)
    if arguments.workdir.exists() and any(arguments.workdir.iterdir()):
        parser.error(f"{arguments.workdir} is not empty: the tiny run writes its data and results in a new folder")
    began = time.perf_counter()
    tree = prepare(arguments.name, arguments.workdir)
    result = run(tree, *(snakemake_args or (*RUN_ARGS, *covering_targets(tree))), warm=arguments.warm)
    output = result.stdout + result.stderr
    print(output[-20000:] if result.returncode else "")
    counts = job_counts(output) if "Job stats:" in output else {}
    jobs = counts.pop("total", 0)
    seconds = time.perf_counter() - began
    print(f"tiny {arguments.name}: {jobs} jobs of {len(counts)} rules, exit {result.returncode}, {seconds:.0f} s")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
