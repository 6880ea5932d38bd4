"""``ddrs provenance``: which outputs of a results tree are not what the config asks.

Every model, log, table and figure the workflow writes has a record beside it,
``<output>.provenance.json``: the digest of its job's identity (what Snakemake compares to decide a
re-run), the digests of its own bytes and of the files its job read, and the ``ddrs`` version and git
commit that made it (:mod:`ddrs.pipeline.provenance`).
This command recomputes every identity from the config (``--configfile``, merged in order as
Snakemake merges them) and names each output whose record differs, was made by other code, was made
from such an output, or has no record ("unknown provenance": a tree made before records existed, or
a file put in place by hand). A record also names by SHA-256 its output and every file its job read,
so the command names an output whose bytes changed since its job wrote them (edited, copied over),
one made from a file that changed since (a re-made model, a changed data split), and everything made
from either. Files outside RESULTS (the data split, published files) are read where the jobs read
them, from the working directory. Each file is hashed at most once, and not at all while its size
and mtime are those its record holds. It exits 1 when it names any, 0 when the tree is the config's.
"""

from __future__ import annotations

import argparse
import sys


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
    parser.set_defaults(run=run, compute=None)


def run(args: argparse.Namespace) -> None:
    from ddrs.pipeline import Experiment
    from ddrs.pipeline.job_plan import JobPlan
    from ddrs.pipeline.provenance import check_tree, load_config

    config = load_config(args.configfile, args.schema)
    exp = Experiment(config)
    findings = list(check_tree(exp, JobPlan(exp.grid), args.results))
    for finding in findings:
        print(f"{finding.path}: {finding.why}")
    if findings:
        print(
            f"ddrs provenance: {len(findings)} outputs of {args.results} are not what the config asks", file=sys.stderr
        )
        sys.exit(1)
    print(f"ddrs provenance: every output of {args.results} is what the config asks")
