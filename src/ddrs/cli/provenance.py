"""``ddrs provenance``: which outputs of a results tree are not what the config asks.

Every model, log, table and figure the workflow writes, and the published logs' manifests and
entries, has a record beside it, ``<output>.provenance.json``: the digest of its job's identity
(what Snakemake compares to decide a re-run), the output's own path and SHA-256, those of the files
its job read (a user's own log, the cached published logs a manifest vouches for), and the ``ddrs``
version and git commit that made it (:mod:`ddrs.pipeline.provenance`).
This command recomputes every identity from the config (``--configfile``, merged in order as
Snakemake merges them) and names each output whose record differs (stale), was made by other code,
was written for another path (swapped, copied or moved with its record), has bytes other than
those its job wrote, was made from a file whose bytes changed since (a re-made model, a changed data
split, a replaced own log, an edited cached log) or from such an output, or has no record or a file
that is not one ("unknown provenance"). Every file is hashed, each once. It exits 1 when it names
any, 0 when the tree is the config's, and 2 with one line when RESULTS is no folder or holds no record.

As Snakemake's, ``-d DIR`` is the working directory the tree was made in (``snakemake -d DIR``):
RESULTS and the paths records name (the data split, the published cache, a user's own logs) are
read from there; ``--configfile`` and ``--schema`` are read from where the command runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "provenance", help="list the outputs of a results tree that are not what the config asks", description=__doc__
    )
    parser.add_argument(
        "results",
        metavar="RESULTS",
        help="where the results tree lies (the config's `results`, as its jobs spelled it, or a copy elsewhere)",
    )
    parser.add_argument(
        "--configfile", nargs="+", default=["config/config.yaml"], metavar="FILE", help="the workflow's config file(s)"
    )
    parser.add_argument("--schema", default="config/schema/config.schema.yaml", help="the config schema")
    parser.add_argument(
        "-d",
        "--directory",
        metavar="DIR",
        default=None,
        help="the working directory the tree was made in, as snakemake's -d (default: here)",
    )
    parser.set_defaults(run=run, compute=None)


def run(args: argparse.Namespace) -> None:
    from ddrs.pipeline import Experiment
    from ddrs.pipeline.job_plan import JobPlan
    from ddrs.pipeline.provenance import check_tree, load_config

    config = load_config([Path(path).resolve() for path in args.configfile], Path(args.schema).resolve())
    if args.directory is not None:
        if not Path(args.directory).is_dir():
            raise ValueError(f"-d {args.directory}: no such folder (the working directory the tree was made in)")
        os.chdir(args.directory)
    exp = Experiment(config)
    findings = list(check_tree(exp, JobPlan(exp.grid), args.results))
    for finding in findings:
        print(f"{finding.path}: {finding.why}")
    if findings:
        unknown = sum(finding.unknown for finding in findings)
        of_which = f" ({unknown} of unknown provenance)" if unknown else ""
        print(
            f"ddrs provenance: {len(findings)} outputs of {args.results} are not what the config asks{of_which}",
            file=sys.stderr,
        )
        sys.exit(1)
    print(f"ddrs provenance: every output of {args.results} is what the config asks")
