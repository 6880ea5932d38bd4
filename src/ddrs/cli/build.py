"""``ddrs build``: one step of the workflow that certifies nothing, from the workflow's config.

A table or figure of the catalogue (:func:`ddrs.pipeline.build.build`) or a published-logs step (a
repository's fetch, a leaderboard dataset's logs read once: :mod:`ddrs.pipeline.published_steps`),
each with its provenance record. The rule is named with its wildcards; the config, the workflow's
as Snakemake validated it, arrives as JSON (``--config -``: on standard input), and the step's
inputs, outputs and arguments are computed from it as the rule computed them
(:func:`ddrs.pipeline.build.run_step`). Its rules are shell rules: Snakemake's record of their code
is their command's text, not an adapter script's modification time, which a checkout changes
without changing a byte.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "build", help="run one table, figure or published-logs step of the workflow", description=__doc__
    )
    parser.add_argument("rule", metavar="RULE", help="the workflow's rule: a catalogue entry or a published-logs step")
    parser.add_argument("--wildcards", default="{}", help="the rule's wildcards, a JSON object")
    parser.add_argument("--config", required=True, metavar="FILE", help="the workflow's config as JSON (- for stdin)")
    parser.set_defaults(run=run, compute="numpy")


def run(args: argparse.Namespace) -> None:
    from ddrs.pipeline import Experiment
    from ddrs.pipeline.build import run_step

    if args.config == "-":
        config = json.load(sys.stdin)
    else:
        with open(args.config) as handle:
            config = json.load(handle)
    run_step(Experiment(config), args.rule, json.loads(args.wildcards))
