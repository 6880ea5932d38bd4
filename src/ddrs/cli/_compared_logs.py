"""Arguments and loading shared by the commands that compare certification logs side by side
(``ddrs table``, ``ddrs plot``): the logs, their labels and the common-inputs opt-in."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser, label_help: str) -> None:
    """``LOG… --label NAME… --common-inputs``."""
    parser.add_argument("logs", nargs="+", metavar="LOG", help="certification logs (ours or Cohen-format)")
    parser.add_argument("--label", nargs="+", default=None, metavar="NAME", help=label_help)
    parser.add_argument(
        "--common-inputs",
        action="store_true",
        help="cut every log to the test inputs all of them certify, with a warning naming the counts (given "
        "logs that stop early); by default logs of different inputs are an error (their rows, curves and "
        "envelope would not compare)",
    )


def load(args: argparse.Namespace):
    """The labelled logs, each with rows and all of the same test inputs (or cut to the common ones)."""
    from ddrs.analysis.loading import labelled_frames
    from ddrs.analysis.records import labelled_logs

    return labelled_frames(labelled_logs(args.logs, args.label), common_inputs=args.common_inputs)
