"""``ddrs show``: print a results table in the terminal, as its Markdown file renders it.

Every table the workflow writes is ``x.csv`` (full precision, every column: the file to read in
code) with ``x.md`` and ``x.tex`` beside it (rounded, under their caption). This prints the path of
each, then the CSV's rows as a Markdown table whose headers are the CSV's column names, each
metric cell ``value [low, high]`` (its 95% interval). ``--radii`` keeps some radius columns (the
README shows five of table1's eleven); a dataset column of one value is named above the table.
No cell is bold: which cells the significance tests bold is in ``x.md``.
"""

from __future__ import annotations

import argparse

#: the command's line in ``ddrs --help``
COMMAND_HELP = "print a results table (its CSV) as a Markdown table, with the paths of its renderings"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("show", help=COMMAND_HELP, description=__doc__)
    parser.add_argument("table", metavar="TABLE.csv", help="a table the workflow wrote (results/tables/*.csv)")
    parser.add_argument(
        "--radii", nargs="+", type=float, default=None, metavar="R", help="radius columns to show (default: all)"
    )
    parser.add_argument("--decimals", type=int, default=1, help="decimals of the percentages")
    parser.set_defaults(run=run, compute="numpy", work_line=False)  # the table is the last line


def run(args: argparse.Namespace) -> None:
    from pathlib import Path

    import pandas as pd

    from ddrs.analysis.render import to_markdown, view

    path = Path(args.table)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such table (the workflow writes them under results/tables/)")
    table, dataset = view(pd.read_csv(path, keep_default_na=False, na_values=[""]), args.radii)
    renderings = [str(path.with_suffix(suffix)) for suffix in (".md", ".tex") if path.with_suffix(suffix).exists()]
    beside = f"; with its caption in {' and '.join(renderings)}" if renderings else ""
    print(f"{path}{f' ({dataset})' if dataset else ''}{beside}\n")
    print(to_markdown(table, decimals=args.decimals, bold=False), end="")
