"""``ddrs plot``: certified accuracy vs radius of any certification logs, with their envelope and
exact Clopper–Pearson bands."""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plot",
        help="plot certified accuracy vs radius of certification logs (PNG and PDF)",
        description=__doc__,
    )
    parser.add_argument("logs", nargs="+", metavar="LOG", help="certification logs (ours or Cohen-format)")
    parser.add_argument("--label", nargs="+", default=None, metavar="NAME", help="one legend entry per log")
    parser.add_argument("--norm", type=int, choices=[1, 2], default=2, help="ℓp norm of the radii (axis label)")
    parser.add_argument("--title", default=None, help="figure title")
    parser.add_argument("--alpha", type=float, default=0.05, help="bands are 1 - ALPHA Clopper-Pearson intervals")
    parser.add_argument("--no-bands", action="store_true", help="draw the curves without interval bands")
    parser.add_argument(
        "--common-inputs",
        action="store_true",
        help="cut every log to the test inputs all of them certify, with a warning naming the counts; "
        "by default logs of different inputs are an error (their curves and envelope would not compare)",
    )
    parser.add_argument("--out", required=True, help="curves.png to write (and curves.pdf beside it)")
    parser.set_defaults(run=run, compute="numpy")


def run(args: argparse.Namespace) -> None:
    from ddrs.analysis.loading import labelled_frames
    from ddrs.analysis.plots import curves_figure, save_figure
    from ddrs.analysis.records import labelled_logs

    if not 0 < args.alpha < 1:
        raise ValueError(f"--alpha must be in (0, 1), got {args.alpha}")
    alpha = None if args.no_bands else args.alpha
    logs = labelled_frames(labelled_logs(args.logs, args.label), common_inputs=args.common_inputs)
    figure = curves_figure(logs, norm=args.norm, title=args.title, alpha=alpha)
    for path in save_figure(figure, args.out):
        print(path)
