"""``ddrs plot``: certified accuracy vs radius of any certification logs, with their envelope and
exact Clopper–Pearson bands."""

from __future__ import annotations

import argparse

from ddrs.cli import _compared_logs as compared_logs

#: the command's line in ``ddrs --help``
COMMAND_HELP = "plot certified accuracy vs radius of certification logs (PNG and PDF)"


def add_parser(subparsers) -> None:
    parser = compared_logs.add_parser(subparsers, "plot", COMMAND_HELP, __doc__, label_help="one legend entry per log")
    parser.add_argument("--norm", type=int, choices=[1, 2], default=2, help="ℓp norm of the radii (axis label)")
    parser.add_argument("--title", default=None, help="figure title")
    parser.add_argument("--alpha", type=float, default=0.05, help="bands are 1 - ALPHA Clopper-Pearson intervals")
    parser.add_argument("--no-bands", action="store_true", help="draw the curves without interval bands")
    parser.add_argument("--out", required=True, help="curves.png to write (and curves.pdf beside it)")
    parser.set_defaults(run=run, compute="numpy")


def run(args: argparse.Namespace) -> None:
    from ddrs.analysis.plots import curves_figure, save_figure

    if not 0 < args.alpha < 1:
        raise ValueError(f"--alpha must be in (0, 1), got {args.alpha}")
    alpha = None if args.no_bands else args.alpha
    logs = compared_logs.load(args)
    figure = curves_figure(logs, norm=args.norm, title=args.title, alpha=alpha)
    for path in save_figure(figure, args.out):
        print(path)
