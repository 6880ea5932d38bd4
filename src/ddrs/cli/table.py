"""``ddrs table``: certified accuracy per radius and ACR of any certification logs, and their envelope.

Every cell has its 95% interval (exact Clopper–Pearson for certified accuracy, seeded paired
bootstrap for ACR); the envelope row has both ACR conventions (per log and per input best).
"""

from __future__ import annotations

import argparse

from ddrs.cli import _compared_logs as compared_logs

#: the command's line in ``ddrs --help``
COMMAND_HELP = "tabulate certified accuracy (%%) per radius and ACR of certification logs"


def add_parser(subparsers) -> None:
    parser = compared_logs.add_parser(subparsers, "table", COMMAND_HELP, __doc__, label_help="one row name per log")
    parser.add_argument(
        "--radii",
        nargs="+",
        type=float,
        default=None,
        metavar="R",
        help="radii of the columns (default: the paper's CIFAR-10 grid 0, 0.25, ..., 2.5)",
    )
    parser.add_argument("--decimals", type=int, default=1, help="decimals of the percentages in .md/.tex")
    parser.add_argument("--alpha", type=float, default=0.05, help="interval level 1 - ALPHA, and the bold test's level")
    parser.add_argument("--seed", type=int, default=0, help="seed of the ACR bootstrap and permutation test")
    parser.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples of the ACR intervals")
    parser.add_argument(
        "--bold",
        action="store_true",
        help="bold the cells no other log beats significantly (exact McNemar per radius, paired sign-flip "
        "permutation test for ACR, Holm over every pair of logs and column; the envelope is never tested)",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="NAME",
        help="also compare every log with this one (a label or file stem): paired McNemar per radius, "
        "bootstrap ACR differences with a sign-flip permutation test, Holm over every comparison and "
        "column, written to <out>_comparisons.csv/.md/.tex",
    )
    parser.add_argument("--out", required=True, help="table.csv to write (.md and .tex beside it)")
    parser.set_defaults(run=run, compute="numpy")


def run(args: argparse.Namespace) -> None:
    from ddrs.analysis import RADII_CIFAR10, log_table, to_markdown, write_table
    from ddrs.analysis.stats import Inference

    radii = list(RADII_CIFAR10) if args.radii is None else args.radii
    inference = Inference(alpha=args.alpha, n_boot=args.n_boot, seed=args.seed)
    logs = compared_logs.load(args)
    result = log_table(logs, radii, inference=inference)
    write_table(result.table, args.out, decimals=args.decimals, bold=args.bold)
    print(to_markdown(result.table, decimals=args.decimals, bold=args.bold), end="")
    if args.baseline is not None:
        from pathlib import Path

        from ddrs.analysis.comparisons import log_comparisons_table
        from ddrs.analysis.render import comparisons_caption

        comparisons = log_comparisons_table(logs, radii, baseline=args.baseline, inference=inference)
        out = Path(args.out)
        caption = comparisons_caption(args.alpha)
        write_table(comparisons, out.with_name(f"{out.stem}_comparisons.csv"), caption=caption, decimals=args.decimals)
        print("\n" + to_markdown(comparisons, caption=caption, decimals=args.decimals), end="")
