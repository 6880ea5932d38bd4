"""Arguments and loading shared by the commands that compare certification logs side by side
(``ddrs table``, ``ddrs plot``): the logs, their labels and the common-inputs opt-in."""

from __future__ import annotations

import argparse


def add_parser(subparsers, name: str, help: str, description: str | None, label_help: str) -> argparse.ArgumentParser:
    """The parser of command ``name`` with the arguments every command comparing logs takes:
    ``LOG… --label NAME… --common-inputs``."""
    parser = subparsers.add_parser(name, help=help, description=description)
    parser.add_argument("logs", nargs="+", metavar="LOG", help="certification logs (ours or Cohen-format)")
    parser.add_argument(
        "--label",
        nargs="+",
        default=None,
        metavar="NAME",
        help=f"{label_help}; by default each log's file name, with the folders that tell same-named logs apart",
    )
    parser.add_argument(
        "--common-inputs",
        action="store_true",
        help="cut every log to the test inputs all of them certify, with a warning naming the counts (given "
        "logs that stop early); by default logs of different inputs are an error (their rows, curves and "
        "envelope would not compare)",
    )
    return parser


def load(args: argparse.Namespace):
    """The labelled logs, each with rows and all of the same test inputs (or cut to the common ones)."""
    from ddrs.analysis.loading import labelled_frames
    from ddrs.analysis.log_record import labelled_logs

    return labelled_frames(labelled_logs(args.logs, args.label), common_inputs=args.common_inputs)
